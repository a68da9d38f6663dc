// Kernels of the multi-GPU sort (src/cuda/multi/) and its benchmark: the binary searches that
// cut shards at splitters, key-value packing, and on-device random keys with an order-free
// checksum, so that 16 GiB of keys never cross the PCIe bus. Its merges are kernels/merge.cu's.
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
// never decides on. 32-bit keys: key = sortable key << 32 | position, and index, value hold a
// value of up to 64 bits. 64-bit keys: key = sortable key, index = position, value = a 32-bit
// value. Positions are below 2^32 (the host checks).
template <typename V> __device__ void pack_kv32(const u32 *keys, const V *values, KeyIndex *out, u64 n, u64 first, u32 map) {
    GRID_STRIDE_LOOP64(i, n) {
        KeyIndex w;
        w.key = (u64(to_sortable(keys[i], map)) << 32) | u32(first + i);
        u64 v = u64(values[i]);
        w.index = u32(v);
        w.value = u32(v >> 32);
        out[i] = w;
    }
}

template <typename V> __device__ void unpack_kv32(const KeyIndex *words, u32 *keys, V *values, u64 n, u32 map) {
    GRID_STRIDE_LOOP64(i, n) {
        KeyIndex w = words[i];
        keys[i] = from_sortable(u32(w.key >> 32), map);
        values[i] = V(u64(w.index) | (u64(w.value) << 32));
    }
}

extern "C" __global__ void pack_kv64_u32(const u64 *keys, const u32 *values, KeyIndex *out, u64 n, u64 first, u32 map) {
    GRID_STRIDE_LOOP64(i, n) {
        KeyIndex w;
        w.key = to_sortable(keys[i], map);
        w.index = u32(first + i);
        w.value = values[i];
        out[i] = w;
    }
}

extern "C" __global__ void unpack_kv64_u32(const KeyIndex *words, u64 *keys, u32 *values, u64 n, u32 map) {
    GRID_STRIDE_LOOP64(i, n) {
        KeyIndex w = words[i];
        keys[i] = from_sortable(w.key, map);
        values[i] = w.value;
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
        w.value = u32(values[i] >> (32 * half));
        out[i] = w;
    }
}

extern "C" __global__ void unpack_kv64_u64(const KeyIndex *words, u64 *keys, u64 *values, u64 n, u32 map, u32 half) {
    GRID_STRIDE_LOOP64(i, n) {
        KeyIndex w = words[i];
        keys[i] = from_sortable(w.key, map);
        values[i] = half ? (values[i] & 0xffffffffull) | (u64(w.value) << 32) : u64(w.value);
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
EXPORT_FOR_ALL_WORDS(count_below, COUNT_PARAMS, (keys, n, queries, upper, out, count))
#define LARGEST_PARAMS(W) (W * keys, u64 n)
EXPORT_FOR_ALL_WORDS(fill_largest, LARGEST_PARAMS, (keys, n))
#define TAKE_PARAMS(W) (const W *keys, const u64 *positions, W *out, u32 count)
EXPORT_FOR_ALL_WORDS(take, TAKE_PARAMS, (keys, positions, out, count))
#define PACK32_PARAMS(V) (const u32 *keys, const V *values, KeyIndex *out, u64 n, u64 first, u32 map)
EXPORT_FOR_BOTH_WIDTHS(pack_kv32, PACK32_PARAMS, (keys, values, out, n, first, map))
#define UNPACK32_PARAMS(V) (const KeyIndex *words, u32 *keys, V *values, u64 n, u32 map)
EXPORT_FOR_BOTH_WIDTHS(unpack_kv32, UNPACK32_PARAMS, (words, keys, values, n, map))

#define FILL_PARAMS(W) (W * keys, u64 n, u64 first, u64 seed)
EXPORT_FOR_BOTH_WIDTHS(fill_random, FILL_PARAMS, (keys, n, first, seed))
#define CHECK_PARAMS(W) (const W *keys, u64 n, u64 *sums)
EXPORT_FOR_BOTH_WIDTHS(check_sorted, CHECK_PARAMS, (keys, n, sums))
