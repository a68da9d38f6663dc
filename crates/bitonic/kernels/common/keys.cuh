// The order-preserving key maps of src/key.rs: key bits to the unsigned word the networks
// sort ascending, and back. The flags come from the host as -D defines.
#pragma once

#include "common/types.cuh"

// Flags of a key-map argument: src/key.rs's MapKind in the low bits, then options.
#if !defined(KERNEL_MAP_SIGNED) || !defined(KERNEL_MAP_FLOAT) || !defined(KERNEL_MAP_DESCENDING) || \
    !defined(KERNEL_MAP_NUMERIC) || !defined(KERNEL_MAP_BFLOAT16)
#error "the host passes the key-map flags (src/kernels/abi.rs)"
#endif
#define MAP_KIND_MASK 3u
#define MAP_SIGNED KERNEL_MAP_SIGNED
#define MAP_FLOAT KERNEL_MAP_FLOAT
#define MAP_DESCENDING KERNEL_MAP_DESCENDING
#define MAP_NUMERIC KERNEL_MAP_NUMERIC
#define MAP_BFLOAT16 KERNEL_MAP_BFLOAT16

// A float's bits in numeric order (src/options.rs FloatOrder::Numeric): -0.0 as +0.0 and every
// NaN as the positive quiet NaN, so that keys equal by value share one word. The width tells
// f32 from f64; 16-bit floats are f16 unless MAP_BFLOAT16.
template <typename K> __device__ __forceinline__ K canonical_float(K w, u32 map) {
    const K sign = K(1) << (sizeof(K) * 8 - 1);
    K inf, quiet_nan;
    if (sizeof(K) == 8) {
        inf = K(0x7ff0000000000000ull), quiet_nan = K(0x7ff8000000000000ull);
    } else if (sizeof(K) == 4) {
        inf = K(0x7f800000u), quiet_nan = K(0x7fc00000u);
    } else if (map & MAP_BFLOAT16) {
        inf = K(0x7f80u), quiet_nan = K(0x7fc0u);
    } else {
        inf = K(0x7c00u), quiet_nan = K(0x7e00u);
    }
    const K magnitude = w & K(~sign);
    if (magnitude > inf) return quiet_nan;
    return magnitude == 0 ? K(0) : w;
}

// The order-preserving map of src/key.rs: key bits to the unsigned word the networks sort
// ascending (descending order sorts the complement), and back.
template <typename K> __device__ __forceinline__ K to_sortable(K w, u32 map) {
    const K sign = K(1) << (sizeof(K) * 8 - 1);
    u32 kind = map & MAP_KIND_MASK;
    if (kind == MAP_SIGNED) w ^= sign;
    if (kind == MAP_FLOAT) {
        if (map & MAP_NUMERIC) w = canonical_float(w, map);
        w = (w & sign) ? ~w : w ^ sign;
    }
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
