//! # bitonic
//!
//! Sorting with bitonic sorting networks on NVIDIA GPUs (CUDA kernels compiled at run time by
//! NVRTC, so no CUDA toolkit is needed to build) and on the CPU, for `u32`, `i32`, `u64`,
//! `i64`, `f32`, `f64`, `f16` and `bf16` keys of any length, ascending or descending: whole
//! arrays, rows of a matrix, segments, stable argsorts, key-value sorts and top-k selections,
//! on host slices or on keys already on the GPU. The 16-bit floats are the [`half`] crate's,
//! re-exported here.
//!
//! ```
//! let mut keys = vec![3.5f32, -1.0, f32::NAN, 0.0, -0.0, f32::NEG_INFINITY];
//! bitonic::sort(&mut keys)?; // the GPU when one works and the input is large, else the CPU
//! assert_eq!(keys[0], f32::NEG_INFINITY);
//! assert!(keys[5].is_nan());
//!
//! let mut ids = vec![10u64, 30, 20];
//! bitonic::Sorter::new().order(bitonic::Order::Descending).sort(&mut ids)?;
//! assert_eq!(ids, [30, 20, 10]);
//! # Ok::<(), bitonic::Error>(())
//! ```
//!
//! Floats sort in IEEE 754 total order: `-NaN < -inf < … < -0.0 < +0.0 < … < +inf < +NaN`, the
//! order of [`f32::total_cmp`]; or, asked ([`FloatOrder::Numeric`]), in the order of
//! `torch.sort` and `numpy.sort`: by value, every NaN last.
//!
//! ```
//! use bitonic::{half::f16, Order, Sorter};
//! let logits: Vec<f16> = [0.5, -2.0, 3.25, 1.0].into_iter().map(f16::from_f32).collect();
//! let (mut values, mut indices) = (vec![f16::ZERO; 2], vec![0i64; 2]);
//! Sorter::new().order(Order::Descending).topk(&logits, &mut values, &mut indices, 2)?;
//! assert_eq!((values[0].to_f32(), indices), (3.25, vec![2, 3]));
//! # Ok::<(), bitonic::Error>(())
//! ```
//!
//! A [`Sorter`] chooses the backend, the GPU and its stream, the [`Version`] (the report's
//! V0–V5, or the tuned default), the [`Order`], the [`FloatOrder`] and the tuning
//! ([`Policy`]); every call returns the [`Plan`] it ran:
//!
//! ```
//! use bitonic::{Backend, Order, Sorter, Strategy};
//! let mut v: Vec<i32> = (0..1000).map(|i| (i * 7919) % 1013 - 500).collect();
//! let plan = Sorter::new().backend(Backend::Cpu).order(Order::Descending).sort(&mut v)?;
//! assert!(v.windows(2).all(|w| w[0] >= w[1]));
//! assert_eq!(plan.strategy, Strategy::CpuSort);
//! # Ok::<(), bitonic::Error>(())
//! ```
//!
//! **What runs.** [`plan::plan`] decides, as a pure function of the request, the device's
//! facts and the [`Policy`]; docs/architecture.md draws the layers and docs/design/ explains
//! each algorithm. Without a GPU, [`Backend::Auto`] uses the fastest CPU sort; the bitonic
//! network on the CPU stays available by name ([`Backend::CpuNetwork`],
//! [`Backend::CpuNetworkSerial`]) as the report's baseline.
//!
//! **Stability.** A bitonic network is not stable by itself. Argsorts, key-value sorts and
//! top-k selections are: equal keys are told apart by their original index, so they keep their
//! index order, in both orders, on every backend.
//!
//! **Device buffers and streams.** Keys already on the GPU are cudarc's
//! [`cudarc::driver::CudaSlice`] (re-exported: [`cudarc`]), allocated in the context of the
//! sorter's [`Gpu`] ([`Gpu::context`]); the `*_device` calls of [`Sorter`] sort them in place,
//! queued on the sorter's stream ([`Sorter::stream`]: the caller's, or the GPU's own) with no
//! synchronisation, and with a [`DeviceWorkspace`] they allocate nothing, so they can be
//! captured into CUDA graphs.
//!
//! **Environment.** The library reads one variable: `BITONIC_CACHE_DIR`, the folder of compiled
//! kernels (see [`cuda::compile_all`]), and changes no process-wide setting unless asked
//! ([`Gpu::keep_freed_memory`]).

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod cpu;
pub mod cuda;
mod device;
mod error;
mod kernels;
pub mod key;
pub mod multi;
mod network;
mod options;
pub mod plan;
pub mod policy;
pub mod sample;
mod sorter;

pub use cuda::Gpu;
/// The CUDA bindings the library's public API speaks in (device buffers, streams, contexts),
/// re-exported so that a program needs no second pin of them.
pub use cudarc;
pub use device::{parse_arch, DeviceFacts, DeviceInfo};
pub use error::{Error, GpuUnavailable, Result};
/// The `half` crate, whose [`half::f16`] and [`half::bf16`] are key types.
pub use half;
pub use key::{DType, SortIndex, SortKey};
pub use options::{Backend, FloatOrder, Order, UnknownName, Version};
pub use plan::{Plan, Strategy};
pub use policy::Policy;
pub use sorter::{DeviceWorkspace, Sorter};

/// Sorts `keys` ascending on the best available backend ([`Sorter::sort`]).
///
/// ```
/// let mut keys = vec![3i64, -1, 2];
/// bitonic::sort(&mut keys)?;
/// assert_eq!(keys, [-1, 2, 3]);
/// # Ok::<(), bitonic::Error>(())
/// ```
pub fn sort<K: SortKey>(keys: &mut [K]) -> Result<Plan> {
    Sorter::new().sort(keys)
}

/// Writes the stable ascending argsort of `keys` to `indices` ([`Sorter::argsort`]).
///
/// ```
/// let mut order = vec![0usize; 3];
/// bitonic::argsort(&[20u32, 10, 20], &mut order)?;
/// assert_eq!(order, [1, 0, 2]);
/// # Ok::<(), bitonic::Error>(())
/// ```
pub fn argsort<K: SortKey, I: SortIndex>(keys: &[K], indices: &mut [I]) -> Result<Plan> {
    Sorter::new().argsort(keys, indices)
}

/// Sorts `keys` ascending and moves `values` with them, stably ([`Sorter::sort_pairs`]).
///
/// ```
/// let mut scores = vec![0.9f32, 0.1, 0.5];
/// let mut ids = vec![10u32, 20, 30];
/// bitonic::sort_pairs(&mut scores, &mut ids)?;
/// assert_eq!(ids, [20, 30, 10]);
/// # Ok::<(), bitonic::Error>(())
/// ```
pub fn sort_pairs<K: SortKey, V: bytemuck::Pod + Send + Sync>(
    keys: &mut [K],
    values: &mut [V],
) -> Result<Plan> {
    Sorter::new().sort_pairs(keys, values)
}

/// Writes the `k` largest keys of `keys`, largest first, to `values` and their indices to
/// `indices` (`k` of each): the first `k` of a stable descending sort, as `torch.topk`
/// selects ([`Sorter::topk`] selects the smallest too, by its [`Order`]).
///
/// ```
/// let (mut values, mut indices) = (vec![0u64; 2], vec![0usize; 2]);
/// bitonic::topk(&[4u64, 9, 4, 1], &mut values, &mut indices, 2)?;
/// assert_eq!((values, indices), (vec![9, 4], vec![1, 0]));
/// # Ok::<(), bitonic::Error>(())
/// ```
pub fn topk<K: SortKey, I: SortIndex>(
    keys: &[K],
    values: &mut [K],
    indices: &mut [I],
    k: usize,
) -> Result<Plan> {
    Sorter::new()
        .order(Order::Descending)
        .topk(keys, values, indices, k)
}
