// V3: V2 with warp shuffles for strides below 32. Both keys of such a pair live in one warp,
// so each thread swaps its key with its partner's through __shfl_xor_sync and keeps the min
// or the max: no shared memory, no barrier, no branch. The partner in the first step of a
// stage is the mirror lane (xor size - 1), otherwise lane xor stride.
//   v3_block_sort:  stages 2 .. blockDim.x, all inside each block's chunk of blockDim.x keys
//   v3_block_merge: for a larger stage, its steps of stride blockDim.x/2 .. 1
//   v3_step:        the steps of larger stride, one launch each, as in V0
#include "common.cuh"

template <typename K> __device__ void v3_step(K *keys, u32 n, u32 size, u32 stride) {
    global_step_per_key(keys, n, size, stride);
}

// The steps of stage `size` with stride < 32, on the tile, through registers.
template <typename K> __device__ __forceinline__ void warp_steps(K *tile, u32 t, u32 size, u32 stride) {
    K key = tile[t];
    for (; stride > 0; stride >>= 1) {
        u32 lane_xor = stride * 2 == size ? size - 1 : stride;
        K other = __shfl_xor_sync(FULL_WARP_MASK, key, lane_xor);
        bool keep_smaller = t < (t ^ lane_xor);
        key = keep_smaller ? min(key, other) : max(key, other);
    }
    tile[t] = key;
}

template <typename K> __device__ void v3_block_sort(K *keys, u32 n) {
    K *tile = shared_tile<K>();
    u32 t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    tile[t] = i < n ? keys[i] : largest_key<K>();
    __syncthreads();
    for (u32 size = 2; size <= blockDim.x; size <<= 1) {
        u32 stride = size / 2;
        for (; stride >= WARP_SIZE; stride >>= 1) {
            u32 j = partner(t, size, stride);
            if (j > t) compare_exchange(tile, t, j);
            __syncthreads();
        }
        warp_steps(tile, t, size, stride);
        __syncthreads();
    }
    if (i < n) keys[i] = tile[t];
}

template <typename K> __device__ void v3_block_merge(K *keys, u32 n, u32 size) {
    K *tile = shared_tile<K>();
    u32 t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    tile[t] = i < n ? keys[i] : largest_key<K>();
    __syncthreads();
    u32 stride = blockDim.x / 2;
    for (; stride >= WARP_SIZE; stride >>= 1) {
        u32 j = partner(t, size, stride);
        if (j > t) compare_exchange(tile, t, j);
        __syncthreads();
    }
    warp_steps(tile, t, size, stride);
    if (i < n) keys[i] = tile[t];
}

EXPORT_FOR_BOTH_WIDTHS(v3_step, STEP_PARAMS, STEP_ARGS)
EXPORT_FOR_BOTH_WIDTHS(v3_block_sort, SORT_PARAMS, SORT_ARGS)
EXPORT_FOR_BOTH_WIDTHS(v3_block_merge, MERGE_PARAMS, MERGE_ARGS)
