//! Run-time compilation of the kernels with NVRTC, with a disk cache.
//!
//! Each kernel module is compiled straight to a CUBIN for the device's own architecture
//! (`sm_XY`), so the driver never JIT-compiles PTX, and a CUBIN from a newer NVRTC still loads on
//! an older driver. The headers go to NVRTC by their include names ([`crate::kernels::HEADERS`]),
//! and the numbers the host shares with the kernels as `-D` defines ([`Define`]).
//!
//! A first use compiles only the modules its sort runs ([`super::Gpu::prepare`]), several at
//! once, each with ptxas's own threads (`--split-compile`). CUBINs are cached on
//! disk under a key made of the source and header texts, the architecture, the options and
//! NVRTC's version; a cache file is written whole and renamed into place (processes may share
//! the folder) and checked when read (a truncated or corrupt one is compiled again). A folder
//! that cannot be written is reported once ([`CompileEvent::CacheUnwritable`]) and skipped.

use crate::error::{Error, GpuUnavailable, Result};
use crate::kernels::{KernelModule, HEADERS};
use cudarc::nvrtc::{result as nvrtc_result, sys as nvrtc_sys};
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, RwLock};
use std::time::Instant;

/// NVRTC's version as (major, minor), or why NVRTC cannot be used.
pub(crate) fn version() -> Result<(i32, i32)> {
    if !nvrtc_present() {
        return Err(GpuUnavailable::NoNvrtc.into());
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: out-pointers to locals; the library is there (asked above).
    let status = unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) };
    check(status, "nvrtcVersion", "")?;
    Ok((major, minor))
}

/// Whether libnvrtc can be loaded. cudarc panics on first use when it cannot, so ask first.
pub(crate) fn nvrtc_present() -> bool {
    std::panic::catch_unwind(|| {
        // SAFETY: only tries to load the library; nothing is called through it.
        unsafe { nvrtc_sys::is_culib_present() }
    })
    .unwrap_or(false)
}

/// A `-D NAME=VALUE` option: a number the host shares with the kernels.
pub type Define = (&'static str, String);

/// What the kernel compiler is doing, as told to the function given to
/// [`crate::cuda::on_compile`]: a program shows it (compiling takes seconds, once) and keeps
/// it out of the time it reports for a sort.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum CompileEvent {
    /// `module` was not in the cache and is being compiled for `arch`; `cache` is the folder
    /// its CUBIN will be kept in (`None`: caching is off or impossible).
    Started {
        /// The module's name ([`KernelModule::name`]).
        module: String,
        /// Such as `sm_90`.
        arch: String,
        /// The cache folder.
        cache: Option<PathBuf>,
    },
    /// `module` compiled in `seconds`.
    Finished {
        /// The module's name.
        module: String,
        /// Such as `sm_90`.
        arch: String,
        /// NVRTC's wall time.
        seconds: f64,
    },
    /// The cache file at `path` was truncated or corrupt: the module was compiled again.
    CacheCorrupt {
        /// The file.
        path: PathBuf,
    },
    /// The cache folder cannot be made or written: kernels compile again in every process.
    /// Told once a process.
    CacheUnwritable {
        /// The folder.
        dir: PathBuf,
        /// Why.
        error: String,
    },
}

type Observer = Box<dyn Fn(&CompileEvent) + Send + Sync>;
static OBSERVER: RwLock<Option<Observer>> = RwLock::new(None);

/// Tells `observer` of every [`CompileEvent`] from now on (in place of any earlier one).
pub(crate) fn set_observer(observer: Option<Observer>) {
    *OBSERVER.write().unwrap_or_else(|e| e.into_inner()) = observer;
}

fn tell(event: CompileEvent) {
    if let Some(observer) = OBSERVER.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        observer(&event);
    }
}

fn options(module: &KernelModule, arch: &str, defines: &[Define]) -> Vec<String> {
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".into(),
        "--extra-device-vectorization".into(),
        // ptxas assembles the module's functions on all cores: the same machine code, sooner
        // (NVVM's own --split-compile changed the code of some kernels: not used).
        "-Xptxas=--split-compile=0".into(),
    ];
    options.extend(
        module
            .defines()
            .into_iter()
            .map(|define| format!("-D{define}")),
    );
    options.extend(
        defines
            .iter()
            .map(|(name, value)| format!("-D{name}={value}")),
    );
    options
}

/// Where a CUBIN came from.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Compiled by NVRTC now.
    Compiled,
    /// Read from the disk cache.
    DiskCache,
    /// Compiled or read earlier in this process.
    Process,
    /// Taken from a pack of kernels compiled ahead of time ([`super::use_pack`]).
    Precompiled,
}

/// One module's CUBIN, where it came from and how long getting it took.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The CUBIN.
    pub cubin: Arc<Vec<u8>>,
    /// Where it came from.
    pub origin: Origin,
    /// Wall seconds spent getting it (compiling, or reading the cache).
    pub seconds: f64,
}

/// One slot a (module, options): the first caller compiles while later ones wait on its lock,
/// and callers for other modules go on at once.
type Slot = Arc<Mutex<Option<Arc<Vec<u8>>>>>;

/// Compiles one kernel module to a CUBIN for `arch` (such as `"sm_90"`) with `defines`: once
/// per process (several GPUs of one architecture share it), and from the disk cache when an
/// identical compile was done before. Safe to call from several threads at once.
pub(crate) fn compile(module: &KernelModule, arch: &str, defines: &[Define]) -> Result<Compiled> {
    static IN_PROCESS: LazyLock<Mutex<HashMap<Vec<String>, Slot>>> =
        LazyLock::new(Default::default);
    let opts = options(module, arch, defines);
    let mut key = opts.clone();
    key.push(module.file.to_string());
    let slot = IN_PROCESS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key)
        .or_default()
        .clone();
    let started = Instant::now();
    let mut done = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cubin) = done.as_ref() {
        let seconds = started.elapsed().as_secs_f64();
        return Ok(Compiled {
            cubin: cubin.clone(),
            origin: Origin::Process,
            seconds,
        });
    }
    let packed = super::precompiled::find(arch, |candidate| pack_key(module, candidate, defines));
    let (cubin, origin) = match packed {
        Some(cubin) => (cubin, Origin::Precompiled),
        None => compile_cached(module, arch, &opts, cache_dir())?,
    };
    let cubin = Arc::new(cubin);
    *done = Some(cubin.clone());
    let seconds = started.elapsed().as_secs_f64();
    Ok(Compiled {
        cubin,
        origin,
        seconds,
    })
}

/// `module`'s CUBIN for `arch` from the disk cache or NVRTC, never from a pack nor this
/// process's earlier calls: what a pack is built from ([`super::build_pack`]), and what a
/// packed CUBIN the driver refuses is replaced by ([`super::Gpu`]'s module loading).
pub(crate) fn compile_unpacked(
    module: &KernelModule,
    arch: &str,
    defines: &[Define],
) -> Result<Vec<u8>> {
    let opts = options(module, arch, defines);
    compile_cached(module, arch, &opts, cache_dir()).map(|(cubin, _)| cubin)
}

/// [`compile`] for each of `modules`, side by side on rayon's threads (one a core, so that
/// compiling every module at once does not hold one NVRTC's memory a module): a first use
/// waits for its slowest module, not for their sum.
pub(crate) fn compile_side_by_side(
    modules: &[&KernelModule],
    arch: &str,
    defines: &[Define],
) -> Result<Vec<Compiled>> {
    use rayon::prelude::*;
    modules
        .par_iter()
        .map(|module| compile(module, arch, defines))
        .collect()
}

/// The CUBIN from the cache folder `dir` when a whole one is there, else compiled (and stored
/// there).
fn compile_cached(
    module: &KernelModule,
    arch: &str,
    opts: &[String],
    dir: Option<PathBuf>,
) -> Result<(Vec<u8>, Origin)> {
    let nvrtc = version()?;
    let name = module.name();
    let key = cache_key(module.source, opts, Some(nvrtc));
    let cached = dir
        .as_ref()
        .map(|d| d.join(format!("{name}-{arch}-{key:016x}.cubin")));
    if let Some(path) = &cached {
        match std::fs::read(path) {
            Ok(bytes) => match unwrap_cache_file(&bytes) {
                Some(cubin) => return Ok((cubin.to_vec(), Origin::DiskCache)),
                None => tell(CompileEvent::CacheCorrupt { path: path.clone() }),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => tell(CompileEvent::CacheCorrupt { path: path.clone() }),
        }
    }
    tell(CompileEvent::Started {
        module: name.clone(),
        arch: arch.to_string(),
        cache: dir.clone(),
    });
    let started = Instant::now();
    let cubin = compile_with_options(&name, module.source, arch, opts)?;
    tell(CompileEvent::Finished {
        module: name,
        arch: arch.to_string(),
        seconds: started.elapsed().as_secs_f64(),
    });
    if let (Some(path), Some(dir)) = (cached, dir) {
        if let Err(e) = store_atomically(&path, &wrap_cache_file(&cubin)) {
            cache_unwritable(&dir, &e);
        }
    }
    Ok((cubin, Origin::Compiled))
}

/// The key of `module`'s CUBIN for `arch` with `defines` in a pack of kernels compiled ahead
/// of time (super::precompiled).
pub(crate) fn pack_key(module: &KernelModule, arch: &str, defines: &[Define]) -> u64 {
    cache_key(module.source, &options(module, arch, defines), None)
}

/// Compiles CUDA C++ `source` (named `name` in messages, its includes from the embedded
/// headers) to a CUBIN for `arch`, uncached. A compile error carries NVRTC's log.
#[cfg(test)]
fn compile_source(
    name: &str,
    source: &'static str,
    arch: &str,
    defines: &[Define],
) -> Result<Vec<u8>> {
    let module = KernelModule {
        file: "test.cu",
        part: None,
        tile_bits: None,
        source,
    };
    compile_with_options(name, source, arch, &options(&module, arch, defines))
}

fn compile_with_options(name: &str, source: &str, arch: &str, opts: &[String]) -> Result<Vec<u8>> {
    version()?;
    let fail = |message: String, log: String| Error::Compile {
        module: name.to_string(),
        arch: arch.to_string(),
        message,
        log,
    };
    let src = CString::new(source).map_err(|e| fail(e.to_string(), String::new()))?;
    let file = CString::new(name).expect("module names have no NUL");
    let prog = create_program(&src, &file).map_err(|e| fail(e, String::new()))?;
    // SAFETY: `prog` is a live program; the options are plain strings.
    let compiled = unsafe { nvrtc_result::compile_program(prog, opts) };
    // SAFETY: `prog` is a live program, compiled (or failed to) above.
    let log = unsafe { nvrtc_result::get_program_log(prog) }
        .map(|raw| {
            // SAFETY: NVRTC's log is NUL-terminated, and `raw` holds all of it.
            unsafe { CStr::from_ptr(raw.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default();
    let cubin = compiled
        .map_err(|e| fail(format!("{e:?}"), log.clone()))
        // SAFETY: `prog` is live and compiled.
        .and_then(|()| unsafe { get_cubin(prog) }.map_err(|e| fail(e, log)));
    // SAFETY: `prog` is live, and not used after this.
    unsafe { nvrtc_result::destroy_program(prog) }.ok();
    cubin
}

/// A program of `source` with every embedded header available by its include name (cudarc's
/// `create_program` passes no headers).
fn create_program(
    source: &CStr,
    name: &CStr,
) -> std::result::Result<nvrtc_sys::nvrtcProgram, String> {
    let texts: Vec<CString> = HEADERS
        .iter()
        .map(|(_, text)| CString::new(*text).expect("headers have no NUL"))
        .collect();
    let names: Vec<CString> = HEADERS
        .iter()
        .map(|(name, _)| CString::new(*name).expect("header names have no NUL"))
        .collect();
    let text_ptrs: Vec<*const std::ffi::c_char> = texts.iter().map(|t| t.as_ptr()).collect();
    let name_ptrs: Vec<*const std::ffi::c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let mut prog = std::mem::MaybeUninit::uninit();
    // SAFETY: every pointer is a NUL-terminated string that lives until the call returns
    // (NVRTC copies them), and the two arrays have one entry a header.
    let status = unsafe {
        nvrtc_sys::nvrtcCreateProgram(
            prog.as_mut_ptr(),
            source.as_ptr(),
            name.as_ptr(),
            HEADERS.len() as i32,
            text_ptrs.as_ptr(),
            name_ptrs.as_ptr(),
        )
    };
    if status != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("nvrtcCreateProgram: {status:?}"));
    }
    // SAFETY: initialised by the successful call.
    Ok(unsafe { prog.assume_init() })
}

/// The CUBIN of a compiled program.
///
/// # Safety
/// `prog` is a live program that compiled.
unsafe fn get_cubin(prog: nvrtc_sys::nvrtcProgram) -> std::result::Result<Vec<u8>, String> {
    let mut size = 0usize;
    // SAFETY: the caller's program; an out-pointer to a local.
    let status = unsafe { nvrtc_sys::nvrtcGetCUBINSize(prog, &mut size) };
    if status != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("nvrtcGetCUBINSize: {status:?}"));
    }
    let mut cubin = vec![0u8; size];
    // SAFETY: `cubin` holds the size NVRTC gave.
    let status = unsafe { nvrtc_sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast()) };
    if status != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("nvrtcGetCUBIN: {status:?}"));
    }
    Ok(cubin)
}

fn check(status: nvrtc_sys::nvrtcResult, call: &str, module: &str) -> Result<()> {
    if status == nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(Error::Compile {
            module: module.to_string(),
            arch: String::new(),
            message: format!("{call}: {status:?}"),
            log: String::new(),
        })
    }
}

/// `$BITONIC_CACHE_DIR`, else `$XDG_CACHE_HOME/bitonic`, else `~/.cache/bitonic`, made if
/// missing; `None` when caching is off (`BITONIC_CACHE_DIR=` set empty), there is no home, or
/// the folder cannot be made (told once: [`CompileEvent::CacheUnwritable`]).
pub(crate) fn cache_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("BITONIC_CACHE_DIR") {
        Some(d) if d.is_empty() => return None,
        Some(d) => PathBuf::from(d),
        None => std::env::var_os("XDG_CACHE_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?
            .join("bitonic"),
    };
    match std::fs::create_dir_all(&dir) {
        Ok(()) => Some(dir),
        Err(e) => {
            cache_unwritable(&dir, &e);
            None
        }
    }
}

fn cache_unwritable(dir: &Path, error: &std::io::Error) {
    static TOLD: AtomicBool = AtomicBool::new(false);
    if !TOLD.swap(true, Ordering::Relaxed) {
        tell(CompileEvent::CacheUnwritable {
            dir: dir.to_path_buf(),
            error: error.to_string(),
        });
    }
}

/// Writes `bytes` to a temporary file beside `path` and renames it into place, so that a
/// reader (another process) sees the whole file or none; the temporary file is removed when
/// anything fails.
fn store_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let unique = COUNT.fetch_add(1, Ordering::Relaxed);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.{}.{unique}.tmp", std::process::id()));
    let result = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        std::fs::remove_file(&tmp).ok();
    }
    result
}

/// A cache file: a magic tag, the CUBIN's length and hash (FNV-1a), then the CUBIN. A file
/// cut short or changed fails [`unwrap_cache_file`].
const CACHE_MAGIC: &[u8; 8] = b"BTNCUBN1";

fn wrap_cache_file(cubin: &[u8]) -> Vec<u8> {
    let mut file = Vec::with_capacity(cubin.len() + 24);
    file.extend_from_slice(CACHE_MAGIC);
    file.extend_from_slice(&(cubin.len() as u64).to_le_bytes());
    file.extend_from_slice(&fnv1a([cubin]).to_le_bytes());
    file.extend_from_slice(cubin);
    file
}

fn unwrap_cache_file(file: &[u8]) -> Option<&[u8]> {
    let (magic, rest) = file.split_first_chunk::<8>()?;
    let (len, rest) = rest.split_first_chunk::<8>()?;
    let (hash, cubin) = rest.split_first_chunk::<8>()?;
    let whole = magic == CACHE_MAGIC
        && u64::from_le_bytes(*len) == cubin.len() as u64
        && u64::from_le_bytes(*hash) == fnv1a([cubin]);
    whole.then_some(cubin)
}

fn fnv1a<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for part in parts {
        for &byte in part {
            hash = (hash ^ byte as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// FNV-1a over everything that changes the CUBIN (the source, every header, the options and,
/// for the disk cache, NVRTC's version): stable across runs and Rust versions. A pack's key
/// has no version ([`pack_key`]): it is read with no NVRTC at hand.
fn cache_key(source: &str, opts: &[String], nvrtc: Option<(i32, i32)>) -> u64 {
    let nvrtc = nvrtc.map(|(major, minor)| format!("nvrtc {major}.{minor}"));
    let headers = HEADERS.iter().flat_map(|(name, text)| [*name, *text]);
    let parts = std::iter::once(source)
        .chain(headers)
        .chain(opts.iter().map(String::as_str))
        .chain(nvrtc.as_deref());
    // Each part ends with a NUL, so that moving text from one part to the next changes the key.
    fnv1a(parts.flat_map(|part| [part.as_bytes(), b"\0"]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_kernel_reports_the_compiler_log() {
        if version().is_err() {
            eprintln!("SKIPPED a_broken_kernel_reports_the_compiler_log: no libnvrtc.so");
            return;
        }
        let source = "#include \"common/types.cuh\"\n__global__ void k() { undeclared_name = 1; }";
        let err = compile_source(
            "broken.cu",
            source,
            "sm_90",
            &[("KERNEL_KEY_INDEX_BYTES", "16".into())],
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("broken.cu") && err.contains("undeclared_name"),
            "{err}"
        );
    }

    #[test]
    fn the_cache_key_covers_options_and_source() {
        let module = &crate::kernels::MAP_KEYS;
        let opts = |d: &str| options(module, "sm_90", &[("KERNEL_X", d.to_string())]);
        assert_ne!(
            cache_key("a", &opts("1"), Some((13, 0))),
            cache_key("a", &opts("2"), Some((13, 0)))
        );
        assert_ne!(
            cache_key("a", &opts("1"), Some((13, 0))),
            cache_key("b", &opts("1"), Some((13, 0)))
        );
        assert_ne!(
            cache_key("a", &opts("1"), Some((13, 0))),
            cache_key("a", &opts("1"), Some((13, 1)))
        );
        // A pack's key (no NVRTC version) is never a disk cache file's, and covers the
        // architecture as the options name it.
        assert_ne!(
            cache_key("a", &opts("1"), None),
            cache_key("a", &opts("1"), Some((13, 0)))
        );
        let defines = [("KERNEL_X", "1".to_string())];
        assert_ne!(
            pack_key(module, "sm_80", &defines),
            pack_key(module, "sm_90", &defines)
        );
        assert_eq!(
            pack_key(module, "sm_90", &defines),
            cache_key(module.source, &opts("1"), None)
        );
    }

    #[test]
    fn a_cache_file_cut_short_or_changed_is_refused() {
        let cubin: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        let file = wrap_cache_file(&cubin);
        assert_eq!(unwrap_cache_file(&file), Some(&cubin[..]));
        for cut in [0, 7, 8, 23, 24, file.len() - 1] {
            assert_eq!(unwrap_cache_file(&file[..cut]), None, "cut at {cut}");
        }
        let mut changed = file.clone();
        changed[500] ^= 1;
        assert_eq!(unwrap_cache_file(&changed), None);
        let mut longer = file;
        longer.push(0);
        assert_eq!(unwrap_cache_file(&longer), None);
    }

    #[test]
    fn the_cache_is_written_whole_and_leaves_no_temporary_file() {
        let dir = tempdir("store");
        let path = dir.join("a.cubin");
        store_atomically(&path, b"one").unwrap();
        store_atomically(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["a.cubin"]);
        // A folder that cannot take the file: an error, and nothing left behind.
        let missing = dir.join("missing").join("b.cubin");
        assert!(store_atomically(&missing, b"x").is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_corrupt_cache_file_is_compiled_again_and_threads_may_compile_at_once() {
        if version().is_err() {
            eprintln!("SKIPPED a_corrupt_cache_file_is_compiled_again_and_threads_may_compile_at_once: no libnvrtc.so");
            return;
        }
        let dir = tempdir("corrupt");
        let module = &crate::kernels::MAP_KEYS;
        let opts = options(
            module,
            "sm_90",
            &crate::cuda::kernel_defines(&crate::Policy::HOPPER),
        );
        let compile = || compile_cached(module, "sm_90", &opts, Some(dir.clone())).unwrap();
        let (first, origin) = compile();
        assert_eq!(origin, Origin::Compiled);
        let (again, origin) = compile();
        assert_eq!((again == first, origin), (true, Origin::DiskCache));
        let files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        // Truncated, then garbage: each is compiled again, and the file repaired.
        let whole = std::fs::read(&files[0]).unwrap();
        for broken in [whole[..whole.len() / 2].to_vec(), vec![0xff; 64]] {
            std::fs::write(&files[0], broken).unwrap();
            let (cubin, origin) = compile();
            assert_eq!((cubin == first, origin), (true, Origin::Compiled));
            assert_eq!(std::fs::read(&files[0]).unwrap(), whole);
        }
        // Several threads at once, with a cold folder: each gets the same CUBIN.
        std::fs::remove_file(&files[0]).unwrap();
        let cubins: Vec<Vec<u8>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4).map(|_| s.spawn(|| compile().0)).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(cubins.iter().all(|c| *c == first));
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "no temporary file is left: {names:?}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn an_unwritable_cache_folder_still_compiles() {
        if version().is_err() {
            eprintln!("SKIPPED an_unwritable_cache_folder_still_compiles: no libnvrtc.so");
            return;
        }
        // A file where the folder should be: nothing can be stored in it.
        let dir = tempdir("unwritable");
        let blocked = dir.join("not-a-folder");
        std::fs::write(&blocked, b"").unwrap();
        let module = &crate::kernels::MAP_KEYS;
        let opts = options(
            module,
            "sm_90",
            &crate::cuda::kernel_defines(&crate::Policy::HOPPER),
        );
        let (cubin, origin) = compile_cached(module, "sm_90", &opts, Some(blocked)).unwrap();
        assert_eq!(origin, Origin::Compiled);
        assert!(!cubin.is_empty());
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A fresh folder under the system's temporary folder.
    fn tempdir(tag: &str) -> PathBuf {
        static COUNT: AtomicU64 = AtomicU64::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("bitonic-nvrtc-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
