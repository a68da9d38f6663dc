//! The CUDA C++ sources under `kernels/`, embedded in the binary.
//!
//! Every `.cu` file starts with `#include "common.cuh"`; NVRTC gets the header spliced in place
//! of that line, so the files also compile unchanged with `nvcc -I kernels`.

/// One kernel file: one NVRTC compile, one CUDA module.
#[derive(Debug)]
pub struct KernelModule {
    /// The file name under `kernels/`.
    pub name: &'static str,
    source: &'static str,
}

const COMMON: &str = include_str!("../../kernels/common.cuh");
const INCLUDE_LINE: &str = "#include \"common.cuh\"";

macro_rules! kernel_module {
    ($file:literal) => {
        KernelModule {
            name: $file,
            source: include_str!(concat!("../../kernels/", $file)),
        }
    };
}

/// The key maps of the seed versions (keys to sortable words and back).
pub static MAP_KEYS: KernelModule = kernel_module!("map_keys.cu");
/// The report's V0: one launch a network step.
pub static V0: KernelModule = kernel_module!("v0_naive.cu");
/// The report's V1: block steps fused, in global memory.
pub static V1: KernelModule = kernel_module!("v1_fused.cu");
/// The report's V2: the block's tile in shared memory.
pub static V2: KernelModule = kernel_module!("v2_shared.cu");
/// The report's V3: warp shuffles for small strides.
pub static V3: KernelModule = kernel_module!("v3_warp_shuffle.cu");
/// The report's V4: a thread a compare-exchange.
pub static V4: KernelModule = kernel_module!("v4_half_threads.cu");
/// The report's V5: no shared-memory bank conflicts.
pub static V5: KernelModule = kernel_module!("v5_conflict_free.cu");
/// The tuned network's passes.
pub static TUNED: KernelModule = kernel_module!("tuned.cu");
/// Key-index pairs: pack, unpack, gather.
pub static PAIRS: KernelModule = kernel_module!("pairs.cu");
/// Merge paths, tile merges, value placement and key-value merge levels.
pub static MERGE: KernelModule = kernel_module!("merge.cu");
/// The multi-GPU sort's kernels.
pub static MULTI: KernelModule = kernel_module!("multi.cu");

/// Every kernel file, for the compile-everything test.
pub static ALL: [&KernelModule; 11] = [
    &MAP_KEYS, &V0, &V1, &V2, &V3, &V4, &V5, &TUNED, &PAIRS, &MERGE, &MULTI,
];

impl KernelModule {
    /// The source NVRTC compiles: the file with `common.cuh` spliced in.
    pub fn full_source(&self) -> String {
        assert!(
            self.source.contains(INCLUDE_LINE),
            "{} must include common.cuh",
            self.name
        );
        self.source.replacen(INCLUDE_LINE, COMMON, 1)
    }
}
