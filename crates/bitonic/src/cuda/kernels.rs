//! The CUDA C++ sources under `kernels/`, embedded in the binary, as [`KernelModule`]s: a
//! `.cu` file, or one *part* of it (one NVRTC compile, one CUDA module each), and the headers
//! they include, which NVRTC gets by their include names (so the files also compile unchanged
//! with `nvcc -I kernels` and the `-D` defines of [`super::nvrtc`]).
//!
//! The large files come in parts, so that a sort compiles only the kernels it runs: each
//! tuned kernel alone takes seconds of NVRTC's time (docs/results/cold-start/).

/// One NVRTC compile and one CUDA module: a kernel file, or one part of it.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct KernelModule {
    /// The file name under `kernels/`.
    pub file: &'static str,
    /// The part of the file this module compiles (the file sees `BITONIC_PART_<PART>`
    /// defined), or `None` for the whole file.
    pub part: Option<&'static str>,
    /// The file's text.
    pub source: &'static str,
}

impl KernelModule {
    /// `file` or `file[part]`: the module's name in messages and cache files.
    pub fn name(&self) -> String {
        match self.part {
            Some(part) => format!("{}[{part}]", self.file),
            None => self.file.to_string(),
        }
    }

    /// The define that selects the part: `BITONIC_PART_U32` for part `u32`.
    pub(crate) fn part_define(&self) -> Option<String> {
        self.part
            .map(|part| format!("BITONIC_PART_{}", part.to_ascii_uppercase()))
    }
}

macro_rules! embed {
    ($file:literal) => {
        include_str!(concat!("../../kernels/", $file))
    };
}

macro_rules! kernel_module {
    ($file:literal) => {
        KernelModule {
            file: $file,
            part: None,
            source: embed!($file),
        }
    };
    ($file:literal, $part:literal) => {
        KernelModule {
            file: $file,
            part: Some($part),
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
/// The tuned network's pass on u32 words, 32 a thread.
pub static TUNED_U32: KernelModule = kernel_module!("tuned.cu", "u32");
/// The tuned pass on u32 words, 16 a thread: small inputs ([`crate::Policy::narrow_small_u32`]).
pub static TUNED_U32_NARROW: KernelModule = kernel_module!("tuned.cu", "u32_narrow");
/// The tuned pass on u64 words.
pub static TUNED_U64: KernelModule = kernel_module!("tuned.cu", "u64");
/// The tuned pass on 16-byte key-index pairs.
pub static TUNED_KV64: KernelModule = kernel_module!("tuned.cu", "kv64");
/// Key-index pairs: pack, unpack, gather.
pub static PAIRS: KernelModule = kernel_module!("pairs.cu");
/// Merge paths, tile merges and merge levels of words alone.
pub static MERGE_WORDS: KernelModule = kernel_module!("merge.cu", "words");
/// Value placement and key-value merge levels, u32 keys with u32 values.
pub static MERGE_KV_U32_U32: KernelModule = kernel_module!("merge.cu", "kv_u32_u32");
/// The same, u32 keys with u64 values.
pub static MERGE_KV_U32_U64: KernelModule = kernel_module!("merge.cu", "kv_u32_u64");
/// The same, u64 keys with u32 values.
pub static MERGE_KV_U64_U32: KernelModule = kernel_module!("merge.cu", "kv_u64_u32");
/// The same, u64 keys with u64 values.
pub static MERGE_KV_U64_U64: KernelModule = kernel_module!("merge.cu", "kv_u64_u64");
/// The multi-GPU sort's kernels.
pub static MULTI: KernelModule = kernel_module!("multi.cu");

/// Every kernel module.
pub static ALL: [&KernelModule; 18] = [
    &MAP_KEYS,
    &V0,
    &V1,
    &V2,
    &V3,
    &V4,
    &V5,
    &TUNED_U32,
    &TUNED_U32_NARROW,
    &TUNED_U64,
    &TUNED_KV64,
    &PAIRS,
    &MERGE_WORDS,
    &MERGE_KV_U32_U32,
    &MERGE_KV_U32_U64,
    &MERGE_KV_U64_U32,
    &MERGE_KV_U64_U64,
    &MULTI,
];

/// The tuned pass on words `W` (4 or 8 bytes, or a 16-byte key-index pair), 32 or 16 a
/// thread.
pub(crate) fn tuned<W>() -> &'static KernelModule {
    match std::mem::size_of::<W>() {
        4 => &TUNED_U32,
        8 => &TUNED_U64,
        _ => &TUNED_KV64,
    }
}

/// The key-value kernels of 4- or 8-byte keys `K` with 4- or 8-byte values `V`.
pub(crate) fn merge_kv<K, V>() -> &'static KernelModule {
    match (std::mem::size_of::<K>(), std::mem::size_of::<V>()) {
        (4, 4) => &MERGE_KV_U32_U32,
        (4, _) => &MERGE_KV_U32_U64,
        (_, 4) => &MERGE_KV_U64_U32,
        _ => &MERGE_KV_U64_U64,
    }
}

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
        let texts = ALL.iter().map(|m| (m.file, m.source));
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
