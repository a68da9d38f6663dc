// V1: the steps whose partners stay inside one block are fused into one launch, with
// __syncthreads() between them. Still global memory, still one thread per key.
//   v1_block_sort:  stages 2 .. blockDim.x, all inside each block's chunk of blockDim.x keys
//   v1_block_merge: for a larger stage, its steps of stride blockDim.x/2 .. 1
//   v1_step:        the steps of larger stride, one launch each, as in V0
#include "common.cuh"

template <typename K> __device__ void v1_step(K *keys, u32 n, u32 size, u32 stride) {
    global_step_per_key(keys, n, size, stride);
}

template <typename K> __device__ void v1_block_sort(K *keys, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    for (u32 size = 2; size <= blockDim.x; size <<= 1) {
        for (u32 stride = size / 2; stride > 0; stride >>= 1) {
            u32 j = partner(i, size, stride);
            // No early return: every thread must reach the barrier.
            if (i < n && j > i && j < n) compare_exchange(keys, i, j);
            __syncthreads();
        }
    }
}

template <typename K> __device__ void v1_block_merge(K *keys, u32 n, u32 size) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    for (u32 stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        u32 j = partner(i, size, stride);
        if (i < n && j > i && j < n) compare_exchange(keys, i, j);
        __syncthreads();
    }
}

EXPORT_FOR_BOTH_WIDTHS(v1_step, STEP_PARAMS, STEP_ARGS)
EXPORT_FOR_BOTH_WIDTHS(v1_block_sort, SORT_PARAMS, SORT_ARGS)
EXPORT_FOR_BOTH_WIDTHS(v1_block_merge, MERGE_PARAMS, MERGE_ARGS)
