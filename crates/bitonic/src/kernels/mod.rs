//! The CUDA C++ sources under `kernels/`, embedded in the binary, as [`KernelModule`]s: a
//! `.cu` file, or one *part* of it (one NVRTC compile, one CUDA module each), and the headers
//! they include, which NVRTC gets by their include names (so the files also compile unchanged
//! with `nvcc -I kernels` and the `-D` defines of [`crate::cuda::kernel_defines`]). [`abi`]
//! holds what the host shares with them.
//!
//! The large files come in parts, so that a sort compiles only the kernels it runs: each
//! tuned kernel alone takes seconds of NVRTC's time (docs/notes/cold-start.md).

pub(crate) mod abi;

/// One NVRTC compile and one CUDA module: a kernel file, or one part of it.
#[derive(PartialEq, Eq, Hash)]
pub struct KernelModule {
    /// The file name under `kernels/`.
    pub file: &'static str,
    /// The part of the file this module compiles (the file sees `KERNEL_PART_<PART>`
    /// defined), or `None` for the whole file.
    pub part: Option<&'static str>,
    /// For the tuned kernels, log2 of the keys of the one tile size the module is compiled
    /// for (`KERNEL_TUNED_TILE_BITS`): it holds only that tile's register groups.
    pub tile_bits: Option<u32>,
    /// The file's text.
    pub source: &'static str,
}

impl KernelModule {
    /// `file`, `file[part]` or `file[part, 2^tile_bits]`: the module's name in messages and
    /// cache files.
    pub fn name(&self) -> String {
        match (self.part, self.tile_bits) {
            (Some(part), Some(bits)) => format!("{}[{part}, 2^{bits}]", self.file),
            (Some(part), None) => format!("{}[{part}]", self.file),
            _ => self.file.to_string(),
        }
    }

    /// The defines that select the part and the tile: `KERNEL_PART_U32` for part `u32`,
    /// `KERNEL_TUNED_TILE_BITS=14` for tiles of 2^14 keys.
    pub(crate) fn defines(&self) -> Vec<String> {
        let part = self
            .part
            .map(|part| format!("KERNEL_PART_{}", part.to_ascii_uppercase()));
        let tile = self
            .tile_bits
            .map(|bits| format!("KERNEL_TUNED_TILE_BITS={bits}"));
        part.into_iter().chain(tile).collect()
    }
}

/// Debug names the module (`tuned.cu[u32, 2^14]`) and leaves its source out, so that a plan's
/// Debug stays readable.
impl std::fmt::Debug for KernelModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KernelModule({})", self.name())
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
            tile_bits: None,
            source: embed!($file),
        }
    };
    ($file:literal, $part:literal) => {
        KernelModule {
            file: $file,
            part: Some($part),
            tile_bits: None,
            source: embed!($file),
        }
    };
}

/// The modules of one tuned kernel, one a tile size: from one warp's keys (2^(E_BITS+5)) to
/// the most a block of the kernel holds.
macro_rules! tuned_modules {
    ($part:literal, $($bits:literal),*) => {
        [$(KernelModule {
            file: "tuned.cu",
            part: Some($part),
            tile_bits: Some($bits),
            source: embed!("tuned.cu"),
        }),*]
    };
}

/// The key maps: keys to sortable words and back (the seed versions), and 16-bit keys widened
/// to their u32 words and narrowed back.
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
/// The tuned network's pass on u32 words, 32 a thread (tiles of 2^10 to 2^15 keys).
pub static TUNED_U32: [KernelModule; 6] = tuned_modules!("u32", 10, 11, 12, 13, 14, 15);
/// The tuned pass on u32 words, 16 a thread (2^9 to 2^14): small inputs
/// ([`crate::policy::SortPolicy::narrow_small_u32`]).
pub static TUNED_U32_NARROW: [KernelModule; 6] =
    tuned_modules!("u32_narrow", 9, 10, 11, 12, 13, 14);
/// The tuned pass on u64 words, 16 a thread (2^9 to 2^14).
pub static TUNED_U64: [KernelModule; 6] = tuned_modules!("u64", 9, 10, 11, 12, 13, 14);
/// The tuned pass on 16-byte key-index pairs, 16 a thread in at most 256 threads (2^9 to 2^12).
pub static TUNED_KV64: [KernelModule; 4] = tuned_modules!("kv64", 9, 10, 11, 12);
/// The values of a key-value sort of rows, gathered by the indices of the rows' argsort.
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
/// Top-k selection of 16-bit keys, read as they are (u64 composites).
pub static TOPK_U16: KernelModule = kernel_module!("topk.cu", "u16");
/// Top-k selection of 32-bit keys (u64 composites).
pub static TOPK_U32: KernelModule = kernel_module!("topk.cu", "u32");
/// Top-k selection of 64-bit keys (16-byte composites).
pub static TOPK_U64: KernelModule = kernel_module!("topk.cu", "u64");
/// The top-k warp sort of rows of up to 1,024 16-bit keys (src/plan/topk/mod.rs).
pub static TOPK_WARP_U16: KernelModule = kernel_module!("topk.cu", "u16_warp");
/// The same, 32-bit keys.
pub static TOPK_WARP_U32: KernelModule = kernel_module!("topk.cu", "u32_warp");
/// The top-k sampled select of 16-bit keys (src/plan/topk/radix.rs, its first pass) and
/// the spread select (src/plan/topk/spread.rs).
pub static TOPK_SAMPLED_U16: KernelModule = kernel_module!("topk.cu", "u16_sampled");
/// The same, 32-bit keys.
pub static TOPK_SAMPLED_U32: KernelModule = kernel_module!("topk.cu", "u32_sampled");
/// The top-k radix select of 16-bit keys at 4, 16 and 32 elements a thread
/// ([`crate::policy::TopkPolicy::RADIX_PER_THREAD`]), a module each: a selection compiles the ones its
/// passes run.
pub static TOPK_RADIX_U16: [KernelModule; 3] = [
    kernel_module!("topk.cu", "u16_r4"),
    kernel_module!("topk.cu", "u16_r16"),
    kernel_module!("topk.cu", "u16_r32"),
];
/// The same, 32-bit keys.
pub static TOPK_RADIX_U32: [KernelModule; 3] = [
    kernel_module!("topk.cu", "u32_r4"),
    kernel_module!("topk.cu", "u32_r16"),
    kernel_module!("topk.cu", "u32_r32"),
];
/// The same, 64-bit keys.
pub static TOPK_RADIX_U64: [KernelModule; 3] = [
    kernel_module!("topk.cu", "u64_r4"),
    kernel_module!("topk.cu", "u64_r16"),
    kernel_module!("topk.cu", "u64_r32"),
];

/// The stable radix sorts of rows (with indices, or of long rows of keys alone without): one
/// block a row, or a pass a digit over tiles (src/plan/radix.rs).
pub static RADIX: KernelModule = kernel_module!("radix.cu");

/// Sampling a token from each row of logits (src/sample/, src/plan/sample.rs).
pub static SAMPLE: KernelModule = kernel_module!("sample.cu");

/// Every kernel module.
pub static ALL: std::sync::LazyLock<Vec<&'static KernelModule>> = std::sync::LazyLock::new(|| {
    let seeds = [&MAP_KEYS, &V0, &V1, &V2, &V3, &V4, &V5];
    // The kernels compiled in one module a tile size or a top-k radix width.
    let families = [
        &TUNED_U32[..],
        &TUNED_U32_NARROW,
        &TUNED_U64,
        &TUNED_KV64,
        &TOPK_RADIX_U16,
        &TOPK_RADIX_U32,
        &TOPK_RADIX_U64,
    ];
    let others = [
        &PAIRS,
        &MERGE_WORDS,
        &MERGE_KV_U32_U32,
        &MERGE_KV_U32_U64,
        &MERGE_KV_U64_U32,
        &MERGE_KV_U64_U64,
        &MULTI,
        &TOPK_U16,
        &TOPK_U32,
        &TOPK_U64,
        &TOPK_WARP_U16,
        &TOPK_WARP_U32,
        &TOPK_SAMPLED_U16,
        &TOPK_SAMPLED_U32,
        &SAMPLE,
        &RADIX,
    ];
    let families = families.into_iter().flatten();
    seeds.into_iter().chain(families).chain(others).collect()
});

/// The tuned kernels, by the words they sort and their keys a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tuned {
    /// u32 words, 32 a thread.
    U32,
    /// u32 words, 16 a thread.
    U32Narrow,
    /// u64 words, 16 a thread.
    U64,
    /// 16-byte key-index pairs, 16 a thread.
    Kv64,
}

impl Tuned {
    /// The wide kernel of words of `word_bytes` (4 or 8, or a 16-byte key-index pair).
    pub(crate) fn of_word_bytes(word_bytes: usize) -> Tuned {
        match word_bytes {
            4 => Tuned::U32,
            8 => Tuned::U64,
            _ => Tuned::Kv64,
        }
    }

    /// The kernel's modules, one a tile size.
    fn modules(self) -> &'static [KernelModule] {
        match self {
            Tuned::U32 => &TUNED_U32,
            Tuned::U32Narrow => &TUNED_U32_NARROW,
            Tuned::U64 => &TUNED_U64,
            Tuned::Kv64 => &TUNED_KV64,
        }
    }

    /// The module for tiles of 2^`tile_bits` keys, which must lie in the kernel's range (the
    /// host sizes tiles from one warp's keys to the most threads the kernel takes).
    pub(crate) fn module(self, tile_bits: u32) -> &'static KernelModule {
        let modules = self.modules();
        let smallest = modules[0].tile_bits.expect("tuned modules have a tile");
        let at = tile_bits.checked_sub(smallest).map(|i| i as usize);
        match at.and_then(|i| modules.get(i)) {
            Some(module) => module,
            None => panic!("no {self:?} tuned module for tiles of 2^{tile_bits} keys"),
        }
    }

    /// The kernel's name in its modules.
    pub(crate) fn kernel_name(self) -> &'static str {
        match self {
            Tuned::U32 => "tuned_pass_u32",
            Tuned::U32Narrow => "tuned_pass_u32_narrow",
            Tuned::U64 => "tuned_pass_u64",
            Tuned::Kv64 => "tuned_pass_kv64",
        }
    }
}

/// The key-value kernels of keys of `key_bytes` with values of `value_bytes` (4 or 8 each).
pub(crate) fn merge_kv(key_bytes: usize, value_bytes: usize) -> &'static KernelModule {
    match (key_bytes, value_bytes) {
        (4, 4) => &MERGE_KV_U32_U32,
        (4, _) => &MERGE_KV_U32_U64,
        (_, 4) => &MERGE_KV_U64_U32,
        _ => &MERGE_KV_U64_U64,
    }
}

/// Every header, by the name the files include it by.
pub static HEADERS: [(&str, &str); 32] = [
    ("common.cuh", embed!("common.cuh")),
    ("common/types.cuh", embed!("common/types.cuh")),
    ("common/cluster.cuh", embed!("common/cluster.cuh")),
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
    ("tuned/packing.cuh", embed!("tuned/packing.cuh")),
    ("tuned/pass.cuh", embed!("tuned/pass.cuh")),
    ("merge/path.cuh", embed!("merge/path.cuh")),
    ("merge/tile.cuh", embed!("merge/tile.cuh")),
    ("merge/levels.cuh", embed!("merge/levels.cuh")),
    ("merge/multiway.cuh", embed!("merge/multiway.cuh")),
    ("merge/place.cuh", embed!("merge/place.cuh")),
    ("topk/common.cuh", embed!("topk/common.cuh")),
    ("topk/sorts.cuh", embed!("topk/sorts.cuh")),
    ("topk/filter.cuh", embed!("topk/filter.cuh")),
    ("topk/take.cuh", embed!("topk/take.cuh")),
    ("topk/radix_rounds.cuh", embed!("topk/radix_rounds.cuh")),
    ("topk/tournament.cuh", embed!("topk/tournament.cuh")),
    ("topk/candidates.cuh", embed!("topk/candidates.cuh")),
    ("topk/radix.cuh", embed!("topk/radix.cuh")),
    ("topk/sampled.cuh", embed!("topk/sampled.cuh")),
    ("topk/spread.cuh", embed!("topk/spread.cuh")),
    ("topk/warp.cuh", embed!("topk/warp.cuh")),
    ("sample/row.cuh", embed!("sample/row.cuh")),
];

/// The names a source `#include "…"`s.
#[cfg(test)]
fn includes(source: &str) -> impl Iterator<Item = &str> {
    source.lines().filter_map(|line| {
        let rest = line.trim().strip_prefix("#include")?.trim();
        rest.strip_prefix('"')?.split('"').next()
    })
}

/// Every `-D` define of the kernels under `policy`: the structs and flags shared with the host
/// (abi.rs) and every algorithm's numbers (src/policy/). Public as `cuda::kernel_defines`.
pub(crate) fn defines(policy: &crate::Policy) -> Vec<(&'static str, String)> {
    let mut defines = abi::defines();
    defines.extend(policy.defines());
    defines
}

/// The kernels' name of words `T`: `u32`, `u64`, or `kv64` for 16-byte key-index pairs (`u16`
/// for 2-byte words).
pub(crate) fn kernel_width<T>() -> &'static str {
    match std::mem::size_of::<T>() {
        2 => "u16",
        4 => "u32",
        8 => "u64",
        _ => "kv64",
    }
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
