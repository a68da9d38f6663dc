//! The CUDA backend, in layers:
//!
//! * [`device`]: the device handle ([`Gpu`]): probing without panicking, the device's facts,
//!   its stream, its kernels (compiled by `nvrtc` from the sources of `kernels`);
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
mod kernels;
mod kv;
mod launch;
mod layout;
mod merge;
pub mod multi;
mod nvrtc;
mod passes;
mod rows;
pub(crate) mod run;
mod seed;
mod staging;
pub(crate) mod transfer;

pub use device::{DeviceInfo, Gpu};
pub use run::MAX_LEN;

/// NVRTC's version as (major, minor), or why NVRTC cannot be used.
pub fn nvrtc_version() -> crate::Result<(i32, i32)> {
    nvrtc::version()
}

/// Compiles every kernel module for `arch` (such as `"sm_90"`) with `policy`'s numbers, or
/// reads it from the disk cache (`BITONIC_CACHE_DIR`, else `~/.cache/bitonic`): what a first
/// sort would compile, ahead of time (for deployment images), and the proof that every kernel
/// compiles. Needs NVRTC, not a GPU. Returns each module's file name and CUBIN.
///
/// ```no_run
/// let hopper = bitonic::Policy::for_compute_capability(9, 0);
/// for (module, cubin) in bitonic::cuda::compile_all("sm_90", &hopper)? {
///     println!("{module}: {} bytes", cubin.len());
/// }
/// # Ok::<(), bitonic::Error>(())
/// ```
pub fn compile_all(
    arch: &str,
    policy: &crate::Policy,
) -> crate::Result<Vec<(&'static str, Vec<u8>)>> {
    let defines = kernel_defines(policy);
    kernels::ALL
        .iter()
        .map(|module| Ok((module.name, nvrtc::compile(module, arch, &defines)?)))
        .collect()
}

/// Every `-D` define the kernels are compiled with under `policy`: the structs and flags shared
/// with the host (src/cuda/layout.rs), the tuned kernels' keys a thread (src/cuda/passes.rs)
/// and the policy's numbers (src/policy.rs). To compile `kernels/*.cu` with another compiler
/// (`nvcc -I kernels`), pass these.
///
/// ```
/// let defines = bitonic::cuda::kernel_defines(&bitonic::Policy::HOPPER);
/// assert!(defines.iter().any(|(name, value)| *name == "BITONIC_MERGE_TILE" && value == "4096"));
/// ```
pub fn kernel_defines(policy: &crate::Policy) -> Vec<(&'static str, String)> {
    let mut defines = layout::shared_defines();
    defines.extend(passes::kernel_defines());
    defines.extend(policy.defines());
    defines
}

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
