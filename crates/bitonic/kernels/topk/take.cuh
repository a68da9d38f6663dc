// The take after a sort (src/cuda/run.rs `select`, Steps::TopkBySorting): the first k indices
// of each row of rows sorted stably, for a k the selects do not keep, and the keys they name.
// Plain words: relies on common/types.cuh only.
#pragma once

#include "common/types.cuh"

// dst[r * k + i] = src[r * row_len + i] for the first k elements of each row: the first k of
// rows sorted stably (a top-k larger than the filter keeps).
template <typename W> __device__ void topk_take(const W *src, u64 row_len, W *dst, u64 k, u64 count) {
    for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += u64(gridDim.x) * blockDim.x)
        dst[i] = src[(i / k) * row_len + i % k];
}

// values[i] = keys[(i / k) * row_len + indices[i]] for the count = rows x k results: each
// result's key, read from its row of the input by its index, so that the keys written are the
// input's own, bit for bit (the sorted copy holds words that tie equal floats).
template <typename W, typename I>
__device__ void topk_gather(const W *keys, u64 row_len, const I *indices, W *values, u64 k, u64 count) {
    for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += u64(gridDim.x) * blockDim.x)
        values[i] = keys[(i / k) * row_len + u64(indices[i])];
}
