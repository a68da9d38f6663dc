// The take after a sort (src/cuda/run.rs `select`, Steps::TopkBySorting): the first k indices
// of each row of rows sorted stably, for a k the selects do not keep, and the keys they name.
// Plain words: relies on common/types.cuh only.
#pragma once

#include "common/types.cuh"

// dst[r * k + i] = src[r * row_len + i] for the first k elements of each row: the first k of
// rows sorted stably (a top-k larger than the filter keeps).
//
// Every count here is below 2^32 (the library's most keys, src/plan/mod.rs MAX_LEN), so a row is
// found by a 32-bit division: a 64-bit one is a long emulated routine, which made the gather of
// a sort of 2^24 keys cost a third of the sort.
template <typename W> __device__ void topk_take(const W *src, u64 row_len, W *dst, u64 k, u64 count) {
    const u32 k32 = u32(k);
    for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += u64(gridDim.x) * blockDim.x) {
        const u32 row = u32(i) / k32;
        dst[i] = src[u64(row) * row_len + (u32(i) - row * k32)];
    }
}

// values[i] = keys[(i / k) * row_len + indices[i]] for the count = rows x k results: each
// result's key, read from its row of the input by its index, so that the keys written are the
// input's own, bit for bit (the sorted copy holds words that tie equal floats).
template <typename W, typename I>
__device__ void topk_gather(const W *keys, u64 row_len, const I *indices, W *values, u64 k, u64 count) {
    for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += u64(gridDim.x) * blockDim.x)
        values[i] = keys[u64(u32(i) / u32(k)) * row_len + u64(indices[i])];
}
