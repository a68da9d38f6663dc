//! The CUDA backend, in layers:
//!
//! * [`device`]: the device handle ([`Gpu`]): probing without panicking, the device's facts,
//!   its stream, its kernels (compiled by [`nvrtc`] from the sources of [`kernels`]);
//! * `run`: carries out the strategy [`crate::dispatch::choose`] picked, one file per strategy:
//!   `seed` (V0–V5), `passes` (the tuned network), `merge` (merge sort), `kv` (key-value merge
//!   sort), `rows` (segments and key-index pairs);
//! * `layout` (structs shared with the kernels), `launch` (launch shapes and the raw cluster
//!   launch), `graph` (multi-pass plans as CUDA graphs), `transfer` and `staging` (host copies);
//! * [`multi`]: the sort across GPUs over NCCL.
//!
//! Nothing here panics when CUDA is missing: [`Gpu::get`] probes for the driver, NVRTC and a
//! device once per process and says why it cannot run.

pub mod device;
mod graph;
pub mod kernels;
mod kv;
mod launch;
mod layout;
mod merge;
pub mod multi;
pub mod nvrtc;
mod passes;
mod rows;
pub(crate) mod run;
mod seed;
mod staging;
pub(crate) mod transfer;

pub use device::{DeviceInfo, Gpu};
pub use run::MAX_LEN;

/// Kernels come in a `_u32` and a `_u64` flavour (and the tuned pass in `_kv64`, for the
/// 16-byte key-index pairs), named by the width of the words they sort.
fn kernel_name<T>(base: &str) -> String {
    let width = match std::mem::size_of::<T>() {
        4 => "u32",
        8 => "u64",
        _ => "kv64",
    };
    format!("{base}_{width}")
}
