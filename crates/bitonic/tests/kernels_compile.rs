//! Every kernel module compiles under NVRTC for sm_80 and sm_90, with the policy of each: no
//! GPU needed, only libnvrtc. Ignored when NVRTC is missing, unless BITONIC_REQUIRE_NVRTC=1 or
//! BITONIC_REQUIRE_GPU=1 (CI sets the first, so a kernel that does not compile fails CI).

mod common;

use bitonic::{cuda, Policy};
use common::harness::{self, tests, Needs};

fn main() {
    harness::run(tests![Needs::Nvrtc => every_kernel_compiles_for_ampere_and_hopper]);
}

fn every_kernel_compiles_for_ampere_and_hopper() {
    if cuda::nvrtc_version().is_err() {
        let required = common::require_env("BITONIC_REQUIRE_NVRTC")
            || common::require_env("BITONIC_REQUIRE_GPU");
        assert!(
            !required,
            "NVRTC is required but libnvrtc.so could not be loaded"
        );
        eprintln!("SKIPPED every_kernel_compiles_for_ampere_and_hopper: no libnvrtc.so");
        return;
    }
    // The process's cache folder: a CUBIN found there was compiled from these very sources
    // and options by this NVRTC (its key covers them all), so a hit proves the compile as well;
    // CI's clippy run of the Python crate fills it (python/build.rs packs the same modules).
    for (arch, major) in [("sm_80", 8), ("sm_90", 9)] {
        let policy = Policy::for_compute_capability(major, 0);
        let modules = cuda::compile_all(cuda::kernel_modules(), arch, &policy)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(modules.len(), cuda::kernel_modules().len(), "every module");
        for module in &modules {
            assert_eq!(
                &module.cubin[..4],
                b"\x7fELF",
                "{} for {arch} is not a CUBIN",
                module.name
            );
        }
    }
    // Another round comes from the disk cache (or this process): no new file, the same CUBINs.
    let files = || cuda::cache_dir().map(|dir| std::fs::read_dir(dir).unwrap().count());
    let before = files();
    let first = cuda::compile_all(cuda::kernel_modules(), "sm_90", &Policy::HOPPER).unwrap();
    let again = cuda::compile_all(cuda::kernel_modules(), "sm_90", &Policy::HOPPER).unwrap();
    assert_eq!(files(), before);
    let cubins = |modules: &[cuda::CompiledModule]| -> Vec<Vec<u8>> {
        modules.iter().map(|m| m.cubin.to_vec()).collect()
    };
    assert_eq!(cubins(&first), cubins(&again));
}
