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
//! bitonic::sort_descending(&mut ids)?;
//! assert_eq!(ids, [30, 20, 10]);
//! # Ok::<(), bitonic::Error>(())
//! ```
//!
//! Floats sort in IEEE 754 total order: `-NaN < -inf < … < -0.0 < +0.0 < … < +inf < +NaN`, the
//! order of [`f32::total_cmp`].
//!
//! ```
//! use bitonic::{half::f16, Select};
//! let logits: Vec<f16> = [0.5, -2.0, 3.25, 1.0].into_iter().map(f16::from_f32).collect();
//! let (mut values, mut indices) = (vec![f16::ZERO; 2], vec![0u32; 2]);
//! bitonic::topk(&logits, 2, Select::Largest, &mut values, &mut indices)?;
//! assert_eq!((values[0].to_f32(), indices), (3.25, vec![2, 3]));
//! # Ok::<(), bitonic::Error>(())
//! ```
//!
//! A [`Sorter`] chooses the backend, the GPU and its [`Version`] (the report's V0–V5, or the
//! tuned default), the order and the tuning ([`Policy`]); every call returns what [`Ran`]:
//!
//! ```
//! use bitonic::{Backend, Order, Sorter, Strategy};
//! let mut v: Vec<i32> = (0..1000).map(|i| (i * 7919) % 1013 - 500).collect();
//! let ran = Sorter::new().backend(Backend::Cpu).order(Order::Descending).sort(&mut v)?;
//! assert!(v.windows(2).all(|w| w[0] >= w[1]));
//! assert_eq!(ran.strategy, Strategy::CpuSort);
//! # Ok::<(), bitonic::Error>(())
//! ```
//!
//! **What runs.** [`dispatch::choose`] decides, as a pure function of the input and the GPU's
//! [`Policy`]; docs/architecture.md draws the layers. Without a GPU, [`Backend::Auto`] uses the
//! fastest CPU sort; the bitonic network on the CPU stays available by name
//! ([`Backend::CpuNetwork`], [`Backend::CpuNetworkSerial`]) as the report's baseline.
//!
//! **Stability.** A bitonic network is not stable by itself. Argsorts and key-value sorts are:
//! equal keys are told apart by their original index, so they keep their index order, in both
//! orders, on every backend.
//!
//! **Device buffers.** Keys already on the GPU are cudarc's [`cudarc::driver::CudaSlice`],
//! allocated in the context of the sorter's [`Gpu`] ([`Gpu::context`]); the `*_device` calls of
//! [`Sorter`] sort them in place on the GPU's stream.
//!
//! **Environment.** The library reads one variable: `BITONIC_CACHE_DIR`, the folder of compiled
//! kernels (see [`cuda::compile_all`]).

#![warn(missing_docs)]

mod cpu;
pub mod cuda;
pub mod dispatch;
mod error;
pub mod key;
pub mod multi;
mod network;
mod policy;
mod sorter;

pub use cuda::{DeviceInfo, Gpu};
pub use dispatch::Strategy;
pub use error::{Error, GpuUnavailable, Result};
/// The `half` crate, whose [`half::f16`] and [`half::bf16`] are key types.
pub use half;
pub use key::{DType, SortKey};
pub use policy::Policy;
pub use sorter::{Backend, Order, Ran, Select, SortIndex, Sorter, Version};

/// Sorts `keys` ascending on the best available backend ([`Sorter::sort`]).
///
/// ```
/// let mut keys = vec![3i64, -1, 2];
/// bitonic::sort(&mut keys)?;
/// assert_eq!(keys, [-1, 2, 3]);
/// # Ok::<(), bitonic::Error>(())
/// ```
pub fn sort<K: SortKey>(keys: &mut [K]) -> Result<Ran> {
    Sorter::new().sort(keys)
}

/// Sorts `keys` descending on the best available backend.
///
/// ```
/// let mut keys = vec![0.5f32, 2.0, -1.0];
/// bitonic::sort_descending(&mut keys)?;
/// assert_eq!(keys, [2.0, 0.5, -1.0]);
/// # Ok::<(), bitonic::Error>(())
/// ```
pub fn sort_descending<K: SortKey>(keys: &mut [K]) -> Result<Ran> {
    Sorter::new().order(Order::Descending).sort(keys)
}

/// Writes the stable ascending argsort of `keys` to `indices` ([`Sorter::argsort`]).
///
/// ```
/// let mut order = vec![0usize; 3];
/// bitonic::argsort(&[20u32, 10, 20], &mut order)?;
/// assert_eq!(order, [1, 0, 2]);
/// # Ok::<(), bitonic::Error>(())
/// ```
pub fn argsort<K: SortKey, I: SortIndex>(keys: &[K], indices: &mut [I]) -> Result<Ran> {
    Sorter::new().argsort(keys, indices)
}

/// Writes the `k` largest or smallest keys of `keys`, best first, to `values` and their
/// indices to `indices` ([`Sorter::topk`]): the first `k` of a stable sort.
///
/// ```
/// use bitonic::Select;
/// let (mut values, mut indices) = (vec![0u64; 2], vec![0usize; 2]);
/// bitonic::topk(&[4u64, 9, 4, 1], 2, Select::Largest, &mut values, &mut indices)?;
/// assert_eq!((values, indices), (vec![9, 4], vec![1, 0]));
/// # Ok::<(), bitonic::Error>(())
/// ```
pub fn topk<K: SortKey, I: SortIndex>(
    keys: &[K],
    k: usize,
    select: Select,
    values: &mut [K],
    indices: &mut [I],
) -> Result<Ran> {
    Sorter::new().topk(keys, k, select, values, indices)
}

/// [`topk`] of every row of `row_len` keys ([`Sorter::topk_rows`]): `k` values and indices a
/// row.
///
/// ```
/// use bitonic::Select;
/// let (mut values, mut indices) = (vec![0i32; 2], vec![0u32; 2]);
/// bitonic::topk_rows(&[5, -2, 8, 1], 2, 1, Select::Smallest, &mut values, &mut indices)?;
/// assert_eq!((values, indices), (vec![-2, 1], vec![1, 1]));
/// # Ok::<(), bitonic::Error>(())
/// ```
pub fn topk_rows<K: SortKey, I: SortIndex>(
    keys: &[K],
    row_len: usize,
    k: usize,
    select: Select,
    values: &mut [K],
    indices: &mut [I],
) -> Result<Ran> {
    Sorter::new().topk_rows(keys, row_len, k, select, values, indices)
}

/// Sorts `keys` ascending and moves `values` with them, stably ([`Sorter::sort_pairs`]).
///
/// ```
/// let mut scores = vec![0.9f32, 0.1, 0.5];
/// let mut names = vec!["a", "b", "c"];
/// bitonic::sort_pairs(&mut scores, &mut names)?;
/// assert_eq!(names, ["b", "c", "a"]);
/// # Ok::<(), bitonic::Error>(())
/// ```
pub fn sort_pairs<K: SortKey, V: Copy + Send + Sync>(
    keys: &mut [K],
    values: &mut [V],
) -> Result<Ran> {
    Sorter::new().sort_pairs(keys, values)
}
