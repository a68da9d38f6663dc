// Maps keys to the unsigned words the networks sort, and back (src/key.rs explains the maps).
// Descending order sorts the complemented words ascending.
#include "common.cuh"

// Discriminants of src/key.rs's MapKind.
#define MAP_UNSIGNED 0
#define MAP_SIGNED 1
#define MAP_FLOAT 2

template <typename K> __device__ __forceinline__ K to_ordered(K w, u32 kind) {
    const K sign = K(1) << (sizeof(K) * 8 - 1);
    if (kind == MAP_SIGNED) return w ^ sign;
    if (kind == MAP_FLOAT) return (w & sign) ? ~w : w ^ sign;
    return w;
}

template <typename K> __device__ __forceinline__ K from_ordered(K w, u32 kind) {
    const K sign = K(1) << (sizeof(K) * 8 - 1);
    if (kind == MAP_SIGNED) return w ^ sign;
    if (kind == MAP_FLOAT) return (w & sign) ? w ^ sign : ~w;
    return w;
}

template <typename K>
__device__ void map_keys(K *keys, u32 n, u32 kind, u32 descending, u32 inverse) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        K w = keys[i];
        if (inverse) {
            keys[i] = from_ordered(descending ? ~w : w, kind);
        } else {
            w = to_ordered(w, kind);
            keys[i] = descending ? ~w : w;
        }
    }
}

#define MAP_PARAMS(K) (K * keys, u32 n, u32 kind, u32 descending, u32 inverse)
EXPORT_FOR_BOTH_WIDTHS(map_keys, MAP_PARAMS, (keys, n, kind, descending, inverse))
