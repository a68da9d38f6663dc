// V4: half as many threads, each doing one useful compare-exchange per step: thread t takes
// comparator t, whose lower index is lower_index(t, stride). A block of blockDim.x threads
// owns a chunk of 2 * blockDim.x keys; thread t loads and stores keys 2t and 2t + 1.
// As in the report's Algorithm 8, the in-block steps all go through shared memory.
//   v4_block_sort:  stages 2 .. 2 * blockDim.x, all inside each block's chunk
//   v4_block_merge: for a larger stage, its steps of stride blockDim.x .. 1
//   v4_step:        the steps of larger stride, one launch each, one thread per comparator
#include "common.cuh"

template <typename K> __device__ void v4_step(K *keys, u32 n, u32 size, u32 stride) {
    global_step_per_pair(keys, n, size, stride);
}

template <typename K> __device__ __forceinline__ void load_pair(K *tile, const K *keys, u32 n, u32 base, u32 t) {
    u32 a = 2 * t, b = 2 * t + 1;
    tile[a] = base + a < n ? keys[base + a] : largest_key<K>();
    tile[b] = base + b < n ? keys[base + b] : largest_key<K>();
}

template <typename K> __device__ __forceinline__ void store_pair(K *keys, const K *tile, u32 n, u32 base, u32 t) {
    u32 a = 2 * t, b = 2 * t + 1;
    if (base + a < n) keys[base + a] = tile[a];
    if (base + b < n) keys[base + b] = tile[b];
}

// One in-block step: comparator t of the tile.
template <typename K> __device__ __forceinline__ void tile_step(K *tile, u32 t, u32 size, u32 stride) {
    u32 i = lower_index(t, stride);
    u32 j = stride * 2 == size ? i ^ (size - 1) : i + stride;
    compare_exchange(tile, i, j);
}

template <typename K> __device__ void v4_block_sort(K *keys, u32 n) {
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

template <typename K> __device__ void v4_block_merge(K *keys, u32 n, u32 size) {
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

EXPORT_FOR_BOTH_WIDTHS(v4_step, STEP_PARAMS, STEP_ARGS)
EXPORT_FOR_BOTH_WIDTHS(v4_block_sort, SORT_PARAMS, SORT_ARGS)
EXPORT_FOR_BOTH_WIDTHS(v4_block_merge, MERGE_PARAMS, MERGE_ARGS)
