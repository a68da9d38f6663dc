// Top-k selection (src/cuda/topk.rs): each row's k best keys, sorted, with their indices.
//
// Every key becomes a *composite* word that orders candidates totally, larger = better: a
// 32-bit key's sortable word and its complemented index in one u64, `(word << 32) | ~index`,
// a 64-bit key's the 16-byte KeyIndex `{word, ~index}` ordered lexicographically. The map
// complements the word when the smallest keys are selected (MAP_DESCENDING), and the
// complemented index lets the smaller index win among equal keys: the result is the first k
// of a stable sort. A real composite is never the all-zero word (indices stay below 2^31, so
// ~index is not 0): zero is the padding that loses to everything.
//
// One block selects from one chunk of one row, in shared memory `buf[slots]`: slots [0, k)
// hold the best k so far, sorted best first; [k, slots) take candidates, counted by `count`.
// Each round the block loads one tile (THREADS threads, one 16-byte vector a thread) and
// appends every key that beats the k-th best (read once a flush). Before a tile that could
// overflow the candidates, and at the end, the block *flushes*: pads the candidates with
// zero, sorts the whole buffer best first with a bitonic network, and restarts the count.
// The chunk's best k go to `partials` (a row's chunks' results, reduced by another launch of
// the `topk_partials_*` kernel over them), or, when a row is one chunk, unmapped to `values`
// and `indices`. The host (src/cuda/topk.rs) sizes `slots` >= k + min(2 tiles, chunk) so that
// a tile always fits after a flush, and rarely needs one.
//
// Parts: BITONIC_PART_U32 (32-bit keys, u64 composites), BITONIC_PART_U64 (64-bit keys,
// KeyIndex composites).
#include "common/types.cuh"
#include "common/keys.cuh"
#include "common/network.cuh"

#ifndef BITONIC_TOPK_THREADS
#error "the host passes BITONIC_TOPK_THREADS (src/cuda/topk.rs)"
#endif
#define THREADS BITONIC_TOPK_THREADS

// Composites: made from a sortable word and an index, compared, taken apart.
__device__ __forceinline__ u64 composite(u32 word, u32 index) { return (u64(word) << 32) | u32(~index); }
__device__ __forceinline__ KeyIndex composite(u64 word, u32 index) {
    KeyIndex c;
    c.key = word;
    c.index = ~index;
    c.unused = 0;
    return c;
}
__device__ __forceinline__ bool better(u64 a, u64 b) { return a > b; }
__device__ __forceinline__ bool better(const KeyIndex &a, const KeyIndex &b) { return b < a; }
__device__ __forceinline__ u32 word_of(u64 c) { return u32(c >> 32); }
__device__ __forceinline__ u64 word_of(const KeyIndex &c) { return c.key; }
__device__ __forceinline__ u32 index_of(u64 c) { return ~u32(c); }
__device__ __forceinline__ u32 index_of(const KeyIndex &c) { return ~c.index; }

template <typename C> __device__ __forceinline__ C padding();
template <> __device__ __forceinline__ u64 padding<u64>() { return 0; }
template <> __device__ __forceinline__ KeyIndex padding<KeyIndex>() { return composite(u64(0), ~0u); }

// The composite of an element `In` at `index` in its row: a key is mapped and paired with its
// index; a composite (a reduction pass) is one already.
template <typename C, typename In> struct Candidate {
    __device__ static C of(In key, u32 index, u32 map) { return composite(to_sortable(key, map), index); }
};
template <typename C> struct Candidate<C, C> {
    __device__ static C of(const C &c, u32, u32) { return c; }
};

// 16 bytes of elements, loaded at once from a 16-byte aligned address.
template <typename T> struct Vector;
template <> struct Vector<u32> {
    static const u32 N = 4;
    __device__ static void load(const u32 *p, u32 *out) {
        uint4 v = *reinterpret_cast<const uint4 *>(p);
        out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
    }
};
template <> struct Vector<u64> {
    static const u32 N = 2;
    __device__ static void load(const u64 *p, u64 *out) {
        ulonglong2 v = *reinterpret_cast<const ulonglong2 *>(p);
        out[0] = v.x, out[1] = v.y;
    }
};
template <> struct Vector<KeyIndex> {
    static const u32 N = 1;
    __device__ static void load(const KeyIndex *p, KeyIndex *out) {
        ulonglong2 v = *reinterpret_cast<const ulonglong2 *>(p);
        out[0].key = v.x;
        out[0].index = u32(v.y); // little-endian: index, then unused
        out[0].unused = u32(v.y >> 32);
    }
};

// Appends `c` to the candidates when it beats the k-th best.
template <typename C>
__device__ __forceinline__ void offer(C *buf, u32 k, u32 *count, const C &threshold, const C &c) {
    if (better(c, threshold)) buf[k + atomicAdd(count, 1u)] = c;
}

// Sorts buf[0, slots) best first (slots a power of two): the network's all-ascending form,
// slots / 2 comparators a step spread over the block. Ends with a barrier.
template <typename C> __device__ void sort_best_first(C *buf, u32 slots) {
    for (u32 size = 2; size <= slots; size <<= 1) {
        for (u32 stride = size >> 1; stride > 0; stride >>= 1) {
            for (u32 t = threadIdx.x; t < slots / 2; t += THREADS) {
                u32 i = lower_index(t, stride);
                u32 j = stride * 2 == size ? i ^ (size - 1) : i + stride;
                C a = buf[i], b = buf[j];
                if (better(b, a)) {
                    buf[i] = b;
                    buf[j] = a;
                }
            }
            __syncthreads();
        }
    }
}

// Sorts the candidates in: every thread reads `count` (unchanged since the caller's barrier),
// the unused slots get padding, the buffer is sorted, the count restarts. Returns the new
// k-th best. Called by the whole block.
template <typename C> __device__ C flush(C *buf, u32 k, u32 slots, u32 *count) {
    u32 used = k + *count;
    for (u32 i = used + threadIdx.x; i < slots; i += THREADS) buf[i] = padding<C>();
    __syncthreads();
    sort_best_first(buf, slots);
    if (threadIdx.x == 0) *count = 0;
    __syncthreads();
    return buf[k - 1];
}

// The best k of chunk `chunk` of every row of `row_len` elements of `input` (keys `K`, or
// composites `C` in a reduction pass), for each of rows x chunks (row, chunk) items. With one
// chunk a row the results are final: `values` (unmapped keys) and `indices` (in the row),
// k a row; else `partials`, k composites an item, row-major.
template <typename K, typename C, typename In>
__device__ void topk_filter(const In *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len,
                            u32 k, u32 slots, u32 map, C *partials, K *values, u32 *indices) {
    C *buf = shared_tile<C>();
    __shared__ u32 count;
    const u32 VEC = Vector<In>::N;
    const u32 TILE = THREADS * VEC;
    const u32 capacity = slots - k;
    const bool vectors = reinterpret_cast<u64>(input) % 16 == 0;
    const u64 items = u64(rows) * chunks;
    for (u64 item = blockIdx.x; item < items; item += gridDim.x) {
        const u64 row = item / chunks, chunk = item % chunks;
        const u64 begin = chunk * chunk_len;
        const u64 end = min(begin + chunk_len, row_len);
        const In *row_input = input + row * row_len;
        __syncthreads(); // the previous item's results are written
        for (u32 i = threadIdx.x; i < slots; i += THREADS) buf[i] = padding<C>();
        if (threadIdx.x == 0) count = 0;
        __syncthreads();
        C threshold = padding<C>();
        // The elements before the first 16-byte boundary, one a thread (fewer than VEC, which
        // the candidate area holds: the host makes it at least min(2 tiles, chunk)).
        u64 head = vectors ? (VEC - (row * row_len + begin) % VEC) % VEC : 0;
        head = min(head, end - begin);
        if (threadIdx.x < head) {
            u64 at = begin + threadIdx.x;
            offer(buf, k, &count, threshold, Candidate<C, In>::of(row_input[at], u32(at), map));
        }
        for (u64 tile = begin + head; tile < end; tile += TILE) {
            const u32 n = u32(min(u64(TILE), end - tile));
            __syncthreads(); // the previous tile's candidates are in
            // Every thread reads the count before any appends again: the barrier of the OR.
            if (__syncthreads_or(count + n > capacity)) threshold = flush(buf, k, slots, &count);
            if (vectors && n == TILE) {
                In e[VEC];
                u64 at = tile + u64(threadIdx.x) * VEC;
                Vector<In>::load(row_input + at, e);
#pragma unroll
                for (u32 v = 0; v < VEC; v++)
                    offer(buf, k, &count, threshold, Candidate<C, In>::of(e[v], u32(at + v), map));
            } else {
#pragma unroll
                for (u32 v = 0; v < VEC; v++) {
                    u64 at = tile + v * THREADS + threadIdx.x;
                    if (at < end) offer(buf, k, &count, threshold, Candidate<C, In>::of(row_input[at], u32(at), map));
                }
            }
        }
        __syncthreads();
        if (count > 0) flush(buf, k, slots, &count); // block-uniform: no append since
        for (u32 i = threadIdx.x; i < k; i += THREADS) {
            C c = buf[i];
            if (chunks == 1) {
                values[row * k + i] = from_sortable(word_of(c), map);
                indices[row * k + i] = index_of(c);
            } else {
                partials[item * k + i] = c;
            }
        }
    }
}

// dst[r * k + i] = src[r * row_len + i] for the first k elements of each row: the first k of
// rows sorted stably (a top-k larger than the filter keeps).
template <typename W> __device__ void topk_take(const W *src, u64 row_len, W *dst, u64 k, u64 count) {
    for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += u64(gridDim.x) * blockDim.x)
        dst[i] = src[(i / k) * row_len + i % k];
}

#define TOPK_PARAMS(In, C, K)                                                                   \
    (const In *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len, u32 k, u32 slots, u32 map, \
     C *partials, K *values, u32 *indices)
#define TOPK_ARGS (input, row_len, rows, chunks, chunk_len, k, slots, map, partials, values, indices)
#define TAKE_PARAMS(W) (const W *src, u64 row_len, W *dst, u64 k, u64 count)
#define TAKE_ARGS (src, row_len, dst, k, count)

// The kernels of one key width W: over keys, over partial results, and the take of indices
// (u32) and of keys of the width.
#define EXPORT_TOPK(W, C)                                                                       \
    extern "C" __global__ void __launch_bounds__(THREADS) topk_keys_##W TOPK_PARAMS(W, C, W) {   \
        topk_filter<W, C, W> TOPK_ARGS;                                                         \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(THREADS) topk_partials_##W TOPK_PARAMS(C, C, W) { \
        topk_filter<W, C, C> TOPK_ARGS;                                                         \
    }                                                                                           \
    extern "C" __global__ void topk_take_##W TAKE_PARAMS(W) { topk_take<W> TAKE_ARGS; }

#if defined(BITONIC_PART_U32)
EXPORT_TOPK(u32, u64)
#elif defined(BITONIC_PART_U64)
EXPORT_TOPK(u64, KeyIndex)
extern "C" __global__ void topk_take_u32 TAKE_PARAMS(u32) { topk_take<u32> TAKE_ARGS; }
#else
#error "topk.cu compiles one part a key width: BITONIC_PART_U32 or BITONIC_PART_U64"
#endif
