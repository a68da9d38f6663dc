// Word types of the kernels: u16 (16-bit keys), u32, u64 and the 16-byte key-index pair, the largest word of
// each (the padding that never moves), and the macros that export a template kernel for each.
// KeyIndex is src/kernels/abi.rs's, checked by size.
#pragma once

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define FULL_WARP_MASK 0xffffffffu
#define WARP_SIZE 32

template <typename K> __device__ __forceinline__ K largest_key();
template <> __device__ __forceinline__ u32 largest_key<u32>() { return 0xffffffffu; }
template <> __device__ __forceinline__ u64 largest_key<u64>() { return 0xffffffffffffffffull; }

// A 64-bit sortable key with the index that makes it unique (key-value sorts and argsort of
// 64-bit keys; 32-bit keys pack both into one u64 instead). Ordered by key, then index.
struct KeyIndex {
    u64 key;
    u32 index;
    u32 value; // a value that travels with the key (16 bytes: one vector load or store)
};

__device__ __forceinline__ bool operator<(const KeyIndex &a, const KeyIndex &b) {
    return a.key < b.key || (a.key == b.key && a.index < b.index);
}

template <> __device__ __forceinline__ KeyIndex largest_key<KeyIndex>() {
    KeyIndex k;
    k.key = largest_key<u64>();
    k.index = largest_key<u32>(); // above every real index: padding stays last
    k.value = 0;
    return k;
}

#ifndef KERNEL_KEY_INDEX_BYTES
#error "the host passes KERNEL_KEY_INDEX_BYTES (src/kernels/abi.rs)"
#endif
static_assert(sizeof(KeyIndex) == KERNEL_KEY_INDEX_BYTES, "KeyIndex differs from src/kernels/abi.rs");

// Declares name_u32 and name_u64 kernels that call the template name<K>.
#define EXPORT_FOR_BOTH_WIDTHS(name, PARAMS, ARGS)                                           \
    extern "C" __global__ void name##_u32 PARAMS(u32) { name<u32> ARGS; }                   \
    extern "C" __global__ void name##_u64 PARAMS(u64) { name<u64> ARGS; }

// The same for u32, u64 and 16-byte KeyIndex words (name_kv64).
#define EXPORT_FOR_ALL_WORDS(name, PARAMS, ARGS)                                             \
    EXPORT_FOR_BOTH_WIDTHS(name, PARAMS, ARGS)                                               \
    extern "C" __global__ void name##_kv64 PARAMS(KeyIndex) { name<KeyIndex> ARGS; }
