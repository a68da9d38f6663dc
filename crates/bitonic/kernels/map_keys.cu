// Maps keys to the unsigned words the networks sort, and back (src/key.rs explains the maps).
// Descending order sorts the complemented words ascending.
#include "common.cuh"

// `map` is the key map's flags (src/kernels/abi.rs map_flags): its kind, descending order and
// numeric float order.
template <typename K> __device__ void map_keys(K *keys, u32 n, u32 map, u32 inverse) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        keys[i] = inverse ? from_sortable(keys[i], map) : to_sortable(keys[i], map);
    }
}

#define MAP_PARAMS(K) (K * keys, u32 n, u32 map, u32 inverse)
EXPORT_FOR_BOTH_WIDTHS(map_keys, MAP_PARAMS, (keys, n, map, inverse))

// The map out of place: keys copied into the words that sort ascending, one pass where a copy
// and then `map_keys` would read and write the words twice (the multi-GPU sorts' shards).
template <typename K> __device__ void map_keys_into(const K *keys, K *words, u32 n, u32 map) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        words[i] = to_sortable(keys[i], map);
    }
}

#define MAP_INTO_PARAMS(K) (const K *keys, K *words, u32 n, u32 map)
EXPORT_FOR_BOTH_WIDTHS(map_keys_into, MAP_INTO_PARAMS, (keys, words, n, map))

// 16-bit keys (f16, bf16) and the u32 words the GPU sorts in their place (src/cuda/run.rs, src/cuda/keymap.rs):
// the float map `map` over their 16 bits (its kind and numeric flags; the order, descending, is
// left to the sort of the words), zero-extended, and back.

extern "C" __global__ void widen_16(const u16 *keys, u32 *words, u32 n, u32 map) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        words[i] = to_sortable(keys[i], map);
    }
}

extern "C" __global__ void narrow_16(const u32 *words, u16 *keys, u32 n, u32 map) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        keys[i] = from_sortable((u16)words[i], map);
    }
}
