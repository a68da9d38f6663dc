//! Run-time compilation of the kernels with NVRTC, with a disk cache.
//!
//! Each kernel file is compiled straight to a CUBIN for the device's own architecture
//! (`sm_XY`), so the driver never JIT-compiles PTX, and a CUBIN from a newer NVRTC still loads on
//! an older driver. The headers go to NVRTC by their include names ([`super::kernels::HEADERS`]),
//! and the numbers the host shares with the kernels as `-D` defines ([`Define`]). CUBINs are
//! cached on disk under a key made of the source and header texts, the architecture, the
//! options and NVRTC's version; a cache that cannot be written is skipped.

use super::kernels::{KernelModule, HEADERS};
use crate::error::{Error, GpuUnavailable, Result};
use cudarc::nvrtc::{result as nvrtc_result, sys as nvrtc_sys};
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex};

/// NVRTC's version as (major, minor), or why NVRTC cannot be used.
pub(crate) fn version() -> Result<(i32, i32)> {
    if !nvrtc_present() {
        return Err(GpuUnavailable::NoNvrtc.into());
    }
    let (mut major, mut minor) = (0, 0);
    let status = unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) };
    check(status, "nvrtcVersion", "")?;
    Ok((major, minor))
}

/// Whether libnvrtc can be loaded. cudarc panics on first use when it cannot, so ask first.
pub(crate) fn nvrtc_present() -> bool {
    std::panic::catch_unwind(|| unsafe { nvrtc_sys::is_culib_present() }).unwrap_or(false)
}

/// A `-D NAME=VALUE` option: a number the host shares with the kernels.
pub type Define = (&'static str, String);

fn options(arch: &str, defines: &[Define]) -> Vec<String> {
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".into(),
        "--extra-device-vectorization".into(),
    ];
    options.extend(
        defines
            .iter()
            .map(|(name, value)| format!("-D{name}={value}")),
    );
    options
}

/// Compiles one kernel module to a CUBIN for `arch` (such as `"sm_90"`) with `defines`: once
/// per process (several GPUs of one architecture share it), and from the disk cache when an
/// identical compile was done before.
pub(crate) fn compile(module: &KernelModule, arch: &str, defines: &[Define]) -> Result<Vec<u8>> {
    type Compiled = HashMap<(&'static str, Vec<String>), Vec<u8>>;
    static IN_PROCESS: LazyLock<Mutex<Compiled>> = LazyLock::new(Default::default);
    let opts = options(arch, defines);
    // Held across the compile, so that GPUs asking at once wait for one compile.
    let mut done = IN_PROCESS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cubin) = done.get(&(module.name, opts.clone())) {
        return Ok(cubin.clone());
    }
    let cubin = compile_cached(module, arch, &opts)?;
    done.insert((module.name, opts), cubin.clone());
    Ok(cubin)
}

fn compile_cached(module: &KernelModule, arch: &str, opts: &[String]) -> Result<Vec<u8>> {
    let nvrtc = version()?;
    let source = module.source;
    let key = cache_key(source, opts, nvrtc);
    let cached = cache_dir().map(|d| d.join(format!("{}-{arch}-{key:016x}.cubin", module.name)));
    if let Some(bytes) = cached.as_ref().and_then(|p| std::fs::read(p).ok()) {
        return Ok(bytes);
    }
    let cubin = compile_with_options(module.name, source, arch, opts)?;
    if let Some(path) = cached {
        store_atomically(&path, &cubin);
    }
    Ok(cubin)
}

/// Compiles CUDA C++ `source` (named `name` in messages, its includes from the embedded
/// headers) to a CUBIN for `arch`, uncached. A compile error carries NVRTC's log.
#[cfg(test)]
fn compile_source(name: &str, source: &str, arch: &str, defines: &[Define]) -> Result<Vec<u8>> {
    compile_with_options(name, source, arch, &options(arch, defines))
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
    let log = unsafe { nvrtc_result::get_program_log(prog) }
        .map(|raw| {
            unsafe { CStr::from_ptr(raw.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default();
    let cubin = compiled
        .map_err(|e| fail(format!("{e:?}"), log.clone()))
        .and_then(|()| unsafe { get_cubin(prog) }.map_err(|e| fail(e, log)));
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

unsafe fn get_cubin(prog: nvrtc_sys::nvrtcProgram) -> std::result::Result<Vec<u8>, String> {
    let mut size = 0usize;
    let status = unsafe { nvrtc_sys::nvrtcGetCUBINSize(prog, &mut size) };
    if status != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("nvrtcGetCUBINSize: {status:?}"));
    }
    let mut cubin = vec![0u8; size];
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

/// `$BITONIC_CACHE_DIR`, else `$XDG_CACHE_HOME/bitonic`, else `~/.cache/bitonic`; `None` when
/// caching is off (`BITONIC_CACHE_DIR=` set empty) or no folder can be made.
fn cache_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("BITONIC_CACHE_DIR") {
        Some(d) if d.is_empty() => return None,
        Some(d) => PathBuf::from(d),
        None => std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?
            .join("bitonic"),
    };
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

fn store_atomically(path: &std::path::Path, bytes: &[u8]) {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, bytes).is_ok() && std::fs::rename(&tmp, path).is_err() {
        std::fs::remove_file(&tmp).ok();
    }
}

/// FNV-1a over everything that changes the CUBIN (the source, every header, the options and
/// NVRTC's version): stable across runs and Rust versions.
fn cache_key(source: &str, opts: &[String], nvrtc: (i32, i32)) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let nvrtc = format!("nvrtc {}.{}", nvrtc.0, nvrtc.1);
    let headers = HEADERS.iter().flat_map(|(name, text)| [*name, *text]);
    let parts = std::iter::once(source)
        .chain(headers)
        .chain(opts.iter().map(String::as_str))
        .chain([nvrtc.as_str()]);
    for part in parts {
        for byte in part.bytes().chain([0]) {
            hash = (hash ^ byte as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
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
            &[("BITONIC_KEY_INDEX_BYTES", "16".into())],
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
        let opts = |d: &str| options("sm_90", &[("BITONIC_X", d.to_string())]);
        assert_ne!(
            cache_key("a", &opts("1"), (13, 0)),
            cache_key("a", &opts("2"), (13, 0))
        );
        assert_ne!(
            cache_key("a", &opts("1"), (13, 0)),
            cache_key("b", &opts("1"), (13, 0))
        );
        assert_ne!(
            cache_key("a", &opts("1"), (13, 0)),
            cache_key("a", &opts("1"), (13, 1))
        );
    }
}
