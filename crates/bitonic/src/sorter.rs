//! [`Sorter`]: the options of a sort (backend, device, GPU version, order, tuning) and every
//! sorting call, on host slices and on device buffers. Each call asks
//! [`crate::dispatch::choose`] what runs, runs it on the CPU backend (src/cpu) or the CUDA
//! backend (src/cuda/run.rs), and reports it in a [`Ran`].

use crate::cuda::run::{self, Target};
use crate::cuda::words::{self, DeviceWords, Word};
use crate::cuda::{self, transfer, Gpu};
use crate::dispatch::{self, Layout, Operation, Request, Strategy};
use crate::error::{check_same_len, CudaContext as _, Error, GpuUnavailable, Result};
use crate::policy::Policy;
use crate::{cpu, DType, SortKey};
use cudarc::driver::{CudaSlice, CudaViewMut, DeviceRepr};
use rayon::prelude::*;

/// Sort direction.
///
/// ```
/// let mut keys = vec![1i32, -4, 3];
/// bitonic::Sorter::new().order(bitonic::Order::Descending).sort(&mut keys)?;
/// assert_eq!(keys, [3, 1, -4]);
/// # Ok::<(), bitonic::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Order {
    /// Smallest first.
    #[default]
    Ascending,
    /// Largest first.
    Descending,
}

/// Which keys a top-k selection keeps ([`Sorter::topk`]).
///
/// ```
/// use bitonic::Select;
/// let (mut values, mut indices) = (vec![0i32; 2], vec![0u32; 2]);
/// bitonic::topk(&[5, -3, 9, 0], 2, Select::Smallest, &mut values, &mut indices)?;
/// assert_eq!((values, indices), (vec![-3, 0], vec![1, 3]));
/// assert_eq!("largest".parse::<Select>()?, Select::Largest);
/// # Ok::<(), bitonic::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Select {
    /// The largest keys, largest first.
    #[default]
    Largest,
    /// The smallest keys, smallest first.
    Smallest,
}

impl Select {
    /// Both selections.
    pub const ALL: [Select; 2] = [Select::Largest, Select::Smallest];

    /// `largest` or `smallest`.
    pub fn name(self) -> &'static str {
        match self {
            Select::Largest => "largest",
            Select::Smallest => "smallest",
        }
    }

    /// The order of the sort whose first keys the selection keeps: descending for the
    /// largest keys.
    pub fn order(self) -> Order {
        match self {
            Select::Largest => Order::Descending,
            Select::Smallest => Order::Ascending,
        }
    }
}

/// Where a sort runs.
///
/// ```
/// use bitonic::{Backend, Sorter, Strategy};
/// let mut keys = vec![5u64, 3, 9];
/// let ran = Sorter::new().backend(Backend::CpuNetworkSerial).sort(&mut keys)?;
/// assert_eq!((keys, ran.strategy), (vec![3, 5, 9], Strategy::CpuNetworkSerial));
/// assert_eq!("cpu-network".parse::<Backend>()?, Backend::CpuNetwork);
/// # Ok::<(), bitonic::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The GPU when one works and the input has at least [`dispatch::AUTO_GPU_MIN_LEN`] keys
    /// (or a [`Version`] is pinned), else `Cpu`.
    #[default]
    Auto,
    /// The fastest CPU sort: the standard library's sort of the keys' ordered words, on all
    /// cores (rayon).
    Cpu,
    /// The bitonic network on all CPU cores (rayon).
    CpuNetwork,
    /// The bitonic network on one CPU core: the reference, and the report's serial baseline.
    CpuNetworkSerial,
    /// The GPU; an error saying why when no GPU works.
    Cuda,
}

impl Backend {
    /// Every backend, for choosers and command lines.
    pub const ALL: [Backend; 5] = [
        Backend::Auto,
        Backend::Cpu,
        Backend::CpuNetwork,
        Backend::CpuNetworkSerial,
        Backend::Cuda,
    ];

    /// The backend's name on the command line: `auto`, `cpu`, `cpu-network`,
    /// `cpu-network-serial`, `cuda`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Auto => "auto",
            Backend::Cpu => "cpu",
            Backend::CpuNetwork => "cpu-network",
            Backend::CpuNetworkSerial => "cpu-network-serial",
            Backend::Cuda => "cuda",
        }
    }
}

/// The GPU algorithm: the report's six versions, each adding one idea to the one before, and
/// the tuned version beyond them.
///
/// ```
/// use bitonic::{Backend, Sorter, Version};
/// assert_eq!("v3".parse::<Version>()?, Version::V3);
/// // A version is for the GPU: on a CPU backend it is refused, not ignored.
/// let refused = Sorter::new().backend(Backend::Cpu).version(Version::V3).sort(&mut [2u32, 1]);
/// assert!(refused.is_err());
/// # Ok::<(), bitonic::Error>(())
/// ```
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
    /// registers and the key map fused in, and past a few million keys a merge sort of tile
    /// sorts. The default; the only version of rows, segments, argsorts and key-value sorts.
    #[default]
    Tuned,
}

impl Version {
    /// Every version, in the report's order.
    pub const ALL: [Version; 7] = [
        Version::V0,
        Version::V1,
        Version::V2,
        Version::V3,
        Version::V4,
        Version::V5,
        Version::Tuned,
    ];

    /// `v0` … `v5`, `tuned`.
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

macro_rules! display_and_parse_by_name {
    ($($t:ty),*) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $t {
            type Err = Error;
            fn from_str(name: &str) -> Result<Self> {
                <$t>::ALL
                    .into_iter()
                    .find(|x| x.name() == name)
                    .ok_or_else(|| Error::UnknownName {
                        what: stringify!($t),
                        name: name.to_string(),
                        choices: <$t>::ALL.iter().map(|x| x.name()).collect::<Vec<_>>().join(", "),
                    })
            }
        }
    )*};
}

display_and_parse_by_name!(Backend, Version, DType, Select);

/// What a sort ran: every sorting call returns one.
///
/// ```
/// use bitonic::{Backend, Sorter, Strategy};
/// let mut keys = vec![2.0f64, -1.0];
/// let ran = Sorter::new().backend(Backend::Cpu).sort(&mut keys)?;
/// assert_eq!(ran.backend, Backend::Cpu);
/// assert!(!ran.strategy.on_gpu());
/// # Ok::<(), bitonic::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ran {
    /// `Cpu`, `CpuNetwork`, `CpuNetworkSerial` or `Cuda`, never `Auto`.
    pub backend: Backend,
    /// The algorithm ([`dispatch::choose`] says which runs for which input).
    pub strategy: Strategy,
}

/// An integer type that argsort indices are written in: `u32`, `u64` or `usize`. Indices
/// count from each row's start; a row longer than the type can count is an error
/// ([`Error::IndexTooNarrow`]), the same rule for one array and for rows.
///
/// ```
/// let keys = [30u32, 10, 20];
/// let (mut narrow, mut wide) = (vec![0u32; 3], vec![0usize; 3]);
/// bitonic::argsort(&keys, &mut narrow)?;
/// bitonic::argsort(&keys, &mut wide)?;
/// assert_eq!((narrow, wide), (vec![1, 2, 0], vec![1, 2, 0]));
/// # Ok::<(), bitonic::Error>(())
/// ```
pub trait SortIndex: Copy + Send + Sync + 'static {
    /// The largest index the type holds.
    const MAX: usize;
    /// `i`, which is at most [`SortIndex::MAX`].
    fn from_usize(i: usize) -> Self;
}

macro_rules! sort_index {
    ($($t:ty),*) => {$(
        impl SortIndex for $t {
            const MAX: usize = if (<$t>::MAX as u128) < usize::MAX as u128 {
                <$t>::MAX as usize
            } else {
                usize::MAX
            };
            fn from_usize(i: usize) -> Self {
                i as $t
            }
        }
    )*};
}

sort_index!(u32, u64, usize);

/// The options of a sort and the sorting calls. Cheap to copy; build one per call or keep it.
///
/// ```
/// use bitonic::{Backend, Order, Sorter, Strategy};
/// let mut v: Vec<i32> = (0..1000).map(|i| (i * 7919) % 1013 - 500).collect();
/// let ran = Sorter::new()
///     .backend(Backend::Cpu)
///     .order(Order::Descending)
///     .sort(&mut v)
///     .unwrap();
/// assert!(v.windows(2).all(|w| w[0] >= w[1]));
/// assert_eq!((ran.backend, ran.strategy), (Backend::Cpu, Strategy::CpuSort));
/// ```
///
/// A GPU of your choice, with its own stream ([`Gpu::new`]):
///
/// ```no_run
/// let gpu = bitonic::Gpu::new(1)?; // the second GPU
/// let mut keys = vec![3u64, 1, 2];
/// bitonic::Sorter::new().gpu(&gpu).sort(&mut keys)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Sorter<'g> {
    backend: Backend,
    version: Option<Version>,
    order: Order,
    gpu: Option<&'g Gpu>,
    policy: Option<Policy>,
}

impl Sorter<'static> {
    /// Ascending, [`Backend::Auto`], on the process's GPU 0 ([`Gpu::get`]) when a GPU runs.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<'g> Sorter<'g> {
    /// Where the sort runs.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Pins the GPU algorithm. A version the call cannot honour (V0–V5 for rows, argsorts or
    /// key-value sorts; any version on a CPU backend) is an error; with [`Backend::Auto`] a
    /// pinned version sorts on the GPU whatever the length.
    pub fn version(mut self, version: Version) -> Self {
        self.version = Some(version);
        self
    }

    /// The sort direction.
    pub fn order(mut self, order: Order) -> Self {
        self.order = order;
        self
    }

    /// Sorts on `gpu` (instead of [`Gpu::get`]'s GPU 0) when the GPU is chosen.
    pub fn gpu<'h>(self, gpu: &'h Gpu) -> Sorter<'h> {
        Sorter {
            gpu: Some(gpu),
            backend: self.backend,
            version: self.version,
            order: self.order,
            policy: self.policy,
        }
    }

    /// Tunes the GPU sorts with `policy` instead of the GPU architecture's own
    /// ([`Policy::for_device`]): for benchmarks that compare settings.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Sorts `keys` in place. On error the slice holds the same keys, possibly reordered.
    ///
    /// ```
    /// let mut keys = vec![3.5f32, -1.0, f32::NAN, 0.0, -0.0, f32::NEG_INFINITY];
    /// bitonic::Sorter::new().sort(&mut keys).unwrap();
    /// assert_eq!(keys[0], f32::NEG_INFINITY);
    /// assert!(keys[5].is_nan());
    /// ```
    pub fn sort<K: SortKey>(&self, keys: &mut [K]) -> Result<Ran> {
        self.sort_rows(keys, keys.len())
    }

    /// Sorts every row of `row_len` keys of a row-major matrix, independently. `keys.len()`
    /// must be a multiple of `row_len`.
    ///
    /// ```
    /// let mut m = vec![3u32, 1, 2, /* next row */ 9, 7, 8];
    /// bitonic::Sorter::new().sort_rows(&mut m, 3).unwrap();
    /// assert_eq!(m, [1, 2, 3, 7, 8, 9]);
    /// ```
    pub fn sort_rows<K: SortKey>(&self, keys: &mut [K], row_len: usize) -> Result<Ran> {
        check_rows(keys.len(), row_len)?;
        let (ran, target) =
            self.choose::<K>(keys.len(), rows_layout(keys.len(), row_len), false)?;
        match target {
            Some(t) => on_gpu(t, keys, |words| {
                run::sort::<K::Wide>(t, ran.strategy, words, row_len, self.order)
            })?,
            None => cpu::sort_each(chunks(keys, row_len), self.order, ran.strategy)?,
        }
        Ok(ran)
    }

    /// Sorts each segment `keys[offsets[i]..offsets[i + 1]]` independently. `offsets` must
    /// start at 0, never decrease, and end at `keys.len()`.
    ///
    /// ```
    /// let mut v = vec![2i64, 1, 5, 4, 3];
    /// bitonic::Sorter::new().sort_segments(&mut v, &[0, 2, 2, 5]).unwrap();
    /// assert_eq!(v, [1, 2, 3, 4, 5]);
    /// ```
    pub fn sort_segments<K: SortKey>(&self, keys: &mut [K], offsets: &[usize]) -> Result<Ran> {
        check_segments(keys.len(), offsets)?;
        let (ran, target) = self.choose::<K>(keys.len(), Layout::Segments, false)?;
        match target {
            Some(t) => on_gpu(t, keys, |words| {
                run::sort_segments::<K::Wide>(t, words, offsets, self.order)
            })?,
            None => cpu::sort_each(segments(keys, offsets), self.order, ran.strategy)?,
        }
        Ok(ran)
    }

    /// Writes to `indices` the permutation that sorts `keys` (left as they are):
    /// `keys[indices[0]], keys[indices[1]], …` is sorted, equal keys in index order. The
    /// index type is the caller's ([`SortIndex`]).
    ///
    /// ```
    /// let mut p = vec![0u32; 4];
    /// bitonic::Sorter::new().argsort(&[2.5f32, -1.0, 2.5, 0.0], &mut p).unwrap();
    /// assert_eq!(p, [1, 3, 0, 2]);
    /// ```
    pub fn argsort<K: SortKey, I: SortIndex>(&self, keys: &[K], indices: &mut [I]) -> Result<Ran> {
        self.argsort_rows(keys, keys.len(), indices)
    }

    /// Writes each row's stable argsort of a row-major matrix of rows of `row_len` keys to
    /// `indices`, each row's indices counted from its start.
    ///
    /// ```
    /// let mut p = vec![0u64; 6];
    /// bitonic::Sorter::new().argsort_rows(&[3u32, 1, 2, 9, 7, 8], 3, &mut p).unwrap();
    /// assert_eq!(p, [1, 2, 0, 1, 2, 0]);
    /// ```
    pub fn argsort_rows<K: SortKey, I: SortIndex>(
        &self,
        keys: &[K],
        row_len: usize,
        indices: &mut [I],
    ) -> Result<Ran> {
        check_rows(keys.len(), row_len)?;
        check_same_len(keys.len(), indices.len())?;
        check_index_width::<I>(row_len)?;
        let (ran, target) = self.choose::<K>(keys.len(), rows_layout(keys.len(), row_len), true)?;
        if keys.is_empty() {
            return Ok(ran);
        }
        match target {
            Some(t) => {
                let positions = gpu_argsort_host(t, ran.strategy, keys, row_len, self.order)?;
                write_indices(indices, &positions);
            }
            None => {
                let rows = keys
                    .par_chunks(row_len)
                    .zip(indices.par_chunks_mut(row_len));
                rows.for_each(|(row, out)| {
                    let pairs = cpu::sorted_pairs(row, self.order, serial(ran.strategy));
                    for (o, &(_, i)) in out.iter_mut().zip(&pairs) {
                        *o = I::from_usize(i);
                    }
                });
            }
        }
        Ok(ran)
    }

    /// Sorts `keys` and applies the same permutation to `values`, stably: equal keys keep
    /// their values' original order. The key-value sort of CUB's `SortPairs`.
    ///
    /// ```
    /// let mut keys = vec![3u32, 1, 3, 2];
    /// let mut ids = vec![0u64, 1, 2, 3];
    /// bitonic::Sorter::new().sort_pairs(&mut keys, &mut ids).unwrap();
    /// assert_eq!((keys, ids), (vec![1, 2, 3, 3], vec![1, 3, 0, 2]));
    /// ```
    pub fn sort_pairs<K: SortKey, V: Copy + Send + Sync>(
        &self,
        keys: &mut [K],
        values: &mut [V],
    ) -> Result<Ran> {
        check_same_len(keys.len(), values.len())?;
        let n = keys.len();
        let (ran, target) = self.choose::<K>(n, Layout::Whole, true)?;
        if n < 2 {
            return Ok(ran);
        }
        let permutation: Vec<usize> = match target {
            // The GPU computes the permutation; keys and values follow it here, so values of
            // any type work.
            Some(t) => gpu_argsort_host(t, ran.strategy, keys, n, self.order)?
                .into_par_iter()
                .map(|i| i as usize)
                .collect(),
            None => cpu::sorted_pairs(keys, self.order, ran.strategy)
                .into_par_iter()
                .map(|(_, i)| i)
                .collect(),
        };
        let old_keys = keys.to_vec();
        keys.par_iter_mut()
            .zip(permutation.par_iter())
            .for_each(|(k, &i)| *k = old_keys[i]);
        let old_values = values.to_vec();
        values
            .par_iter_mut()
            .zip(permutation.par_iter())
            .for_each(|(v, &i)| *v = old_values[i]);
        Ok(ran)
    }

    /// Writes the `k` largest or smallest keys of `keys` (left as they are) to `values`, best
    /// first, and their indices to `indices` (`k` of each): exactly the first `k` of a stable
    /// sort (descending for [`Select::Largest`]), so among equal keys the smaller index comes
    /// first; floats in total order. `k` must be from 1 to `keys.len()` ([`Error::BadK`]). The
    /// sorter's [`Order`] plays no part.
    ///
    /// ```
    /// use bitonic::{Select, Sorter};
    /// let keys = [0.5f32, 2.0, -1.0, 2.0, f32::NAN];
    /// let (mut values, mut indices) = (vec![0.0f32; 3], vec![0usize; 3]);
    /// Sorter::new().topk(&keys, 3, Select::Largest, &mut values, &mut indices)?;
    /// assert!(values[0].is_nan()); // NaN is the largest key in total order
    /// assert_eq!((&values[1..], indices), (&[2.0, 2.0][..], vec![4, 1, 3]));
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn topk<K: SortKey, I: SortIndex>(
        &self,
        keys: &[K],
        k: usize,
        select: Select,
        values: &mut [K],
        indices: &mut [I],
    ) -> Result<Ran> {
        self.topk_rows(keys, keys.len(), k, select, values, indices)
    }

    /// [`Sorter::topk`] of every row of `row_len` keys of a row-major matrix: `values` and
    /// `indices` hold `k` a row (`rows × k`), each index counted from its row's start. `k` must
    /// be from 1 to `row_len`; no rows (no keys) select nothing.
    ///
    /// ```
    /// use bitonic::{Select, Sorter};
    /// let m = [3u32, 1, 2, /* next row */ 7, 9, 7];
    /// let (mut values, mut indices) = (vec![0u32; 4], vec![0u32; 4]);
    /// Sorter::new().topk_rows(&m, 3, 2, Select::Largest, &mut values, &mut indices)?;
    /// assert_eq!((values, indices), (vec![3, 2, 9, 7], vec![0, 2, 1, 0]));
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn topk_rows<K: SortKey, I: SortIndex>(
        &self,
        keys: &[K],
        row_len: usize,
        k: usize,
        select: Select,
        values: &mut [K],
        indices: &mut [I],
    ) -> Result<Ran> {
        let rows = check_topk(keys.len(), row_len, k, values.len(), indices.len())?;
        check_index_width::<I>(row_len)?;
        let layout = rows_layout(keys.len(), row_len);
        let (ran, target) = self.choose_for(
            K::DTYPE.size(),
            keys.len(),
            layout,
            true,
            Operation::Topk { k },
        )?;
        if rows == 0 {
            return Ok(ran);
        }
        match target {
            Some(t) => {
                run::check_len(keys.len())?;
                let device = transfer::upload(t.gpu, keys)?;
                let len = rows * k;
                // SAFETY: the selection writes every value before it is read.
                let mut best = unsafe { t.gpu.stream().alloc::<K>(len) }
                    .during(|| format!("allocating {len} top-k values"))?;
                let mut positions = run::alloc_indices(t.gpu, len)?;
                let shape = (row_len, k, select);
                let mut view = positions.as_view_mut();
                select_on_gpu(t, ran.strategy, &device, shape, &mut best, &mut view)?;
                transfer::download(t.gpu, &best, values)?;
                let mut host = vec![0u32; len];
                transfer::download(t.gpu, &positions, &mut host)?;
                write_indices(indices, &host);
            }
            None => cpu::topk::topk_rows(keys, row_len, k, select, values, indices),
        }
        Ok(ran)
    }

    /// [`Sorter::topk_rows`] of keys on the GPU, into device buffers of `rows × k` values and
    /// `u32` indices, queued on the GPU's stream (the keys are left as they are). Returns when
    /// the work is queued.
    ///
    /// ```no_run
    /// use bitonic::{Gpu, Select, Sorter};
    /// let gpu = Gpu::get()?;
    /// let keys = gpu.stream().clone_htod(&[4.0f32, 1.0, 8.0, 2.0])?;
    /// let mut values = gpu.stream().alloc_zeros::<f32>(2)?;
    /// let mut indices = gpu.stream().alloc_zeros::<u32>(2)?;
    /// Sorter::new().topk_rows_device(&keys, 4, 2, Select::Largest, &mut values, &mut indices)?;
    /// assert_eq!(gpu.stream().clone_dtoh(&indices)?, [2, 0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn topk_rows_device<K: SortKey>(
        &self,
        keys: &CudaSlice<K>,
        row_len: usize,
        k: usize,
        select: Select,
        values: &mut CudaSlice<K>,
        indices: &mut CudaSlice<u32>,
    ) -> Result<Ran> {
        let rows = check_topk(keys.len(), row_len, k, values.len(), indices.len())?;
        let layout = rows_layout(keys.len(), row_len);
        let (ran, t) = self.choose_device_for(
            K::DTYPE.size(),
            keys.len(),
            layout,
            true,
            Operation::Topk { k },
        )?;
        let sorter = t.gpu.info().ordinal;
        for buffer in [
            keys.context().ordinal(),
            values.context().ordinal(),
            indices.context().ordinal(),
        ] {
            if buffer != sorter {
                return Err(Error::WrongDevice { buffer, sorter });
            }
        }
        run::check_len(keys.len())?;
        if rows == 0 {
            return Ok(ran);
        }
        let mut positions = indices.as_view_mut();
        select_on_gpu(
            t,
            ran.strategy,
            keys,
            (row_len, k, select),
            values,
            &mut positions,
        )?;
        Ok(ran)
    }

    /// Sorts keys already on the GPU, in place, queued on the GPU's stream. Returns when the
    /// work is queued; errors raised by the kernels surface at the next synchronizing call.
    /// Device buffers are cudarc's [`CudaSlice`], allocated on the sorter's GPU
    /// ([`Gpu::context`]).
    pub fn sort_device<K: SortKey>(&self, keys: &mut CudaSlice<K>) -> Result<Ran> {
        let len = keys.len();
        self.sort_rows_device(keys, len)
    }

    /// [`Sorter::sort_rows`] of keys on the GPU.
    pub fn sort_rows_device<K: SortKey>(
        &self,
        keys: &mut CudaSlice<K>,
        row_len: usize,
    ) -> Result<Ran> {
        check_rows(keys.len(), row_len)?;
        let (ran, t) =
            self.choose_device::<K>(keys.len(), rows_layout(keys.len(), row_len), false)?;
        words::with_words(t.gpu, keys, |words| {
            run::sort::<K::Wide>(t, ran.strategy, words, row_len, self.order)
        })?;
        Ok(ran)
    }

    /// [`Sorter::sort_segments`] of keys on the GPU.
    pub fn sort_segments_device<K: SortKey>(
        &self,
        keys: &mut CudaSlice<K>,
        offsets: &[usize],
    ) -> Result<Ran> {
        check_segments(keys.len(), offsets)?;
        let (ran, t) = self.choose_device::<K>(keys.len(), Layout::Segments, false)?;
        words::with_words(t.gpu, keys, |words| {
            run::sort_segments::<K::Wide>(t, words, offsets, self.order)
        })?;
        Ok(ran)
    }

    /// Sorts every row of `row_len` keys on the GPU in place, stably, and writes for each
    /// sorted key its index in its row before the sort to `indices` (as many as keys).
    pub fn sort_rows_with_indices_device<K: SortKey>(
        &self,
        keys: &mut CudaSlice<K>,
        row_len: usize,
        indices: &mut CudaSlice<u32>,
    ) -> Result<Ran> {
        check_rows(keys.len(), row_len)?;
        check_same_len(keys.len(), indices.len())?;
        let (ran, t) =
            self.choose_device::<K>(keys.len(), rows_layout(keys.len(), row_len), true)?;
        let mut view = indices.as_view_mut();
        words::with_words(t.gpu, keys, |words| {
            run::sort_with_indices::<K::Wide>(
                t,
                ran.strategy,
                words,
                row_len,
                &mut view,
                self.order,
            )
        })?;
        Ok(ran)
    }

    /// Sorts every row of `row_len` keys on the GPU stably and moves `values` (4- or 8-byte
    /// elements, one a key) with them.
    pub fn sort_rows_pairs_device<K: SortKey, V: DeviceRepr>(
        &self,
        keys: &mut CudaSlice<K>,
        values: &mut CudaSlice<V>,
        row_len: usize,
    ) -> Result<Ran> {
        check_rows(keys.len(), row_len)?;
        check_same_len(keys.len(), values.len())?;
        let (ran, t) =
            self.choose_device::<K>(keys.len(), rows_layout(keys.len(), row_len), true)?;
        let mut view = values.as_view_mut();
        words::with_words(t.gpu, keys, |words| {
            let order = self.order;
            run::sort_with_values::<K::Wide, V>(t, ran.strategy, words, row_len, &mut view, order)
        })?;
        Ok(ran)
    }

    /// Compiles and loads the GPU kernels that a sort of `len` keys of `K` in `layout` would
    /// run, with values of `V` (`()` for keys alone; an argsort's indices are `u32` on the
    /// GPU), so that the first sort's time is the sort's. Kernels compile once a machine
    /// (seconds, cached on disk: [`crate::cuda::on_compile`] tells of it); nothing happens
    /// when the sort would run on the CPU. Returns what the sort would run.
    ///
    /// ```no_run
    /// use bitonic::{dispatch::Layout, Sorter};
    /// let sorter = Sorter::new();
    /// sorter.prepare::<f32, ()>(1 << 24, Layout::Whole)?; // compiles here, once
    /// let mut keys: Vec<f32> = (0..1 << 24).map(|i| (i % 1000) as f32).collect();
    /// let ran = sorter.sort(&mut keys)?; // the sort alone
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn prepare<K: SortKey, V>(&self, len: usize, layout: Layout) -> Result<Ran> {
        let value_bytes = std::mem::size_of::<V>();
        let (ran, target) = self.choose::<K>(len, layout, value_bytes > 0)?;
        if let Some(t) = target {
            let row_len = match layout {
                Layout::Rows { row_len } => row_len,
                Layout::Whole | Layout::Segments => len,
            };
            run::prepare(t, ran.strategy, len, row_len, K::DTYPE.size(), value_bytes)?;
        }
        Ok(ran)
    }

    /// What a sort of `len` keys of `dtype` in one array would run, without sorting: to refuse
    /// early (a `Cuda` backend without a GPU, a version on the CPU) before work that would be
    /// lost.
    pub fn what_runs(&self, len: usize, dtype: DType) -> Result<Ran> {
        let sort = Operation::Sort;
        self.choose_for(dtype.size(), len, Layout::Whole, false, sort)
            .map(|(ran, _)| ran)
    }

    /// Bytes the GPU sort of `n` keys of `dtype` in one array moves through device memory (a
    /// read and a write of every key a pass): the yardstick of achieved bandwidth.
    pub fn bytes_moved(&self, n: usize, dtype: DType) -> Result<u64> {
        let (ran, t) =
            self.choose_device_for(dtype.size(), n, Layout::Whole, false, Operation::Sort)?;
        run::bytes_moved(t, ran.strategy, n, dtype, self.order)
    }

    /// The backend and strategy for a request of keys `K`, and the GPU target when the GPU
    /// runs it. The GPU is probed only when it could be chosen.
    fn choose<K: SortKey>(
        &self,
        len: usize,
        layout: Layout,
        with_values: bool,
    ) -> Result<(Ran, Option<Target<'_>>)> {
        self.choose_for(K::DTYPE.size(), len, layout, with_values, Operation::Sort)
    }

    /// [`Sorter::choose`] for an operation on keys of `key_bytes`.
    fn choose_for(
        &self,
        key_bytes: usize,
        len: usize,
        layout: Layout,
        with_values: bool,
        operation: Operation,
    ) -> Result<(Ran, Option<Target<'_>>)> {
        let request = Request {
            len,
            key_bytes,
            layout,
            with_values,
            backend: self.backend,
            version: self.version,
            operation,
        };
        let may_use_gpu = match self.backend {
            Backend::Cuda => true,
            Backend::Auto => self.version.is_some() || len >= dispatch::AUTO_GPU_MIN_LEN,
            _ => false,
        };
        let gpu = if may_use_gpu {
            Some(self.device())
        } else {
            None
        };
        let policy = match gpu {
            Some(Ok(gpu)) => Some(self.policy_ref(gpu)),
            _ => None,
        };
        let (backend, strategy) = match dispatch::choose(&request, policy) {
            Err(Error::NoGpu) => match gpu {
                Some(Err(why)) => return Err(why.into()),
                _ => return Err(Error::NoGpu),
            },
            other => other?,
        };
        let ran = Ran { backend, strategy };
        let target = match (gpu, policy) {
            (Some(Ok(gpu)), Some(policy)) if strategy.on_gpu() => Some(Target { gpu, policy }),
            _ => None,
        };
        Ok((ran, target))
    }

    /// [`Sorter::choose`] for device buffers: always the GPU.
    fn choose_device<K: SortKey>(
        &self,
        len: usize,
        layout: Layout,
        with_values: bool,
    ) -> Result<(Ran, Target<'_>)> {
        self.choose_device_for(K::DTYPE.size(), len, layout, with_values, Operation::Sort)
    }

    /// [`Sorter::choose_device`] for an operation on keys of `key_bytes`.
    fn choose_device_for(
        &self,
        key_bytes: usize,
        len: usize,
        layout: Layout,
        with_values: bool,
        operation: Operation,
    ) -> Result<(Ran, Target<'_>)> {
        if !matches!(self.backend, Backend::Auto | Backend::Cuda) {
            return Err(Error::Unsupported("device buffers on a CPU backend"));
        }
        let gpu = self.device()?;
        let request = Request {
            len,
            key_bytes,
            layout,
            with_values,
            backend: Backend::Cuda,
            version: self.version,
            operation,
        };
        let policy = self.policy_ref(gpu);
        let (backend, strategy) = dispatch::choose(&request, Some(policy))?;
        Ok((Ran { backend, strategy }, Target { gpu, policy }))
    }

    /// The sorter's GPU: the one given, else the process's GPU 0.
    fn device(&self) -> std::result::Result<&Gpu, GpuUnavailable> {
        match self.gpu {
            Some(gpu) => Ok(gpu),
            None => Gpu::get(),
        }
    }

    /// The sorter's policy, else `gpu`'s architecture's (kept for the life of `gpu`).
    fn policy_ref<'a>(&'a self, gpu: &'a Gpu) -> &'a Policy {
        match &self.policy {
            Some(policy) => policy,
            None => gpu.default_policy(),
        }
    }
}

/// The strategy of one row's sort inside a parallel loop over rows.
fn serial(strategy: Strategy) -> Strategy {
    match strategy {
        Strategy::CpuNetwork => Strategy::CpuNetworkSerial,
        other => other,
    }
}

fn rows_layout(len: usize, row_len: usize) -> Layout {
    if row_len >= len {
        Layout::Whole
    } else {
        Layout::Rows { row_len }
    }
}

/// The rows of `keys` (none when it is empty).
fn chunks<K>(keys: &mut [K], row_len: usize) -> Vec<&mut [K]> {
    keys.chunks_mut(row_len.max(1)).collect()
}

/// The segments of `keys` cut at `offsets` (checked by [`check_segments`]).
fn segments<'a, K>(keys: &'a mut [K], offsets: &[usize]) -> Vec<&'a mut [K]> {
    let mut segments = Vec::with_capacity(offsets.len().saturating_sub(1));
    let mut rest = keys;
    for w in offsets.windows(2) {
        let (segment, tail) = rest.split_at_mut(w[1] - w[0]);
        segments.push(segment);
        rest = tail;
    }
    segments
}

/// Copies host keys to the GPU, runs `work` on their words there ([`words`]) and copies them
/// back (nothing to do for fewer than two keys).
fn on_gpu<K: SortKey>(
    t: Target,
    keys: &mut [K],
    work: impl FnOnce(&mut CudaViewMut<Word<K>>) -> Result<()>,
) -> Result<()> {
    run::check_len(keys.len())?;
    if keys.len() < 2 {
        return Ok(());
    }
    transfer::round_trip(t.gpu, keys, |device| words::with_words(t.gpu, device, work))
}

/// Selects each row's best `k` of device keys into `values` and `indices` (`k` a row) on the
/// GPU: the selection of the keys' words ([`words`]).
fn select_on_gpu<K: SortKey>(
    t: Target,
    strategy: Strategy,
    keys: &CudaSlice<K>,
    (row_len, k, select): (usize, usize, Select),
    values: &mut CudaSlice<K>,
    indices: &mut CudaViewMut<u32>,
) -> Result<()> {
    let by_composites = strategy.selects_by_composites();
    if K::DTYPE.size() == 2 && by_composites {
        // 16-bit keys are read as they are: no widened copy.
        let (n, len) = (keys.len(), values.len());
        // SAFETY: f16 and bf16 keys are 2-byte plain data, every bit pattern a u16 and back.
        let words = unsafe { keys.transmute::<u16>(n) }.expect("2-byte keys");
        let mut best = unsafe { values.transmute_mut::<u16>(len) }.expect("2-byte keys");
        let shape = (row_len, k, select);
        let kind = K::DTYPE.map_kind();
        return cuda::topk::by_composites(t, strategy, &words, shape, kind, &mut best, indices);
    }
    let keys = words::read_words(t.gpu, keys)?;
    let mut best = DeviceWords::output(t.gpu, values)?;
    cuda::topk::select::<K::Wide>(
        t,
        strategy,
        &keys.view(),
        row_len,
        k,
        select,
        &mut best.view(),
        indices,
    )?;
    best.finish(t.gpu)
}

/// Whether indices of `I` can number every key of a row of `row_len` keys.
fn check_index_width<I: SortIndex>(row_len: usize) -> Result<()> {
    if row_len.saturating_sub(1) > I::MAX {
        return Err(Error::IndexTooNarrow {
            row_len,
            max: I::MAX,
        });
    }
    Ok(())
}

/// The GPU's u32 positions as the caller's indices (which [`check_index_width`] let hold them).
fn write_indices<I: SortIndex>(indices: &mut [I], positions: &[u32]) {
    let out = indices.par_iter_mut().zip(positions.par_iter());
    out.for_each(|(out, &i)| *out = I::from_usize(i as usize));
}

/// Each row's stable argsort of host keys, on the GPU (the keys are copied, not changed).
fn gpu_argsort_host<K: SortKey>(
    t: Target,
    strategy: Strategy,
    keys: &[K],
    row_len: usize,
    order: crate::Order,
) -> Result<Vec<u32>> {
    run::check_len(keys.len())?;
    let mut positions = vec![0u32; keys.len()];
    let mut device = transfer::upload(t.gpu, keys)?;
    let mut indices = run::alloc_indices(t.gpu, keys.len())?;
    let mut view = indices.as_view_mut();
    // The copy's words are sorted and dropped: they need not go back into its keys.
    let mut words = DeviceWords::new(t.gpu, &mut device)?;
    run::sort_with_indices::<K::Wide>(t, strategy, &mut words.view(), row_len, &mut view, order)?;
    // The buffer holds at least one index; the view holds exactly `keys.len()`.
    transfer::download(t.gpu, &indices.slice(0..keys.len()), &mut positions)?;
    Ok(positions)
}

/// Whether `len` keys split into rows of `row_len`: a length that divides them (no keys split
/// into rows of any length, 0 included).
fn check_rows(len: usize, row_len: usize) -> Result<()> {
    if len > 0 && (row_len == 0 || len % row_len != 0) {
        return Err(Error::BadRows { len, row_len });
    }
    Ok(())
}

/// The rows of a top-k of `len` keys in rows of `row_len` keeping `k` a row into outputs of
/// `values` and `indices` elements: `k` from 1 to `row_len`, `rows × k` of each output.
fn check_topk(
    len: usize,
    row_len: usize,
    k: usize,
    values: usize,
    indices: usize,
) -> Result<usize> {
    check_rows(len, row_len)?;
    if k == 0 || k > row_len {
        return Err(Error::BadK { k, row_len });
    }
    let rows = len / row_len;
    for (what, len) in [("values", values), ("indices", indices)] {
        if len != rows * k {
            return Err(Error::TopkOutputLength { what, len, rows, k });
        }
    }
    Ok(rows)
}

/// Whether `offsets` cut `len` keys into segments: from 0, never decreasing, to `len`.
fn check_segments(len: usize, offsets: &[usize]) -> Result<()> {
    let valid = offsets.first() == Some(&0)
        && offsets.last() == Some(&len)
        && offsets.windows(2).all(|w| w[0] <= w[1]);
    if valid {
        Ok(())
    } else {
        Err(Error::BadSegments { len })
    }
}
