// The take after a sort (src/cuda/run.rs `select`, Steps::TopkBySorting): the first k of each row of rows sorted
// stably, for a k the selects do not keep. Plain words: relies on common/types.cuh only.
#pragma once

#include "common/types.cuh"

// dst[r * k + i] = src[r * row_len + i] for the first k elements of each row: the first k of
// rows sorted stably (a top-k larger than the filter keeps).
template <typename W> __device__ void topk_take(const W *src, u64 row_len, W *dst, u64 k, u64 count) {
    for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += u64(gridDim.x) * blockDim.x)
        dst[i] = src[(i / k) * row_len + i % k];
}
