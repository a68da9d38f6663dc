// Maps keys to the unsigned words the networks sort, and back (src/key.rs explains the maps).
// Descending order sorts the complemented words ascending.
#include "common.cuh"

template <typename K>
__device__ void map_keys(K *keys, u32 n, u32 kind, u32 descending, u32 inverse) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        u32 map = kind | (descending ? MAP_DESCENDING : 0);
        keys[i] = inverse ? from_sortable(keys[i], map) : to_sortable(keys[i], map);
    }
}

#define MAP_PARAMS(K) (K * keys, u32 n, u32 kind, u32 descending, u32 inverse)
EXPORT_FOR_BOTH_WIDTHS(map_keys, MAP_PARAMS, (keys, n, kind, descending, inverse))
