// Top-k selection (planned in src/plan/topk/, run by src/cuda/topk.rs): each row's k best keys, sorted, with their indices (u32,
// or u64 where the map has MAP_INDEX64: common/keys.cuh store_index). The keys written are the
// input's own, bit for bit: mapped back from their words, or, for a word that stands for several
// keys (a tied map's NaNs and zeros: common/keys.cuh SortableMap::key_of), read back by their indices from
// `keys` (rows of `keys_row_len`: the last pass of several reads partial results, not keys). The selects are headers
// under topk/; this file compiles one part of them and exports its kernels:
// - topk/common.cuh: composites (a key's sortable word and its index in one word that orders
//   candidates), held elements, 16-byte loads, where a result goes;
// - topk/sorts.cuh: the bitonic networks of a block's buffer and of a warp's registers;
// - topk/filter.cuh: the threshold filter; topk/take.cuh: the first k indices of sorted rows
//   and the keys they name;
// - topk/radix_rounds.cuh, topk/tournament.cuh, topk/candidates.cuh: the radix select's steps,
//   and topk/radix.cuh its kernel and the merge of sorted runs;
// - topk/sampled.cuh: the sampled select; topk/spread.cuh: the spread select;
// - topk/warp.cuh: the warp sort (and its warp filters) of short rows.
//
// Parts, a key width each: KERNEL_PART_U16 (f16 and bf16 keys, read as they are, u64
// composites), KERNEL_PART_U32 (32-bit keys, u64 composites), KERNEL_PART_U64 (64-bit keys,
// KeyIndex composites), each with the filter and the gather of keys by their indices (U32 and
// U64 also with the take of indices); KERNEL_PART_<W>_R<R>, the radix
// select at R elements a thread; KERNEL_PART_<W>_WARP, the warp sort of short rows, and
// KERNEL_PART_<W>_SAMPLED, the sampled select (both for 16- and 32-bit keys) (end of file).

// The part's select (each header includes what it relies on).
#if defined(KERNEL_PART_U16) || defined(KERNEL_PART_U32) || defined(KERNEL_PART_U64)
#include "topk/filter.cuh"
#include "topk/take.cuh"
#elif defined(KERNEL_PART_U16_WARP) || defined(KERNEL_PART_U32_WARP)
#include "topk/warp.cuh"
#elif defined(KERNEL_PART_U16_SAMPLED) || defined(KERNEL_PART_U32_SAMPLED)
#include "topk/spread.cuh"
#else // the radix parts, KERNEL_PART_<W>_R<R> (another fails at the end of the file)
#include "topk/radix.cuh"
#endif

#define TOPK_PARAMS(In, C, K)                                                                   \
    (const In *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len, u32 k, u32 slots, u32 map, \
     C *partials, K *values, u32 *indices, const K *keys, u64 keys_row_len)
#define TOPK_ARGS (input, row_len, rows, chunks, chunk_len, k, slots, map, partials, values, indices, keys, keys_row_len)
#define TAKE_PARAMS(W) (const W *src, u64 row_len, W *dst, u64 k, u64 count)
#define TAKE_ARGS (src, row_len, dst, k, count)
#define GATHER_PARAMS(W, I) (const W *keys, u64 row_len, const I *indices, W *values, u64 k, u64 count)
#define GATHER_ARGS (keys, row_len, indices, values, k, count)

// The kernels of one key width W, in parts (src/kernels/mod.rs), so that a selection compiles
// only what it runs: part <W> has the filter over keys and over partial results and the gather
// of keys of the width by u32 or u64 indices, and parts U32 and U64 the take of an argsort's
// indices of their width (u64: MAP_INDEX64);
// part <W>_R<R> the radix select over keys and over partial results at R = 4, 16 or 32
// elements a thread (src/policy/topk.rs RADIX_PER_THREAD), and the merge of the first pass's
// sorted runs; at 32, also the segments' (STREAM).
// Their launch bounds, (THREADS, blocks an SM), cap the registers: where composites are u64,
// the keys kernels hold 32-bit words, 4 blocks an SM at 4 a thread and 3 at 16 and 32 (80
// registers); the partials kernels hold composites, 4 blocks at 4 a thread, 3 at 16, 2 at 32;
// the segments' kernel 2 (128 registers: at 80 its overflow paths spilled kilobytes).
#define KEYS_BOUNDS_4(C) __launch_bounds__(THREADS, sizeof(C) == 8 ? 4 : 1)
#define KEYS_BOUNDS_16(C) __launch_bounds__(THREADS, sizeof(C) == 8 ? 3 : 1)
#define KEYS_BOUNDS_32(C) __launch_bounds__(THREADS, sizeof(C) == 8 ? 3 : 1)
#define PARTIALS_BOUNDS_4(C) __launch_bounds__(THREADS, sizeof(C) == 8 ? 4 : 1)
#define PARTIALS_BOUNDS_16(C) __launch_bounds__(THREADS, sizeof(C) == 8 ? 3 : 1)
#define PARTIALS_BOUNDS_32(C) __launch_bounds__(THREADS, sizeof(C) == 8 ? 2 : 1)
#define EXPORT_TOPK_RADIX(W, C, R)                                                               \
    extern "C" __global__ void KEYS_BOUNDS_##R(C)                                                \
        topk_radix_keys_##W##_##R TOPK_PARAMS(W, C, W) {                                         \
        topk_radix<W, C, W, R> TOPK_ARGS;                                                        \
    }                                                                                            \
    extern "C" __global__ void PARTIALS_BOUNDS_##R(C)                                            \
        topk_radix_partials_##W##_##R TOPK_PARAMS(C, C, W) {                                     \
        topk_radix<W, C, C, R> TOPK_ARGS;                                                        \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(THREADS) topk_merge_##W TOPK_PARAMS(C, C, W) {  \
        topk_merge<W, C> TOPK_ARGS;                                                              \
    }
// The segments of STREAM (32 a thread): a kernel of the R = 32 parts.
#define EXPORT_TOPK_STREAM(W, C)                                                                 \
    extern "C" __global__ void __launch_bounds__(THREADS, sizeof(C) == 8 ? 2 : 1) topk_radix_stream_##W TOPK_PARAMS(W, C, W) {     \
        topk_radix<W, C, W, 32, true> TOPK_ARGS;                                                 \
    }
// The sampled select, 32 keys a thread at a time, and the spread select's three kernels, a part
// per key width (16 and 32 bits).
#define EXPORT_TOPK_SAMPLED(W, C)                                                                \
    extern "C" __global__ void __launch_bounds__(THREADS, 3) topk_sampled_##W TOPK_PARAMS(W, C, W) { \
        topk_sampled<W, C, W, 32> TOPK_ARGS;                                                     \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(THREADS) topk_spread_sample_##W(                \
        const W *input, u64 row_len, u32 rows, u32 rank, u32 map, u32 sample_blocks, SpreadRow *spread, \
        u32 *lists) {                                                                            \
        topk_spread_sample<C, W>(input, row_len, rows, rank, map, sample_blocks, spread, lists); \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(THREADS) topk_spread_threshold_##W(             \
        u32 rows, u32 rank, u32 sample_blocks, const u32 *lists, SpreadRow *spread) {            \
        topk_spread_threshold<C, W>(rows, rank, sample_blocks, lists, spread);                   \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(THREADS, 4) topk_spread_gather_##W(             \
        const W *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len, u32 map, SpreadRow *spread, \
        C *candidates, u32 *chunk_ties) {                                                        \
        topk_spread_gather<C, W, 32>(input, row_len, rows, chunks, chunk_len, map, spread, candidates, chunk_ties); \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(THREADS) topk_spread_select_##W(                \
        const W *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len, u32 k, u32 slots, u32 map, \
        const SpreadRow *spread, const C *candidates, const u32 *chunk_ties, W *values, u32 *indices) { \
        topk_spread_select<W, C, W>(input, row_len, rows, chunks, chunk_len, k, slots, map, spread, candidates, \
                                    chunk_ties, values, indices);                                \
    }
// The warp sort of short rows (rows of up to 64, 256 and 1,024 keys), and the warp filters of
// rows of up to 1,024 (by the groups' bests and by a search of top bits), a part per key width.
// Blocks an SM: 2 for u64 composites (128 registers; 32 a lane: 4 bytes spill), 3 for u32 (80;
// at 4, 64 registers spilled 52 bytes).
#define WARP_SORT_BLOCKS(W) (sizeof(W) == 2 ? 3 : 2)
#define WARP_SORT_KERNEL(W, P, NAME, FILTER)                                                     \
    extern "C" __global__ void __launch_bounds__(THREADS, WARP_SORT_BLOCKS(W)) NAME TOPK_PARAMS(W, typename WarpComposite<W>::C, W) { \
        topk_warp_sort<W, W, P, FILTER>(input, row_len, rows, k, map, values, indices);          \
    }
#define EXPORT_TOPK_WARP_SORT(W)                                                                 \
    WARP_SORT_KERNEL(W, 2, topk_warp_sort_##W##_2, WHOLE_ROW)                                    \
    WARP_SORT_KERNEL(W, 8, topk_warp_sort_##W##_8, WHOLE_ROW)                                    \
    WARP_SORT_KERNEL(W, 32, topk_warp_sort_##W##_32, WHOLE_ROW)                                  \
    WARP_SORT_KERNEL(W, 32, topk_warp_filter_##W, GROUP_BESTS)                                   \
    WARP_SORT_KERNEL(W, 32, topk_warp_search_##W, TOP_BITS)
#define EXPORT_TOPK(W, C)                                                                       \
    extern "C" __global__ void __launch_bounds__(THREADS) topk_keys_##W TOPK_PARAMS(W, C, W) {   \
        topk_filter<W, C, W> TOPK_ARGS;                                                         \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(THREADS) topk_partials_##W TOPK_PARAMS(C, C, W) { \
        topk_filter<W, C, C> TOPK_ARGS;                                                         \
    }                                                                                           \
    extern "C" __global__ void topk_gather_##W##_u32 GATHER_PARAMS(W, u32) { topk_gather<W, u32> GATHER_ARGS; } \
    extern "C" __global__ void topk_gather_##W##_u64 GATHER_PARAMS(W, u64) { topk_gather<W, u64> GATHER_ARGS; }

#if defined(KERNEL_PART_U16)
EXPORT_TOPK(u16, u64)
#elif defined(KERNEL_PART_U16_R4)
EXPORT_TOPK_RADIX(u16, u64, 4)
#elif defined(KERNEL_PART_U16_R16)
EXPORT_TOPK_RADIX(u16, u64, 16)
#elif defined(KERNEL_PART_U16_R32)
EXPORT_TOPK_RADIX(u16, u64, 32)
EXPORT_TOPK_STREAM(u16, u64)
#elif defined(KERNEL_PART_U16_WARP)
EXPORT_TOPK_WARP_SORT(u16)
#elif defined(KERNEL_PART_U16_SAMPLED)
EXPORT_TOPK_SAMPLED(u16, u64)
#elif defined(KERNEL_PART_U32)
EXPORT_TOPK(u32, u64)
extern "C" __global__ void topk_take_u32 TAKE_PARAMS(u32) { topk_take<u32> TAKE_ARGS; }
#elif defined(KERNEL_PART_U32_R4)
EXPORT_TOPK_RADIX(u32, u64, 4)
#elif defined(KERNEL_PART_U32_R16)
EXPORT_TOPK_RADIX(u32, u64, 16)
#elif defined(KERNEL_PART_U32_R32)
EXPORT_TOPK_RADIX(u32, u64, 32)
EXPORT_TOPK_STREAM(u32, u64)
#elif defined(KERNEL_PART_U32_WARP)
EXPORT_TOPK_WARP_SORT(u32)
#elif defined(KERNEL_PART_U32_SAMPLED)
EXPORT_TOPK_SAMPLED(u32, u64)
#elif defined(KERNEL_PART_U64)
EXPORT_TOPK(u64, KeyIndex)
extern "C" __global__ void topk_take_u64 TAKE_PARAMS(u64) { topk_take<u64> TAKE_ARGS; }
#elif defined(KERNEL_PART_U64_R4)
EXPORT_TOPK_RADIX(u64, KeyIndex, 4)
#elif defined(KERNEL_PART_U64_R16)
EXPORT_TOPK_RADIX(u64, KeyIndex, 16)
#elif defined(KERNEL_PART_U64_R32)
EXPORT_TOPK_RADIX(u64, KeyIndex, 32)
EXPORT_TOPK_STREAM(u64, KeyIndex)
#else
#error "topk.cu compiles one part: KERNEL_PART_<W>, _<W>_R<R>, _<W>_WARP or _<W>_SAMPLED, W one of U16, U32, U64"
#endif
