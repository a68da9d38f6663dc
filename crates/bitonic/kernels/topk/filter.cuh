// The threshold filter (src/plan/topk/mod.rs filter_plan, Strategy::TopkFilter; also the fallback of the sampled
// and the spread select): the best k of a chunk of a row, through flushes of a buffer in shared
// memory. Relies on topk/common.cuh (composites, Held, Vector, Put) and topk/sorts.cuh
// (sort_best_first).
//
// One block selects from one chunk of one row, in shared memory `buf[slots]`: slots [0, k)
// hold the best k so far, sorted best first; [k, slots) take candidates, counted by `count`.
// Each round the block loads one tile (THREADS threads, one 16-byte vector a thread) and
// appends every key that beats the k-th best (read once a flush). Before a tile that could
// overflow the candidates, and at the end, the block *flushes*: pads the candidates with
// zero, sorts the whole buffer best first with a bitonic network, and restarts the count.
// The chunk's best k go to `partials` (a row's chunks' results, reduced by another launch of
// the `topk_partials_*` kernel over them), or, when a row is one chunk, unmapped to `values`
// and `indices`. The host (src/plan/topk/mod.rs) sizes `slots` >= k + min(2 tiles, chunk) so that
// a tile always fits after a flush, and rarely needs one.
#pragma once

#include "topk/sorts.cuh"

// Appends `c` to the candidates when it beats the k-th best.
template <typename C>
__device__ __forceinline__ void offer(C *buf, u32 k, u32 *count, const C &threshold, const C &c) {
    if (better(c, threshold)) buf[k + atomicAdd(count, 1u)] = c;
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

// filter_chunk's tiles from `from` to `end` of a row, in 16-byte vectors where `vectors`, each
// key's map with or without numeric order's work (`order`: filter_chunk has a copy of each):
// the keys better than `threshold` offered to the candidates buf[*count, ...), flushed to
// their best k (the new threshold) whenever a tile might not fit.
template <typename C, typename In, typename Order>
__device__ __forceinline__ void filter_tiles(const In *row_input, u64 from, u64 end, bool vectors, u32 map, Order order,
                                             u32 slots, u32 k, C *buf, u32 *count, C &threshold) {
    const u32 VEC = Vector<In>::N;
    const u32 TILE = THREADS * VEC;
    const u32 capacity = slots - k;
    for (u64 tile = from; tile < end; tile += TILE) {
        const u32 n = u32(min(u64(TILE), end - tile));
        __syncthreads(); // the previous tile's candidates are in
        // Every thread reads the count before any appends again: the barrier of the OR.
        if (__syncthreads_or(*count + n > capacity)) threshold = flush(buf, k, slots, count);
        if (vectors && n == TILE) {
            In e[VEC];
            u64 at = tile + u64(threadIdx.x) * VEC;
            Vector<In>::load(row_input + at, e);
#pragma unroll
            for (u32 v = 0; v < VEC; v++)
                offer(buf, k, count, threshold, candidate<C, In>(e[v], u32(at + v), map, order));
        } else {
#pragma unroll
            for (u32 v = 0; v < VEC; v++) {
                u64 at = tile + v * THREADS + threadIdx.x;
                if (at < end) offer(buf, k, count, threshold, candidate<C, In>(row_input[at], u32(at), map, order));
            }
        }
    }
}

// The best k of the elements [begin, end) of a row (`row_input`; keys `K`, or composites `C`
// in a reduction pass), to `put` (its k, map and row or item). The block's shared memory holds
// `slots` composites, at least k + one tile (THREADS 16-byte vectors). Called by the whole
// block.
template <typename K, typename C, typename In>
__device__ void filter_chunk(const In *row_input, u64 begin, u64 end, u32 slots, const Put<K, C> &put) {
    const u32 k = put.k, map = put.map;
    C *buf = shared_tile<C>();
    __shared__ u32 count;
    __syncthreads(); // the previous item's results are written
    for (u32 i = threadIdx.x; i < slots; i += THREADS) buf[i] = padding<C>();
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    C threshold = padding<C>();
    // The elements before the first 16-byte boundary, one a thread (fewer than VEC, which the
    // candidate area holds); the tiles after it load in 16-byte vectors where that boundary
    // falls on an element (always, but for composites at an address of 8 mod 16).
    const u64 address = reinterpret_cast<u64>(row_input + begin);
    const u64 head = min(u64((16 - address % 16) % 16 / sizeof(In)), end - begin);
    const bool vectors = (address + head * sizeof(In)) % 16 == 0;
    if (threadIdx.x < head) {
        u64 at = begin + threadIdx.x;
        offer(buf, k, &count, threshold, candidate<C, In>(row_input[at], u32(at), map));
    }
    const u64 from = begin + head;
    if (map & MAP_NUMERIC) filter_tiles(row_input, from, end, vectors, map, KnownOrder<true>(), slots, k, buf, &count, threshold);
    else filter_tiles(row_input, from, end, vectors, map, KnownOrder<false>(), slots, k, buf, &count, threshold);
    __syncthreads();
    if (count > 0) flush(buf, k, slots, &count); // block-uniform: no append since
    for (u32 i = threadIdx.x; i < k; i += THREADS) put(i, buf[i]);
}

// The best k of chunk `chunk` of every row of `row_len` elements of `input`, for each of
// rows x chunks (row, chunk) items, by filter_chunk.
template <typename K, typename C, typename In>
__device__ void topk_filter(const In *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len,
                            u32 k, u32 slots, u32 map, C *partials, K *values, u32 *indices, const K *keys,
                            u64 keys_row_len) {
    const u64 items = u64(rows) * chunks;
    for (u64 item = blockIdx.x; item < items; item += gridDim.x) {
        const u64 row = item / chunks, chunk = item % chunks;
        const u64 begin = chunk * chunk_len;
        const u64 end = min(begin + chunk_len, row_len);
        const Put<K, C> put = {values, indices, keys + row * keys_row_len, partials, row, item, k, map, chunks == 1};
        filter_chunk(input + row * row_len, begin, end, slots, put);
    }
}
