//! The CUDA backend, in layers; each imports only the layers below it (docs/architecture.md,
//! checked by tests/architecture.rs):
//!
//! * the runtime: `driver` (the raw driver calls cudarc lacks, each made fallible), `nvrtc`
//!   (compiling the kernels, the disk cache), `memory` (typed views of device memory, a call's
//!   workspace cut into parts), `graph` (launches as CUDA graphs), `staging` and `transfer`
//!   (host copies), [`device`] (the [`Gpu`]: probing without panicking, loading kernels), `exec`
//!   (the device, policy and stream of one call) and `launch` (every kernel launch, typed);
//! * the runners, which carry out a [`crate::plan::Plan`]: `passes` (the tuned network),
//!   `levels` (merge levels of keys and of keys with values), `merge` (the merge sort), `kv`
//!   (the key-value merge sort), `rows` (segments and key-index pairs), `topk`, `seed`
//!   (V0–V5) and `keymap` (the key map, 16-bit keys widened);
//! * `run`, the one entry from the sorter into the runners, and [`multi`], the sort across
//!   GPUs over NCCL.
//!
//! Nothing here panics when CUDA is missing: [`Gpu::get`] probes for the driver, NVRTC and a
//! device once per process and says why it cannot run.

pub mod device;
pub(crate) mod driver;
pub(crate) mod exec;
pub(crate) mod graph;
pub(crate) mod keymap;
pub(crate) mod kv;
pub(crate) mod launch;
pub(crate) mod levels;
pub(crate) mod memory;
pub(crate) mod merge;
pub mod multi;
pub(crate) mod nvrtc;
pub(crate) mod passes;
pub(crate) mod precompiled;
pub(crate) mod radix;
pub(crate) mod rows;
pub(crate) mod run;
pub(crate) mod sample;
pub(crate) mod seed;
pub(crate) mod staging;
pub(crate) mod topk;
pub(crate) mod transfer;

pub use crate::kernels::KernelModule;
pub use device::Gpu;
pub use nvrtc::{CompileEvent, Origin};
pub use precompiled::PackSummary;

/// NVRTC's version as (major, minor), or why NVRTC cannot be used.
pub fn nvrtc_version() -> crate::Result<(i32, i32)> {
    nvrtc::version()
}

/// Every kernel module ([`compile`] takes one).
pub fn kernel_modules() -> &'static [&'static KernelModule] {
    crate::kernels::ALL.as_slice()
}

/// One kernel module compiled: its name, its CUBIN, where it came from and the wall seconds
/// that took.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct CompiledModule {
    /// [`KernelModule::name`].
    pub name: String,
    /// The CUBIN for the architecture asked for.
    pub cubin: std::sync::Arc<Vec<u8>>,
    /// Compiled now, read from the disk cache, taken from a kernel pack ([`use_pack`]), or
    /// done earlier in this process.
    pub origin: Origin,
    /// Wall seconds, compiling or reading.
    pub seconds: f64,
}

/// Compiles `module` for `arch` (such as `"sm_90"`) with `policy`'s numbers, or takes it from
/// a kernel pack ([`use_pack`]) or the disk cache ([`cache_dir`]). Needs NVRTC, not a GPU.
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

/// Compiles `modules` for `arch` with `policy`'s numbers, side by side on threads of their
/// own, or takes them from a kernel pack or the disk cache: what a plan needs
/// ([`crate::Plan::modules`]), or every module ([`kernel_modules`]), ahead of time (for
/// deployment images: `bitonic compile`). Needs NVRTC, not a GPU.
///
/// ```no_run
/// let hopper = bitonic::Policy::for_compute_capability(9, 0);
/// let all = bitonic::cuda::kernel_modules();
/// for module in bitonic::cuda::compile_all(all, "sm_90", &hopper)? {
///     println!("{}: {} bytes in {:.1} s", module.name, module.cubin.len(), module.seconds);
/// }
/// # Ok::<(), bitonic::Error>(())
/// ```
pub fn compile_all(
    modules: &[&'static KernelModule],
    arch: &str,
    policy: &crate::Policy,
) -> crate::Result<Vec<CompiledModule>> {
    let compiled = nvrtc::compile_side_by_side(modules, arch, &kernel_defines(policy))?;
    Ok(modules
        .iter()
        .zip(compiled)
        .map(|(module, c)| CompiledModule::of(module, c))
        .collect())
}

/// A pack of every kernel module compiled for each of `archs` (such as `["sm_80", "sm_90"]`)
/// with the policy of each ([`crate::Policy::for_compute_capability`]): the bytes a build step
/// writes (a build script, `bitonic compile --pack`) for a program to hand to [`use_pack`] when
/// it starts. Needs NVRTC, not a GPU; reads and fills the disk cache ([`cache_dir`]).
///
/// ```no_run
/// let pack = bitonic::cuda::build_pack(&["sm_80", "sm_90"])?;
/// std::fs::write("kernels.pack", &pack)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn build_pack(archs: &[&str]) -> crate::Result<Vec<u8>> {
    use rayon::prelude::*;
    let mut entries = Vec::new();
    for &arch in archs {
        let policy = crate::Policy::for_arch(arch).ok_or_else(|| {
            crate::Error::InvalidPolicy(format!("{arch:?} is not an architecture such as sm_90"))
        })?;
        let defines = kernel_defines(&policy);
        // From the disk cache or NVRTC, side by side: never from packs this process holds
        // (an embedded pack would be copied, under the wrong architecture for a later minor).
        let cubins = kernel_modules()
            .par_iter()
            .map(|module| nvrtc::compile_unpacked(module, arch, &defines))
            .collect::<crate::Result<Vec<_>>>()?;
        for (module, cubin) in kernel_modules().iter().zip(cubins) {
            entries.push(precompiled::PackEntry {
                name: module.name(),
                arch,
                key: nvrtc::pack_key(module, arch, &defines),
                cubin,
            });
        }
    }
    Ok(precompiled::write_pack(&entries))
}

/// The whole work of a build script that embeds kernels in a program: writes
/// `$OUT_DIR/kernels.pack`, the [`build_pack`] of `archs` (comma-separated, such as
/// `"sm_80,sm_90"`; empty: a pack of none), and prints cargo's rerun line for the disk cache.
/// NVRTC must load (`libnvrtc.so` on the loader's path). Where it cannot, the build fails when
/// `nvrtc_required`, else the pack is empty and cargo shows a warning (the program then
/// compiles its kernels at first use, as without a pack). The program embeds the file and
/// hands it to [`use_pack`] when it starts. The build script chooses both arguments (the
/// Python module's and the CLI's take them from their own environment: python/build.rs).
///
/// ```no_run
/// // The `main` of a build.rs, with bitonic among the [build-dependencies]:
/// bitonic::cuda::write_pack_in_build_script("sm_80,sm_90", false).expect("packing the kernels");
/// ```
pub fn write_pack_in_build_script(
    archs: &str,
    nvrtc_required: bool,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-env-changed=BITONIC_CACHE_DIR");
    let out = std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set: not a build script")?;
    let mut archs: Vec<&str> = archs
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .collect();
    if let (false, Err(why)) = (archs.is_empty(), nvrtc::version()) {
        let packs = archs.join(", ");
        if nvrtc_required {
            return Err(format!("no kernels can be packed for {packs}: {why}").into());
        }
        println!(
            "cargo:warning=no kernels packed for {packs} ({why}): they will compile at first use"
        );
        archs.clear();
    }
    let pack = build_pack(&archs)?;
    std::fs::write(std::path::Path::new(&out).join("kernels.pack"), pack)?;
    Ok(())
}

/// Hands the library a pack of kernels compiled ahead of time ([`build_pack`]): from now on a
/// module whose CUBIN the pack holds for the device's architecture (or a lower minor of its
/// major) is loaded from it ([`Origin::Precompiled`]) instead of compiled. A pack made from
/// other kernel sources or another policy holds no match, and its modules compile as before.
/// Process-wide, like [`on_compile`]; packs given earlier are searched first. `pack` is
/// borrowed where it can be (`include_bytes!` of a build script's output): an embedded pack
/// costs no copy.
///
/// ```no_run
/// // build.rs wrote bitonic::cuda::build_pack(&["sm_80", "sm_90"]) to $OUT_DIR/kernels.pack
/// # macro_rules! pack { () => { &[] } }
/// static KERNELS: &[u8] = pack!(); // include_bytes!(concat!(env!("OUT_DIR"), "/kernels.pack"))
/// let held = bitonic::cuda::use_pack(KERNELS)?;
/// eprintln!("{} kernels for {:?}", held.cubin_count, held.archs);
/// # Ok::<(), bitonic::Error>(())
/// ```
pub fn use_pack(pack: impl Into<std::borrow::Cow<'static, [u8]>>) -> crate::Result<PackSummary> {
    precompiled::add(pack.into())
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
/// with the host (src/kernels/abi.rs) and every algorithm's numbers (src/policy/). To compile
/// `kernels/*.cu` with another compiler (`nvcc -I kernels`), pass these. Their `KERNEL_*` names
/// are C preprocessor macros of the kernels, not environment variables: the library reads only
/// `BITONIC_CACHE_DIR` (and `XDG_CACHE_HOME` and `HOME` for the default cache folder).
///
/// ```
/// let defines = bitonic::cuda::kernel_defines(&bitonic::Policy::HOPPER);
/// assert!(defines.iter().any(|(name, value)| *name == "KERNEL_MERGE_TILE" && value == "4096"));
/// ```
pub fn kernel_defines(policy: &crate::Policy) -> Vec<(&'static str, String)> {
    crate::kernels::defines(policy)
}
