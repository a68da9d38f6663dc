// The order-preserving key maps of src/key.rs: key bits to the unsigned word the networks
// sort ascending, and back. The flags come from the host as -D defines.
//
// A map argument may also carry a flag that is no part of the key map, which to_sortable and
// from_sortable ignore (they read MAP_KIND_MASK and single flags): MAP_INDEX64 tells a kernel
// that writes indices (the top-k kernels, pairs.cu's unpack_*) to write each as a u64 instead
// of a u32 (store_index); its `indices` parameter keeps its type, u32 *, and then points to
// u64s. Other kernels are not given it.
#pragma once

#include "common/types.cuh"

// Flags of a key-map argument: src/key.rs's MapKind in the low bits, then options.
#if !defined(KERNEL_MAP_SIGNED) || !defined(KERNEL_MAP_FLOAT) || !defined(KERNEL_MAP_DESCENDING) || \
    !defined(KERNEL_MAP_NUMERIC) || !defined(KERNEL_MAP_TIED) || !defined(KERNEL_MAP_BFLOAT16) || \
    !defined(KERNEL_MAP_INDEX64)
#error "the host passes the key-map flags (src/kernels/abi.rs)"
#endif
#define MAP_KIND_MASK 3u
#define MAP_SIGNED KERNEL_MAP_SIGNED
#define MAP_FLOAT KERNEL_MAP_FLOAT
#define MAP_DESCENDING KERNEL_MAP_DESCENDING
#define MAP_NUMERIC KERNEL_MAP_NUMERIC
#define MAP_TIED KERNEL_MAP_TIED
#define MAP_BFLOAT16 KERNEL_MAP_BFLOAT16
#define MAP_INDEX64 KERNEL_MAP_INDEX64

// Writes `index` as element i of `indices`: a u64 where the map has MAP_INDEX64 (`indices` then
// points to u64s), else a u32.
__device__ __forceinline__ void store_index(u32 *indices, u64 i, u32 index, u32 map) {
    if (map & MAP_INDEX64) reinterpret_cast<u64 *>(indices)[i] = index;
    else indices[i] = index;
}

// The infinity of a float of K's width (16-bit floats are f16 unless MAP_BFLOAT16).
template <typename K> __device__ __forceinline__ K float_infinity(u32 map) {
    if (sizeof(K) == 8) return K(0x7ff0000000000000ull);
    if (sizeof(K) == 4) return K(0x7f800000u);
    return (map & MAP_BFLOAT16) ? K(0x7f80u) : K(0x7c00u);
}

// A float's one form of its value (MAP_TIED, src/key.rs SortKey::canonical): -0.0 as +0.0
// and every NaN as the positive quiet NaN, so that keys equal by value tie in a stable sort.
template <typename K> __device__ __forceinline__ K canonical_float(K w, u32 map) {
    const K sign = K(1) << (sizeof(K) * 8 - 1);
    const K inf = float_infinity<K>(map);
    const K quiet_nan = inf | (inf >> 1 & ~inf);  // the exponent's ones and the top mantissa bit
    const K magnitude = w & K(~sign);
    if (magnitude > inf) return quiet_nan;
    return magnitude == 0 ? K(0) : w;
}

// Numeric float order (MAP_NUMERIC, src/options.rs FloatOrder::Numeric) rotates the words of
// total order down by this much: -inf becomes 0 and the NaNs with the sign bit, which total
// order puts below -inf, wrap around to above +NaN, so that every NaN sorts last. A bijection:
// a key-only sort loses no bit.
template <typename K> __device__ __forceinline__ K nan_rotation(u32 map) {
    const K sign = K(1) << (sizeof(K) * 8 - 1);
    return K(~(sign | float_infinity<K>(map)));  // the word of -inf in total order
}

// The order-preserving map of src/key.rs: key bits to the unsigned word the networks sort
// ascending (descending order sorts the complement), and back.
template <typename K> __device__ __forceinline__ K to_sortable(K w, u32 map) {
    const K sign = K(1) << (sizeof(K) * 8 - 1);
    u32 kind = map & MAP_KIND_MASK;
    if (kind == MAP_SIGNED) w ^= sign;
    if (kind == MAP_FLOAT) {
        if (map & MAP_TIED) w = canonical_float(w, map);
        w = (w & sign) ? K(~w) : K(w ^ sign);
        if (map & MAP_NUMERIC) w = K(w - nan_rotation<K>(map));
    }
    return (map & MAP_DESCENDING) ? K(~w) : w;
}

template <typename K> __device__ __forceinline__ K from_sortable(K w, u32 map) {
    const K sign = K(1) << (sizeof(K) * 8 - 1);
    if (map & MAP_DESCENDING) w = ~w;
    u32 kind = map & MAP_KIND_MASK;
    if (kind == MAP_SIGNED) w ^= sign;
    if (kind == MAP_FLOAT) {
        if (map & MAP_NUMERIC) w = K(w + nan_rotation<K>(map));
        w = (w & sign) ? K(w ^ sign) : K(~w);
    }
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
