// Merging sorted runs (src/cuda/merge.rs): two runs of any lengths (the multi-GPU sort's
// merges), or every pair of neighbouring runs of one array at once (a level of a merge sort
// whose runs a tuned tile sort made: the long key-index pair sorts of src/cuda/pairs.rs).
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
// Words are u32, u64 or 16-byte KeyIndex; lengths and positions are 64-bit.
#include "common.cuh"

template <typename W> struct MergeTile {
    // 16 words a thread, 2^12-word tiles of 16 or 32 KiB; key-index pairs 8, 2^11 (32 KiB).
    static const u32 E_BITS = sizeof(W) == 16 ? 3 : 4;
    static const u32 THREAD_BITS = 8;
    static const u32 TILE_BITS = E_BITS + THREAD_BITS;
};

// The merge path at output o of sorted a and b: how many of the first o merged words are a's.
template <typename W> __device__ u64 co_rank(const W *a, u64 a_len, const W *b, u64 b_len, u64 o) {
    u64 lo = o > b_len ? o - b_len : 0, hi = o < a_len ? o : a_len;
    while (lo < hi) {
        u64 mid = lo + (hi - lo) / 2;
        if (!(b[o - mid - 1] < a[mid])) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// Shared-memory slot of tile index i: the bits above the register bits XORed into the low
// ones, so that the lanes of a warp hit distinct banks in every phase's loads and stores.
template <typename W> __device__ __forceinline__ u32 merge_slot(u32 i) {
    const u32 words_a_wavefront = 128 / sizeof(W);
    return i ^ ((i >> MergeTile<W>::E_BITS) & (words_a_wavefront - 1));
}

// The tile index of thread t's register r when the registers cover tile bits LO ...
template <typename W, u32 LO> __device__ __forceinline__ u32 merge_index(u32 t, u32 r) {
    const u32 E_BITS = MergeTile<W>::E_BITS;
    return ((t >> LO) << (LO + E_BITS)) | (r << LO) | (t & ((1u << LO) - 1));
}

// The half-cleaner steps on register bits J ... 0.
template <typename W, int J> __device__ __forceinline__ void half_cleaners(W *k) {
    const int E = 1 << MergeTile<W>::E_BITS;
#pragma unroll
    for (int j = J; j >= 0; --j)
#pragma unroll
        for (int r = 0; r < E; ++r)
            if (!(r & (1 << j))) order_pair(k[r], k[r | (1 << j)]);
}

// The half-cleaner steps on tile bits TOP down to LO, in registers, then later bits' phases.
template <typename W, int TOP> __device__ __forceinline__ void merge_phases(W *tile) {
    const int E_BITS = MergeTile<W>::E_BITS, E = 1 << E_BITS;
    const int LO = TOP + 1 >= E_BITS ? TOP + 1 - E_BITS : 0;
    W k[E];
#pragma unroll
    for (int r = 0; r < E; ++r) k[r] = tile[merge_slot<W>(merge_index<W, LO>(threadIdx.x, r))];
    half_cleaners<W, TOP - LO>(k);
#pragma unroll
    for (int r = 0; r < E; ++r) tile[merge_slot<W>(merge_index<W, LO>(threadIdx.x, r))] = k[r];
    __syncthreads();
    if constexpr (LO > 0) merge_phases<W, LO - 1>(tile);
}

// Merges outputs [o0, o1) of runs a and b into out[o0, o1), given their merge paths a0 and a1;
// one block of 2^THREAD_BITS threads. The first phase's registers cover the top tile bits:
// thread t's word r is tile index r 2^THREAD_BITS + t, so it loads them straight from global
// memory, coalesced, all E loads in flight at once. `map` (0: none) turns sortable words back
// into keys on the store: the last level of a merge sort of mapped keys.
template <typename W>
__device__ __forceinline__ void merge_tile(const W *a, const W *b, u64 o0, u64 o1, u64 a0, u64 a1, W *out, u32 map) {
    const u32 TILE_BITS = MergeTile<W>::TILE_BITS, THREAD_BITS = MergeTile<W>::THREAD_BITS;
    const u32 E = 1u << MergeTile<W>::E_BITS, T = 1u << TILE_BITS;
    __shared__ W tile[T];
    const u64 b_end = o1 - a1;
    const u32 len = u32(o1 - o0), from_b = u32(b_end - (o0 - a0));
    W k[E];
#pragma unroll
    for (u32 r = 0; r < E; ++r) {
        const u32 i = (r << THREAD_BITS) | threadIdx.x;
        k[r] = i < from_b ? b[b_end - 1 - i] : i < len ? a[a0 + (i - from_b)] : largest_key<W>();
    }
    half_cleaners<W, int(MergeTile<W>::E_BITS) - 1>(k);
#pragma unroll
    for (u32 r = 0; r < E; ++r) tile[merge_slot<W>((r << THREAD_BITS) | threadIdx.x)] = k[r];
    __syncthreads();
    merge_phases<W, int(THREAD_BITS) - 1>(tile);
#pragma unroll
    for (u32 r = 0; r < E; ++r) {
        const u32 i = (r << THREAD_BITS) | threadIdx.x;
        if (i < len) out[o0 + i] = map ? from_sortable(tile[merge_slot<W>(i)], map) : tile[merge_slot<W>(i)];
    }
}

// ---- Two runs: ranks[q] = the merge path at output min(total, q T); one block a tile. ----

template <typename W> __device__ void co_ranks(const W *a, u64 a_len, const W *b, u64 b_len, u64 *ranks, u32 count) {
    u32 q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q < count) ranks[q] = co_rank(a, a_len, b, b_len, min(a_len + b_len, u64(q) << MergeTile<W>::TILE_BITS));
}

template <typename W> __device__ void merge_tiles(const W *a, const W *b, const u64 *ranks, W *out, u64 total) {
    const u64 o0 = u64(blockIdx.x) << MergeTile<W>::TILE_BITS;
    const u64 o1 = min(total, o0 + (1u << MergeTile<W>::TILE_BITS));
    merge_tile(a, b, o0, o1, ranks[blockIdx.x], ranks[blockIdx.x + 1], out, 0u);
}

// ---- A level: `keys` holds sorted runs of run_len words (the last may be shorter), and runs
// 2k and 2k + 1 merge into the same place of `out`. T divides 2 run_len, so a tile lies in one
// pair; ranks[q] = the merge path at tile q's start within its pair. ----

struct RunPair {
    u64 start, a_len, b_len; // a = keys + start, b = a + a_len
};

__device__ __forceinline__ RunPair pair_at(u64 n, u64 run_len, u64 o) {
    RunPair p;
    p.start = o / (2 * run_len) * (2 * run_len);
    p.a_len = min(run_len, n - p.start);
    p.b_len = min(run_len, n - p.start - p.a_len);
    return p;
}

template <typename W> __device__ void level_co_ranks(const W *keys, u64 n, u64 run_len, u64 *ranks, u32 tiles) {
    u32 q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= tiles) return;
    const u64 o = u64(q) << MergeTile<W>::TILE_BITS;
    const RunPair p = pair_at(n, run_len, o);
    const W *a = keys + p.start;
    ranks[q] = co_rank(a, p.a_len, a + p.a_len, p.b_len, o - p.start);
}

template <typename W>
__device__ void merge_level(const W *keys, u64 n, u64 run_len, const u64 *ranks, W *out, u32 map) {
    const u64 o = u64(blockIdx.x) << MergeTile<W>::TILE_BITS;
    const RunPair p = pair_at(n, run_len, o);
    const u64 total = p.a_len + p.b_len, o0 = o - p.start;
    const u64 o1 = min(total, o0 + (1u << MergeTile<W>::TILE_BITS));
    // The tile that ends its pair ends with all of a; any other ends where the next begins.
    const u64 a1 = o1 == total ? p.a_len : ranks[blockIdx.x + 1];
    const W *a = keys + p.start;
    merge_tile(a, a + p.a_len, o0, o1, ranks[blockIdx.x], a1, out + p.start, map);
}

#define CO_RANKS_PARAMS(W) (const W *a, u64 a_len, const W *b, u64 b_len, u64 *ranks, u32 count)
EXPORT_FOR_ALL_WORDS(co_ranks, CO_RANKS_PARAMS, (a, a_len, b, b_len, ranks, count))
#define MERGE_TILES_PARAMS(W) (const W *a, const W *b, const u64 *ranks, W *out, u64 total)
EXPORT_FOR_ALL_WORDS(merge_tiles, MERGE_TILES_PARAMS, (a, b, ranks, out, total))
#define LEVEL_CO_RANKS_PARAMS(W) (const W *keys, u64 n, u64 run_len, u64 *ranks, u32 tiles)
EXPORT_FOR_ALL_WORDS(level_co_ranks, LEVEL_CO_RANKS_PARAMS, (keys, n, run_len, ranks, tiles))
#define MERGE_LEVEL_PARAMS(W) (const W *keys, u64 n, u64 run_len, const u64 *ranks, W *out, u32 map)
EXPORT_FOR_ALL_WORDS(merge_level, MERGE_LEVEL_PARAMS, (keys, n, run_len, ranks, out, map))
