//! # bitonic
//!
//! Sorting with bitonic sorting networks on NVIDIA GPUs (CUDA, kernels compiled at run time
//! by NVRTC) and on the CPU (serial and rayon-parallel), for `u32`, `i32`, `u64`, `i64`,
//! `f32` and `f64` keys of any length, ascending or descending.
//!
//! ```
//! let mut keys = vec![3.5f32, -1.0, f32::NAN, 0.0, -0.0, f32::NEG_INFINITY];
//! bitonic::sort(&mut keys).unwrap(); // GPU when one works, else CPU
//! assert_eq!(keys[0], f32::NEG_INFINITY);
//! assert!(keys[5].is_nan());
//!
//! let mut ids = vec![10u64, 30, 20];
//! bitonic::sort_desc(&mut ids).unwrap();
//! assert_eq!(ids, [30, 20, 10]);
//! ```
//!
//! Floats sort in IEEE 754 total order (see [`key`]): `-NaN < -inf < … < -0.0 < +0.0 < … <
//! +inf < +NaN`, the order of [`f32::total_cmp`].
//!
//! Choose backend, GPU algorithm version and order with a [`Sorter`]:
//!
//! ```
//! use bitonic::{Backend, Order, Sorter};
//! let mut v: Vec<i32> = (0..1000).map(|i| (i * 7919) % 1013 - 500).collect();
//! let ran = Sorter::new().backend(Backend::Cpu).order(Order::Descending).sort(&mut v).unwrap();
//! assert!(v.windows(2).all(|w| w[0] >= w[1]));
//! assert_eq!(ran.backend, Backend::Cpu);
//! ```

pub mod cpu;
pub mod cuda;
mod error;
pub mod key;
mod kv;
pub mod multi;
pub mod network;

pub use error::{Error, GpuUnavailable, Result};
pub use key::{DType, SortKey};

/// Sort direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Order {
    #[default]
    Ascending,
    Descending,
}

/// Where a sort runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The GPU when one works and the input has at least [`AUTO_GPU_MIN_LEN`] keys, else `Cpu`.
    #[default]
    Auto,
    /// The network on all CPU cores (rayon).
    Cpu,
    /// The network on one CPU core: the reference, and the report's serial baseline.
    CpuSerial,
    /// The GPU, with the chosen [`Version`]; an error when no GPU works.
    Cuda,
}

/// Below this many keys `Backend::Auto` stays on the CPU: copying to and from the GPU and
/// launching kernels costs more than sorting there.
pub const AUTO_GPU_MIN_LEN: usize = 1 << 16;

/// The GPU algorithm: the report's six versions, each adding one idea to the one before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Version {
    /// One thread per key, global memory, one launch per network step.
    V0,
    /// The steps inside a block fused into one launch with `__syncthreads()` (global memory).
    V1,
    /// V1 with the block's tile in shared memory.
    V2,
    /// V2 with warp shuffles for strides below 32.
    V3,
    /// Half as many threads: one per compare-exchange.
    V4,
    /// V4 with the 2-way shared-memory bank conflict removed.
    V5,
    /// Beyond the report: multi-step passes over shared-memory tiles with the keys in
    /// registers, the key map fused in. The default. See `docs/notes/tuned.md`.
    #[default]
    Tuned,
}

impl Version {
    pub const ALL: [Version; 7] = [
        Version::V0,
        Version::V1,
        Version::V2,
        Version::V3,
        Version::V4,
        Version::V5,
        Version::Tuned,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Version::V0 => "v0",
            Version::V1 => "v1",
            Version::V2 => "v2",
            Version::V3 => "v3",
            Version::V4 => "v4",
            Version::V5 => "v5",
            Version::Tuned => "tuned",
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a [`Sorter::sort`] call actually did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ran {
    /// `Cpu`, `CpuSerial` or `Cuda`, never `Auto`.
    pub backend: Backend,
    /// The GPU version, when the GPU ran.
    pub version: Option<Version>,
}

/// Sort options: backend, GPU version and order. Cheap to copy; build one per call or keep it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sorter {
    pub backend: Backend,
    pub version: Version,
    pub order: Order,
}

impl Sorter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    pub fn version(mut self, version: Version) -> Self {
        self.version = version;
        self
    }

    pub fn order(mut self, order: Order) -> Self {
        self.order = order;
        self
    }

    /// The backend this sorter would use for `len` keys (probing the GPU once per process).
    pub fn resolve_backend(&self, len: usize) -> Result<Backend> {
        Ok(match self.backend {
            Backend::Auto if len >= AUTO_GPU_MIN_LEN && cuda::Gpu::get().is_ok() => Backend::Cuda,
            Backend::Auto => Backend::Cpu,
            Backend::Cuda => {
                cuda::Gpu::get()?;
                Backend::Cuda
            }
            other => other,
        })
    }

    /// Sorts `keys` in place. On error the slice holds the same keys, possibly reordered.
    pub fn sort<K: SortKey>(&self, keys: &mut [K]) -> Result<Ran> {
        let backend = self.resolve_backend(keys.len())?;
        match backend {
            Backend::Cuda => {
                cuda::Gpu::get()?.sort_host(keys, self.version, self.order)?;
                Ok(Ran {
                    backend,
                    version: Some(self.version),
                })
            }
            Backend::CpuSerial | Backend::Cpu | Backend::Auto => {
                sort_on_cpu(keys, self.order, backend == Backend::CpuSerial);
                Ok(Ran {
                    backend,
                    version: None,
                })
            }
        }
    }
}

/// Maps keys to ordered bits in place, runs the CPU network, maps back.
pub(crate) fn sort_on_cpu<K: SortKey>(keys: &mut [K], order: Order, serial: bool) {
    let bits: &mut [K::Bits] = bytemuck::cast_slice_mut(keys);
    let needs_map = K::DTYPE.needs_map(order);
    if needs_map {
        for_each_word(bits, serial, |b| {
            *b = key::ordered_bits(bytemuck::cast::<_, K>(*b), order)
        });
    }
    if serial {
        cpu::sort_serial(bits);
    } else {
        cpu::sort_parallel(bits);
    }
    if needs_map {
        for_each_word(bits, serial, |b| {
            *b = bytemuck::cast(key::key_from_ordered_bits::<K>(*b, order))
        });
    }
}

fn for_each_word<B: Send, F: Fn(&mut B) + Sync + Send>(words: &mut [B], serial: bool, f: F) {
    use rayon::prelude::*;
    if serial {
        words.iter_mut().for_each(f)
    } else {
        words.par_iter_mut().for_each(f)
    }
}

/// Sorts ascending on the best available backend.
pub fn sort<K: SortKey>(keys: &mut [K]) -> Result<()> {
    Sorter::new().sort(keys).map(|_| ())
}

/// Sorts descending on the best available backend.
pub fn sort_desc<K: SortKey>(keys: &mut [K]) -> Result<()> {
    Sorter::new()
        .order(Order::Descending)
        .sort(keys)
        .map(|_| ())
}
