// Merging sorted runs (planned in src/plan/merge.rs, run by src/cuda/merge.rs and kv.rs): two
// runs of any lengths (the multi-GPU sort's merges), or every pair of neighbouring runs of one
// array at once (a level of a merge sort whose runs a tile sort made: the tuned version past
// MergePolicy::above keys, and the key-value sorts and argsorts of one long row).
//
// One block merges one tile of T outputs, reading its words once and writing them once, so a
// merge is one pass over the runs whatever their lengths. For a tile's first output o0 and end
// o1, the merge path (co_rank) says how many of the first o0 (o1) merged words come from run A,
// A's words first among equal ones: a0 (a1). The tile's words are then A[a0, a1) and
// B[o0 - a0, o1 - a1). Placed as B's words falling, A's rising and +inf up to T, they form a
// bitonic sequence, which log2 T half-cleaner steps sort. A thread holds E = 2^E_BITS words in
// registers; the steps run E_BITS tile bits at a time, the thread's registers covering those
// bits, with a trip through shared memory between. src/multi/mod.rs's merge_by_tiles is the
// same on the CPU.
//
// Key-value merges carry values that the network never touches. Each key goes into the network
// with its *tag*, its rank in the tile's stable input order (A's words first, then B's), so
// equal keys leave in that order: the merge is stable. At the store a word's tag says where its
// value waits. The runs those merges start from: the tuned tile sort sorts each tile's keys
// alone, then place_values moves each value to where its key went (the key's rank among the
// sorted keys, and, where keys are equal, the count of equal ones before it).
// Words are u32, u64 or 16-byte KeyIndex; lengths and positions are 64-bit.
//
// Layers: merge/path.cuh (the merge path), merge/tile.cuh (a block's tile merge),
// merge/levels.cuh (a whole merge or level), merge/place.cuh (value placement); this file only
// exports the kernels.
#include "merge/levels.cuh"
#include "merge/multiway.cuh"
#include "merge/place.cuh"

// One compile a part (src/kernels/mod.rs defines KERNEL_PART_*), so that a sort compiles
// only the kernels it runs: the merges of words alone, or the key-value kernels of one key
// and value width.
#if defined(KERNEL_PART_WORDS)
#define CO_RANKS_PARAMS(W) (const W *a, u64 a_len, const W *b, u64 b_len, u64 *ranks, u32 count)
EXPORT_FOR_ALL_WORDS(co_ranks, CO_RANKS_PARAMS, (a, a_len, b, b_len, ranks, count))
#define MERGE_TILES_PARAMS(W) (const W *a, const W *b, const u64 *ranks, W *out, u64 total)
EXPORT_FOR_ALL_WORDS(merge_tiles, MERGE_TILES_PARAMS, (a, b, ranks, out, total))
#define LEVEL_CO_RANKS_PARAMS(W) (const W *keys, u64 n, u64 run_len, u64 *ranks, u32 tiles)
EXPORT_FOR_ALL_WORDS(level_co_ranks, LEVEL_CO_RANKS_PARAMS, (keys, n, run_len, ranks, tiles))
#define MERGE_LEVEL_PARAMS(W) (const W *keys, u64 n, u64 run_len, const u64 *ranks, W *out, u32 map)
EXPORT_FOR_ALL_WORDS(merge_level, MERGE_LEVEL_PARAMS, (keys, n, run_len, ranks, out, map))
#define MULTIWAY_SAMPLES_PARAMS(W) (const W *keys, u64 n, u32 sample_bits, W *samples)
EXPORT_FOR_ALL_WORDS(multiway_samples, MULTIWAY_SAMPLES_PARAMS, (keys, n, sample_bits, samples))
#define MULTIWAY_CO_RANKS_PARAMS(W)                                                               \
    (const W *keys, u64 n, u64 run_len, u32 ways, const W *samples, MultiwayTiling tiling, u64 *ranks, u32 tiles)
EXPORT_FOR_ALL_WORDS(multiway_co_ranks, MULTIWAY_CO_RANKS_PARAMS,
                     (keys, n, run_len, ways, samples, tiling, ranks, tiles))
#define MULTIWAY_MERGE_LEVEL_PARAMS(W)                                                            \
    (const W *keys, u64 n, u64 run_len, u32 ways, MultiwayTiling tiling, const u64 *ranks, W *out, u32 map, \
     W *next_samples, u32 next_sample_bits)
EXPORT_FOR_ALL_WORDS(multiway_merge_level, MULTIWAY_MERGE_LEVEL_PARAMS,
                     (keys, n, run_len, ways, tiling, ranks, out, map, next_samples, next_sample_bits))
#endif

// Key-value kernels, name_kv_K_V for keys K and values V (u32 or u64 words): a level's merge
// and the value placement after the tuned tile sort (the policy's tiles of 32- and 64-bit
// keys, KERNEL_TILE_BITS_32 and _64). The bounds cap registers (80 a merge thread, no
// spills: three blocks an SM).
#define EXPORT_KV(K, V, TILE_BITS)                                                                \
    extern "C" __global__ void __launch_bounds__(KERNEL_MERGE_THREADS, 3)                                          \
        merge_level_kv_##K##_##V(const K *keys, const V *values, u64 n, u64 run_len, const u64 *ranks, K *out, \
                                 V *out_values, u32 map) {                                        \
        merge_level_kv<K, V>(keys, values, n, run_len, ranks, out, out_values, map);             \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(1u << (TILE_BITS - 4), 2)                         \
        place_values_kv_##K##_##V(const K *keys, K *sorted, const V *values, V *out_values, u64 n, u32 map, \
                                  u32 unmap, u32 *equal_tiles) {                                  \
        place_values<K, V, TILE_BITS>(keys, sorted, values, out_values, n, map, unmap, equal_tiles); \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(1u << (TILE_BITS - 4), 1)                         \
        place_equal_values_kv_##K##_##V(const K *keys, K *sorted, const V *values, V *out_values, u64 n, \
                                        u32 map, u32 unmap, const u32 *equal_tiles) {             \
        place_equal_values<K, V, TILE_BITS>(keys, sorted, values, out_values, n, map, unmap, equal_tiles); \
    }
// A multiway level of keys with values.
#define EXPORT_KV_MULTIWAY(K, V)                                                                  \
    extern "C" __global__ void multiway_merge_level_kv_##K##_##V(                                 \
        const K *keys, const V *values, u64 n, u64 run_len, u32 ways, MultiwayTiling tiling, const u64 *ranks, \
        K *out, V *out_values, u32 map, K *next_samples, u32 next_sample_bits) {                  \
        multiway_merge_level_kv<K, V>(keys, values, n, run_len, ways, tiling, ranks, out, out_values, map,   \
                                      next_samples, next_sample_bits);                            \
    }
// The merge paths of a level in the key-value merge's tiles, and a multiway level's samples and
// splits (the words part's kernels, here too so that a key-value sort compiles one module).
#define EXPORT_KV_CO_RANKS(K)                                                                     \
    extern "C" __global__ void level_co_ranks_kv_##K(const K *keys, u64 n, u64 run_len, u64 *ranks, u32 tiles) { \
        level_co_ranks_in<K, MergeTile<Tagged<K>::Word>::TILE_BITS>(keys, n, run_len, ranks, tiles);       \
    }                                                                                             \
    extern "C" __global__ void multiway_samples_kv_##K(const K *keys, u64 n, u32 sample_bits, K *samples) { \
        multiway_samples<K>(keys, n, sample_bits, samples);                                       \
    }                                                                                             \
    extern "C" __global__ void multiway_co_ranks_kv_##K(const K *keys, u64 n, u64 run_len, u32 ways,      \
                                                       const K *samples, MultiwayTiling tiling, u64 *ranks, \
                                                       u32 tiles) {                               \
        multiway_co_ranks<K>(keys, n, run_len, ways, samples, tiling, ranks, tiles);              \
    }
#if !defined(KERNEL_TILE_BITS_32) || !defined(KERNEL_TILE_BITS_64)
#error "the host passes the tuned tiles, KERNEL_TILE_BITS_32 and _64 (src/policy/)"
#endif
#if defined(KERNEL_PART_KV_U32_U32)
EXPORT_KV(u32, u32, KERNEL_TILE_BITS_32)
EXPORT_KV_MULTIWAY(u32, u32)
EXPORT_KV_CO_RANKS(u32)
#elif defined(KERNEL_PART_KV_U32_U64)
EXPORT_KV(u32, u64, KERNEL_TILE_BITS_32)
EXPORT_KV_MULTIWAY(u32, u64)
EXPORT_KV_CO_RANKS(u32)
#elif defined(KERNEL_PART_KV_U64_U32)
EXPORT_KV(u64, u32, KERNEL_TILE_BITS_64)
EXPORT_KV_MULTIWAY(u64, u32)
EXPORT_KV_CO_RANKS(u64)
#elif defined(KERNEL_PART_KV_U64_U64)
EXPORT_KV(u64, u64, KERNEL_TILE_BITS_64)
EXPORT_KV_MULTIWAY(u64, u64)
EXPORT_KV_CO_RANKS(u64)
#elif !defined(KERNEL_PART_WORDS)
#error "compile one part: KERNEL_PART_WORDS or _KV_<key>_<value> (src/kernels/mod.rs)"
#endif
