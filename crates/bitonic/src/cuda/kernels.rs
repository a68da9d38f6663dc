//! The CUDA C++ sources under `kernels/`, embedded in the binary: one [`KernelModule`] a `.cu`
//! file (one NVRTC compile, one CUDA module) and the headers they include, which NVRTC gets by
//! their include names (so the files also compile unchanged with `nvcc -I kernels` and the
//! `-D` defines of [`super::nvrtc`]).

/// One kernel file: one NVRTC compile, one CUDA module.
#[derive(Debug)]
pub struct KernelModule {
    /// The file name under `kernels/`.
    pub name: &'static str,
    /// Its text.
    pub source: &'static str,
}

macro_rules! embed {
    ($file:literal) => {
        include_str!(concat!("../../kernels/", $file))
    };
}

macro_rules! kernel_module {
    ($file:literal) => {
        KernelModule {
            name: $file,
            source: embed!($file),
        }
    };
}

/// The key maps of the seed versions (keys to sortable words and back).
pub static MAP_KEYS: KernelModule = kernel_module!("map_keys.cu");
/// The report's V0: one launch a network step.
pub static V0: KernelModule = kernel_module!("v0_naive.cu");
/// The report's V1: a block's steps fused, in global memory.
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

/// Every kernel file.
pub static ALL: [&KernelModule; 11] = [
    &MAP_KEYS, &V0, &V1, &V2, &V3, &V4, &V5, &TUNED, &PAIRS, &MERGE, &MULTI,
];

/// Every header, by the name the files include it by.
pub static HEADERS: [(&str, &str); 17] = [
    ("common.cuh", embed!("common.cuh")),
    ("common/types.cuh", embed!("common/types.cuh")),
    ("common/keys.cuh", embed!("common/keys.cuh")),
    ("common/compare.cuh", embed!("common/compare.cuh")),
    ("common/memory.cuh", embed!("common/memory.cuh")),
    ("common/network.cuh", embed!("common/network.cuh")),
    ("common/layout.cuh", embed!("common/layout.cuh")),
    ("tuned/tuning.cuh", embed!("tuned/tuning.cuh")),
    ("tuned/registers.cuh", embed!("tuned/registers.cuh")),
    ("tuned/lanes.cuh", embed!("tuned/lanes.cuh")),
    ("tuned/tile_sort.cuh", embed!("tuned/tile_sort.cuh")),
    ("tuned/cluster.cuh", embed!("tuned/cluster.cuh")),
    ("tuned/pass.cuh", embed!("tuned/pass.cuh")),
    ("merge/path.cuh", embed!("merge/path.cuh")),
    ("merge/tile.cuh", embed!("merge/tile.cuh")),
    ("merge/levels.cuh", embed!("merge/levels.cuh")),
    ("merge/place.cuh", embed!("merge/place.cuh")),
];

/// The names a source `#include "…"`s.
#[cfg(test)]
fn includes(source: &str) -> impl Iterator<Item = &str> {
    source.lines().filter_map(|line| {
        let rest = line.trim().strip_prefix("#include")?.trim();
        rest.strip_prefix('"')?.split('"').next()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_include_names_an_embedded_header() {
        let names: Vec<&str> = HEADERS.iter().map(|(name, _)| *name).collect();
        let texts = ALL.iter().map(|m| (m.name, m.source));
        for (file, text) in texts.chain(HEADERS.iter().copied()) {
            for included in includes(text) {
                assert!(
                    names.contains(&included),
                    "{file} includes {included}, not embedded"
                );
            }
        }
        // And every header is used by some file.
        let all_includes: Vec<&str> = ALL
            .iter()
            .map(|m| m.source)
            .chain(HEADERS.iter().map(|(_, text)| *text))
            .flat_map(includes)
            .collect();
        for name in names {
            assert!(
                all_includes.contains(&name),
                "{name} is embedded but never included"
            );
        }
    }
}
