// Kernels of the multi-GPU sort (src/cuda/multi.rs) and its benchmark: the binary searches that
// cut shards at splitters, the merge of two sorted runs (of the halves a merge-split keeps, and
// of the runs a partition receives), and on-device random keys with an order-free checksum, so
// that 16 GiB of keys never cross the PCIe bus.
// Words are sortable u32 or u64 (src/key.rs); lengths and indices are 64-bit.
#include "common.cuh"

#define GRID_STRIDE_LOOP64(i, n) \
    for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += u64(gridDim.x) * blockDim.x)

// For each query q: the number of words of the sorted `keys` below q (lower bound) or at or
// below q (upper bound, when upper[q] is set). A splitter cuts every shard this way.
template <typename W> __device__ void count_below(const W *keys, u64 n, const W *queries, const u32 *upper, u64 *out, u32 count) {
    u32 q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= count) return;
    const W x = queries[q];
    u64 lo = 0, hi = n;
    while (lo < hi) {
        u64 mid = lo + (hi - lo) / 2;
        bool left = upper[q] ? !(x < keys[mid]) : keys[mid] < x;
        if (left) lo = mid + 1;
        else hi = mid;
    }
    out[q] = lo;
}

// The merge of two sorted runs A and B (src/multi/mod.rs: merge_by_tiles), one
// tile of the output a block: each block reads its words once and writes them once, so a merge
// is one pass over the runs whatever their lengths.
//
// Tile t covers outputs [t T, t T + T). co_ranks gives, for every tile boundary o, the merge
// path: how many of the first o merged words come from A (A's words first among equal ones).
// The tile's words are then A[a0, a1) and B[o0 - a0, o1 - a1). Placed as B's words falling,
// A's rising and +inf up to T, they form a bitonic sequence, which log2 T half-cleaner steps
// sort. A thread holds E = 2^E_BITS words in registers; the steps run E_BITS tile bits at a
// time, the thread's registers covering those bits, with a trip through shared memory between.
template <typename W> struct MergeTile {
    // 16 words a thread, 2^12-word tiles of 16 or 32 KiB; key-index pairs 8, 2^11 (32 KiB).
    static const u32 E_BITS = sizeof(W) == 16 ? 3 : 4;
    static const u32 THREAD_BITS = 8;
    static const u32 TILE_BITS = E_BITS + THREAD_BITS;
};

template <typename W>
__device__ void co_ranks(const W *a, u64 a_len, const W *b, u64 b_len, u64 tile, u64 *ranks, u32 count) {
    u32 q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= count) return;
    const u64 o = min(a_len + b_len, q * tile);
    u64 lo = o > b_len ? o - b_len : 0, hi = o < a_len ? o : a_len;
    while (lo < hi) {
        u64 mid = lo + (hi - lo) / 2;
        if (!(b[o - mid - 1] < a[mid])) lo = mid + 1;
        else hi = mid;
    }
    ranks[q] = lo;
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

// Launched with one block of 2^THREAD_BITS threads a tile; `ranks` from co_ranks. The first
// phase's registers cover the top tile bits: thread t's word r is tile index r 2^THREAD_BITS +
// t, so it loads them straight from global memory, coalesced, all E loads in flight at once.
template <typename W> __device__ void merge_tiles(const W *a, const W *b, const u64 *ranks, W *out, u64 total) {
    const u32 TILE_BITS = MergeTile<W>::TILE_BITS, THREAD_BITS = MergeTile<W>::THREAD_BITS;
    const u32 E = 1u << MergeTile<W>::E_BITS, T = 1u << TILE_BITS;
    __shared__ W tile[T];
    const u64 o0 = u64(blockIdx.x) * T, o1 = min(total, o0 + T);
    const u64 a0 = ranks[blockIdx.x], a1 = ranks[blockIdx.x + 1];
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
        if (i < len) out[o0 + i] = tile[merge_slot<W>(i)];
    }
}

// keys[i] = the largest word: the +inf padding of a shard shorter than the longest.
template <typename W> __device__ void fill_largest(W *keys, u64 n) {
    GRID_STRIDE_LOOP64(i, n) keys[i] = largest_key<W>();
}

// out[i] = keys[positions[i]]: a rank's samples.
template <typename W> __device__ void take(const W *keys, const u64 *positions, W *out, u32 count) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) out[i] = keys[positions[i]];
}

// Key-value words for the multi-GPU key-value sort: KeyIndex words ordered by (key, global
// position), so equal keys keep their input order (stable), with the value in bits the order
// never decides on. 32-bit keys: key = sortable key << 32 | position, and index, unused hold a
// value of up to 64 bits. 64-bit keys: key = sortable key, index = position, unused = a 32-bit
// value. Positions are below 2^32 (the host checks).
template <typename V> __device__ void pack_kv32(const u32 *keys, const V *values, KeyIndex *out, u64 n, u64 first, u32 map) {
    GRID_STRIDE_LOOP64(i, n) {
        KeyIndex w;
        w.key = (u64(to_sortable(keys[i], map)) << 32) | u32(first + i);
        u64 v = u64(values[i]);
        w.index = u32(v);
        w.unused = u32(v >> 32);
        out[i] = w;
    }
}

template <typename V> __device__ void unpack_kv32(const KeyIndex *words, u32 *keys, V *values, u64 n, u32 map) {
    GRID_STRIDE_LOOP64(i, n) {
        KeyIndex w = words[i];
        keys[i] = from_sortable(u32(w.key >> 32), map);
        values[i] = V(u64(w.index) | (u64(w.unused) << 32));
    }
}

extern "C" __global__ void pack_kv64_u32(const u64 *keys, const u32 *values, KeyIndex *out, u64 n, u64 first, u32 map) {
    GRID_STRIDE_LOOP64(i, n) {
        KeyIndex w;
        w.key = to_sortable(keys[i], map);
        w.index = u32(first + i);
        w.unused = values[i];
        out[i] = w;
    }
}

extern "C" __global__ void unpack_kv64_u32(const KeyIndex *words, u64 *keys, u32 *values, u64 n, u32 map) {
    GRID_STRIDE_LOOP64(i, n) {
        KeyIndex w = words[i];
        keys[i] = from_sortable(w.key, map);
        values[i] = w.unused;
    }
}

// 64-bit keys with 8-byte values: the value travels in two sorts, half of it in each (`half` 0:
// the low 32 bits, 1: the high). The words order by (key, position) alone, so both sorts put
// every pair in the same place; the second unpack adds the high half to what the first wrote.
extern "C" __global__ void pack_kv64_u64(const u64 *keys, const u64 *values, KeyIndex *out, u64 n, u64 first, u32 map,
                                         u32 half) {
    GRID_STRIDE_LOOP64(i, n) {
        KeyIndex w;
        w.key = to_sortable(keys[i], map);
        w.index = u32(first + i);
        w.unused = u32(values[i] >> (32 * half));
        out[i] = w;
    }
}

extern "C" __global__ void unpack_kv64_u64(const KeyIndex *words, u64 *keys, u64 *values, u64 n, u32 map, u32 half) {
    GRID_STRIDE_LOOP64(i, n) {
        KeyIndex w = words[i];
        keys[i] = from_sortable(w.key, map);
        values[i] = half ? (values[i] & 0xffffffffull) | (u64(w.unused) << 32) : u64(w.unused);
    }
}

// SplitMix64: a well-mixed 64-bit word from any 64-bit input.
__device__ __forceinline__ u64 mix64(u64 z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// keys[i] = random word of global index first + i: the same data whatever the sharding.
template <typename W> __device__ void fill_random(W *keys, u64 n, u64 first, u64 seed) {
    GRID_STRIDE_LOOP64(i, n) keys[i] = W(mix64(seed ^ mix64(first + i)));
}

// Adds to sums[0] the wrapping sum of mix64(word) over the keys (equal before and after a sort
// if and only if, up to a 2^-64 chance, the sort kept the multiset), and to sums[1] the count
// of descents keys[i] > keys[i + 1].
template <typename W> __device__ void check_sorted(const W *keys, u64 n, u64 *sums) {
    u64 hash = 0, descents = 0;
    GRID_STRIDE_LOOP64(i, n) {
        W k = keys[i];
        hash += mix64(u64(k));
        if (i + 1 < n && keys[i + 1] < k) ++descents;
    }
    for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2) {
        hash += __shfl_down_sync(FULL_WARP_MASK, hash, offset);
        descents += __shfl_down_sync(FULL_WARP_MASK, descents, offset);
    }
    if ((threadIdx.x & (WARP_SIZE - 1)) == 0) {
        atomicAdd(&sums[0], hash);
        atomicAdd(&sums[1], descents);
    }
}

#define COUNT_PARAMS(W) (const W *keys, u64 n, const W *queries, const u32 *upper, u64 *out, u32 count)
EXPORT_FOR_BOTH_WIDTHS(count_below, COUNT_PARAMS, (keys, n, queries, upper, out, count))
#define CO_RANKS_PARAMS(W) (const W *a, u64 a_len, const W *b, u64 b_len, u64 tile, u64 *ranks, u32 count)
EXPORT_FOR_BOTH_WIDTHS(co_ranks, CO_RANKS_PARAMS, (a, a_len, b, b_len, tile, ranks, count))
#define MERGE_TILES_PARAMS(W) (const W *a, const W *b, const u64 *ranks, W *out, u64 total)
EXPORT_FOR_BOTH_WIDTHS(merge_tiles, MERGE_TILES_PARAMS, (a, b, ranks, out, total))
#define LARGEST_PARAMS(W) (W * keys, u64 n)
EXPORT_FOR_BOTH_WIDTHS(fill_largest, LARGEST_PARAMS, (keys, n))
#define TAKE_PARAMS(W) (const W *keys, const u64 *positions, W *out, u32 count)
EXPORT_FOR_BOTH_WIDTHS(take, TAKE_PARAMS, (keys, positions, out, count))
#define PACK32_PARAMS(V) (const u32 *keys, const V *values, KeyIndex *out, u64 n, u64 first, u32 map)
EXPORT_FOR_BOTH_WIDTHS(pack_kv32, PACK32_PARAMS, (keys, values, out, n, first, map))
#define UNPACK32_PARAMS(V) (const KeyIndex *words, u32 *keys, V *values, u64 n, u32 map)
EXPORT_FOR_BOTH_WIDTHS(unpack_kv32, UNPACK32_PARAMS, (words, keys, values, n, map))

// The merge-split and partition kernels for key-value words.
#define EXPORT_KV(name, PARAMS, ARGS) \
    extern "C" __global__ void name##_kv64 PARAMS(KeyIndex) { name<KeyIndex> ARGS; }
EXPORT_KV(count_below, COUNT_PARAMS, (keys, n, queries, upper, out, count))
EXPORT_KV(co_ranks, CO_RANKS_PARAMS, (a, a_len, b, b_len, tile, ranks, count))
EXPORT_KV(merge_tiles, MERGE_TILES_PARAMS, (a, b, ranks, out, total))
EXPORT_KV(fill_largest, LARGEST_PARAMS, (keys, n))
EXPORT_KV(take, TAKE_PARAMS, (keys, positions, out, count))

#define FILL_PARAMS(W) (W * keys, u64 n, u64 first, u64 seed)
EXPORT_FOR_BOTH_WIDTHS(fill_random, FILL_PARAMS, (keys, n, first, seed))
#define CHECK_PARAMS(W) (const W *keys, u64 n, u64 *sums)
EXPORT_FOR_BOTH_WIDTHS(check_sorted, CHECK_PARAMS, (keys, n, sums))
