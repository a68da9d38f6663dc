// V5: V4 without its 2-way shared-memory bank conflict. In V4 thread t loads tile[2t], then
// tile[2t + 1]; threads t and t + 16 of a warp hit the same bank (2t and 2t + 32 are 32 words
// apart) in each of the two accesses. Here the upper half-warp does its two accesses in the
// other order, so at each access the lower half touches the even banks and the upper half the
// odd ones. Everything else is V4.
//   v5_block_sort:  stages 2 .. 2 * blockDim.x, all inside each block's chunk
//   v5_block_merge: for a larger stage, its steps of stride blockDim.x .. 1
//   v5_step:        the steps of larger stride, one launch each, one thread per comparator
#include "common.cuh"

template <typename K> __device__ void v5_step(K *keys, u32 n, u32 size, u32 stride) {
    global_step_per_pair(keys, n, size, stride);
}

template <typename K> __device__ __forceinline__ void load_pair(K *tile, const K *keys, u32 n, u32 base, u32 t) {
    u32 upper_half = (t & (WARP_SIZE / 2)) != 0;
    u32 a = 2 * t + upper_half, b = 2 * t + 1 - upper_half;
    tile[a] = base + a < n ? keys[base + a] : largest_key<K>();
    tile[b] = base + b < n ? keys[base + b] : largest_key<K>();
}

template <typename K> __device__ __forceinline__ void store_pair(K *keys, const K *tile, u32 n, u32 base, u32 t) {
    u32 upper_half = (t & (WARP_SIZE / 2)) != 0;
    u32 a = 2 * t + upper_half, b = 2 * t + 1 - upper_half;
    if (base + a < n) keys[base + a] = tile[a];
    if (base + b < n) keys[base + b] = tile[b];
}

// One in-block step: comparator t of the tile.
template <typename K> __device__ __forceinline__ void tile_step(K *tile, u32 t, u32 size, u32 stride) {
    u32 i = lower_index(t, stride);
    u32 j = stride * 2 == size ? i ^ (size - 1) : i + stride;
    compare_exchange(tile, i, j);
}

template <typename K> __device__ void v5_block_sort(K *keys, u32 n) {
    K *tile = shared_tile<K>();
    u32 t = threadIdx.x, chunk = 2 * blockDim.x, base = blockIdx.x * chunk;
    load_pair(tile, keys, n, base, t);
    __syncthreads();
    for (u32 size = 2; size <= chunk; size <<= 1) {
        for (u32 stride = size / 2; stride > 0; stride >>= 1) {
            tile_step(tile, t, size, stride);
            __syncthreads();
        }
    }
    store_pair(keys, tile, n, base, t);
}

template <typename K> __device__ void v5_block_merge(K *keys, u32 n, u32 size) {
    K *tile = shared_tile<K>();
    u32 t = threadIdx.x, chunk = 2 * blockDim.x, base = blockIdx.x * chunk;
    load_pair(tile, keys, n, base, t);
    __syncthreads();
    for (u32 stride = blockDim.x; stride > 0; stride >>= 1) {
        tile_step(tile, t, size, stride);
        __syncthreads();
    }
    store_pair(keys, tile, n, base, t);
}

EXPORT_FOR_BOTH_WIDTHS(v5_step, STEP_PARAMS, STEP_ARGS)
EXPORT_FOR_BOTH_WIDTHS(v5_block_sort, SORT_PARAMS, SORT_ARGS)
EXPORT_FOR_BOTH_WIDTHS(v5_block_merge, MERGE_PARAMS, MERGE_ARGS)
