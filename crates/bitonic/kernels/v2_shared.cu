// V2: V1 with each block's chunk held in shared memory while its in-block steps run.
// The tile is padded with the largest key past n, so the in-block steps need no bounds check.
//   v2_block_sort:  stages 2 .. blockDim.x, all inside each block's chunk of blockDim.x keys
//   v2_block_merge: for a larger stage, its steps of stride blockDim.x/2 .. 1
//   v2_step:        the steps of larger stride, one launch each, as in V0
#include "common.cuh"

template <typename K> __device__ void v2_step(K *keys, u32 n, u32 size, u32 stride) {
    global_step_per_key(keys, n, size, stride);
}

template <typename K> __device__ void v2_block_sort(K *keys, u32 n) {
    K *tile = shared_tile<K>();
    u32 t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    tile[t] = i < n ? keys[i] : largest_key<K>();
    __syncthreads();
    for (u32 size = 2; size <= blockDim.x; size <<= 1) {
        for (u32 stride = size / 2; stride > 0; stride >>= 1) {
            u32 j = partner(t, size, stride);
            if (j > t) compare_exchange(tile, t, j);
            __syncthreads();
        }
    }
    if (i < n) keys[i] = tile[t];
}

template <typename K> __device__ void v2_block_merge(K *keys, u32 n, u32 size) {
    K *tile = shared_tile<K>();
    u32 t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    tile[t] = i < n ? keys[i] : largest_key<K>();
    __syncthreads();
    for (u32 stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        u32 j = partner(t, size, stride);
        if (j > t) compare_exchange(tile, t, j);
        __syncthreads();
    }
    if (i < n) keys[i] = tile[t];
}

EXPORT_FOR_BOTH_WIDTHS(v2_step, STEP_PARAMS, STEP_ARGS)
EXPORT_FOR_BOTH_WIDTHS(v2_block_sort, SORT_PARAMS, SORT_ARGS)
EXPORT_FOR_BOTH_WIDTHS(v2_block_merge, MERGE_PARAMS, MERGE_ARGS)
