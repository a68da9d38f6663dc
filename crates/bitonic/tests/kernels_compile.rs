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
    // A private cache folder, so this really compiles instead of reading an old CUBIN.
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("BITONIC_CACHE_DIR", cache.path());
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
    // The second round comes from the disk cache: no new file, the same CUBINs.
    let files = std::fs::read_dir(cache.path()).unwrap().count();
    let first = cuda::compile_all(cuda::kernel_modules(), "sm_90", &Policy::HOPPER).unwrap();
    let again = cuda::compile_all(cuda::kernel_modules(), "sm_90", &Policy::HOPPER).unwrap();
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), files);
    let cubins = |modules: &[cuda::CompiledModule]| -> Vec<Vec<u8>> {
        modules.iter().map(|m| m.cubin.to_vec()).collect()
    };
    assert_eq!(cubins(&first), cubins(&again));
}
