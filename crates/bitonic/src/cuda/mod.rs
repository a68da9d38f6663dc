//! The CUDA backend, in layers:
//!
//! * [`device`]: the device handle ([`Gpu`]): probing without panicking, the device's facts,
//!   its stream, its kernels (compiled by `nvrtc` from the sources of `kernels`, only the
//!   modules a sort runs, side by side, and cached on disk: [`compile_all`], [`on_compile`]);
//! * `run`: carries out the strategy [`crate::dispatch::choose`] picked, one file per strategy:
//!   `seed` (V0–V5), `passes` (the tuned network), `merge` (merge sort), `kv` (key-value merge
//!   sort), `rows` (segments and key-index pairs), `topk` (top-k selection);
//! * `layout` (structs shared with the kernels), `launch` (launch shapes and the raw cluster
//!   launch), `graph` (multi-pass plans as CUDA graphs), `transfer` and `staging` (host copies),
//!   `driver` (the raw driver calls cudarc lacks, each made fallible), `words` (device keys as
//!   the words the strategies sort: 16-bit keys widened);
//! * [`multi`]: the sort across GPUs over NCCL.
//!
//! Nothing here panics when CUDA is missing: [`Gpu::get`] probes for the driver, NVRTC and a
//! device once per process and says why it cannot run.

pub mod device;
mod driver;
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
pub(crate) mod topk;
pub(crate) mod transfer;
pub(crate) mod words;

pub use device::{DeviceInfo, Gpu};
pub use kernels::KernelModule;
pub use nvrtc::{CompileEvent, Origin};
pub use run::MAX_LEN;

/// NVRTC's version as (major, minor), or why NVRTC cannot be used.
pub fn nvrtc_version() -> crate::Result<(i32, i32)> {
    nvrtc::version()
}

/// Every kernel module ([`compile`] takes one).
pub fn kernel_modules() -> &'static [&'static KernelModule] {
    kernels::ALL.as_slice()
}

/// One kernel module compiled: its name, its CUBIN, where it came from and the wall seconds
/// that took.
#[derive(Clone, Debug)]
pub struct CompiledModule {
    /// [`KernelModule::name`].
    pub name: String,
    /// The CUBIN for the architecture asked for.
    pub cubin: std::sync::Arc<Vec<u8>>,
    /// Compiled now, read from the disk cache, or done earlier in this process.
    pub origin: Origin,
    /// Wall seconds, compiling or reading.
    pub seconds: f64,
}

/// Compiles `module` for `arch` (such as `"sm_90"`) with `policy`'s numbers, or reads it from
/// the disk cache ([`cache_dir`]). Needs NVRTC, not a GPU.
pub fn compile(
    module: &KernelModule,
    arch: &str,
    policy: &crate::Policy,
) -> crate::Result<CompiledModule> {
    let compiled = nvrtc::compile(module, arch, &kernel_defines(policy))?;
    Ok(CompiledModule::of(module, compiled))
}

impl CompiledModule {
    fn of(module: &KernelModule, compiled: nvrtc::Compiled) -> CompiledModule {
        CompiledModule {
            name: module.name(),
            cubin: compiled.cubin,
            origin: compiled.origin,
            seconds: compiled.seconds,
        }
    }
}

/// Compiles every kernel module for `arch` with `policy`'s numbers, side by side on threads of
/// their own, or reads them from the disk cache: what any sort could compile, ahead of time
/// (for deployment images: `bitonic compile`), and the proof that every kernel compiles.
/// Needs NVRTC, not a GPU.
///
/// ```no_run
/// let hopper = bitonic::Policy::for_compute_capability(9, 0);
/// for module in bitonic::cuda::compile_all("sm_90", &hopper)? {
///     println!("{}: {} bytes in {:.1} s", module.name, module.cubin.len(), module.seconds);
/// }
/// # Ok::<(), bitonic::Error>(())
/// ```
pub fn compile_all(arch: &str, policy: &crate::Policy) -> crate::Result<Vec<CompiledModule>> {
    let compiled = nvrtc::compile_side_by_side(&kernels::ALL, arch, &kernel_defines(policy))?;
    let modules = kernels::ALL.iter().zip(compiled);
    Ok(modules
        .map(|(module, c)| CompiledModule::of(module, c))
        .collect())
}

/// Tells `observer` what the kernel compiler does from now on: which module starts compiling
/// (not found in the cache), how long it took, and cache trouble. A program shows it (the first
/// use of a GPU compiles for seconds, once) and keeps it out of the time it reports for a
/// sort; [`crate::Sorter::prepare`] compiles ahead of the sort. Replaces any earlier observer.
///
/// ```
/// bitonic::cuda::on_compile(|event| eprintln!("{event:?}"));
/// ```
pub fn on_compile(observer: impl Fn(&CompileEvent) + Send + Sync + 'static) {
    nvrtc::set_observer(Some(Box::new(observer)));
}

/// The folder compiled kernels are cached in: `$BITONIC_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/bitonic`, else `~/.cache/bitonic` (made if missing); `None` when caching is
/// off (`BITONIC_CACHE_DIR` set empty) or impossible.
pub fn cache_dir() -> Option<std::path::PathBuf> {
    nvrtc::cache_dir()
}

/// Every `-D` define the kernels are compiled with under `policy`: the structs and flags shared
/// with the host (src/cuda/layout.rs), the tuned kernels' keys a thread (src/cuda/passes.rs)
/// and the policy's numbers (src/policy.rs). To compile `kernels/*.cu` with another compiler
/// (`nvcc -I kernels`), pass these. Their `KERNEL_*` names are C preprocessor macros of the
/// kernels, not environment variables: the library reads only `BITONIC_CACHE_DIR` (and
/// `XDG_CACHE_HOME` and `HOME` for the default cache folder).
///
/// ```
/// let defines = bitonic::cuda::kernel_defines(&bitonic::Policy::HOPPER);
/// assert!(defines.iter().any(|(name, value)| *name == "KERNEL_MERGE_TILE" && value == "4096"));
/// ```
pub fn kernel_defines(policy: &crate::Policy) -> Vec<(&'static str, String)> {
    let mut defines = layout::shared_defines();
    defines.extend(passes::kernel_defines());
    defines.extend(topk::kernel_defines());
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
