// The order-preserving key maps of src/key.rs: key bits to the unsigned word the networks
// sort ascending, and back. The flags come from the host as -D defines.
#pragma once

#include "common/types.cuh"

// Flags of a key-map argument: src/key.rs's MapKind in the low bits, then options.
#if !defined(KERNEL_MAP_SIGNED) || !defined(KERNEL_MAP_FLOAT) || !defined(KERNEL_MAP_DESCENDING)
#error "the host passes the key-map flags (src/cuda/layout.rs)"
#endif
#define MAP_KIND_MASK 3u
#define MAP_SIGNED KERNEL_MAP_SIGNED
#define MAP_FLOAT KERNEL_MAP_FLOAT
#define MAP_DESCENDING KERNEL_MAP_DESCENDING

// The order-preserving map of src/key.rs: key bits to the unsigned word the networks sort
// ascending (descending order sorts the complement), and back.
template <typename K> __device__ __forceinline__ K to_sortable(K w, u32 map) {
    const K sign = K(1) << (sizeof(K) * 8 - 1);
    u32 kind = map & MAP_KIND_MASK;
    if (kind == MAP_SIGNED) w ^= sign;
    if (kind == MAP_FLOAT) w = (w & sign) ? ~w : w ^ sign;
    return (map & MAP_DESCENDING) ? ~w : w;
}

template <typename K> __device__ __forceinline__ K from_sortable(K w, u32 map) {
    const K sign = K(1) << (sizeof(K) * 8 - 1);
    if (map & MAP_DESCENDING) w = ~w;
    u32 kind = map & MAP_KIND_MASK;
    if (kind == MAP_SIGNED) w ^= sign;
    if (kind == MAP_FLOAT) w = (w & sign) ? w ^ sign : ~w;
    return w;
}

// A key-index pair maps its key (kernels that map words map pairs alike).
__device__ __forceinline__ KeyIndex to_sortable(KeyIndex w, u32 map) {
    w.key = to_sortable(w.key, map);
    return w;
}
__device__ __forceinline__ KeyIndex from_sortable(KeyIndex w, u32 map) {
    w.key = from_sortable(w.key, map);
    return w;
}
