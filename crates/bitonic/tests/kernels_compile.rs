//! Every kernel file compiles under NVRTC for sm_80 and sm_90: no GPU needed, only libnvrtc.
//! Skips when NVRTC is missing, unless BITONIC_REQUIRE_NVRTC=1 or BITONIC_REQUIRE_GPU=1 (CI
//! sets the first, so a kernel that does not compile fails CI).

mod common;

use bitonic::cuda::{kernels, nvrtc};

#[test]
fn every_kernel_compiles_for_ampere_and_hopper() {
    if !nvrtc::nvrtc_present() {
        let required = common::require_env("BITONIC_REQUIRE_NVRTC")
            || common::require_env("BITONIC_REQUIRE_GPU");
        assert!(
            !required,
            "NVRTC is required but libnvrtc.so could not be loaded"
        );
        eprintln!("SKIPPED every_kernel_compiles_for_ampere_and_hopper: no libnvrtc.so");
        return;
    }
    // A private cache folder, so this really compiles instead of reading an old CUBIN.
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("BITONIC_CACHE_DIR", cache.path());
    for module in kernels::ALL {
        for arch in ["sm_80", "sm_90"] {
            let cubin = nvrtc::compile(module, arch).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                &cubin[..4],
                b"\x7fELF",
                "{} for {arch} is not a CUBIN",
                module.name
            );
        }
    }
    // The second round comes from the disk cache and is identical.
    for module in kernels::ALL {
        let first = std::fs::read_dir(cache.path()).unwrap().count();
        let again = nvrtc::compile(module, "sm_90").unwrap();
        assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), first);
        assert_eq!(&again[..4], b"\x7fELF");
    }
}

#[test]
fn a_broken_kernel_reports_the_compiler_log() {
    if !nvrtc::nvrtc_present() {
        eprintln!("SKIPPED a_broken_kernel_reports_the_compiler_log: no libnvrtc.so");
        return;
    }
    let err = nvrtc::compile_source(
        "broken.cu",
        "__global__ void k() { undeclared_name = 1; }",
        "sm_90",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("broken.cu") && err.contains("undeclared_name"),
        "{err}"
    );
}
