// What every top-k kernel shares: the composites that order the candidates, padding and
// `better` (on held words too), what a kernel holds of an element (Held), 16-byte vector loads,
// where a result goes (Put), and a warp's prefix sum. Relies on KERNEL_TOPK_THREADS (the
// block's threads, THREADS) and on the module's KERNEL_PART_* define (the 16-bit parts lay out
// their u64 composites apart: WORD_SHIFT).
//
// Every key becomes a *composite* word that orders candidates totally, larger = better: a
// 32-bit key's sortable word and its complemented index in one u64, `(word << 32) | ~index`,
// a 64-bit key's the 16-byte KeyIndex `{word, ~index}` ordered lexicographically. The map
// complements the word when the smallest keys are selected (MAP_DESCENDING), and the
// complemented index lets the smaller index win among equal keys: the result is the first k
// of a stable sort. A real composite is never the all-zero word (indices stay below 2^31, so
// ~index is not 0): zero is the padding that loses to everything.
#pragma once

#include "common/types.cuh"
#include "common/keys.cuh"
#include "common/memory.cuh"

#ifndef KERNEL_TOPK_THREADS
#error "the host passes KERNEL_TOPK_THREADS (src/policy/topk.rs)"
#endif
#define THREADS KERNEL_TOPK_THREADS


// Composites: made from a sortable word and an index, compared, taken apart. A u64 composite
// holds the word in its top bits and the complemented index below: bits 63..32 and 31..0 for
// 32-bit keys, 63..48 and 47..16 for 16-bit keys, so that a composite's radix digits begin
// with the word's.
#if defined(KERNEL_PART_U16) || defined(KERNEL_PART_U16_R4) || defined(KERNEL_PART_U16_R16) || \
    defined(KERNEL_PART_U16_R32) || defined(KERNEL_PART_U16_WARP) || defined(KERNEL_PART_U16_SAMPLED) // 16-bit keys
#define WORD_SHIFT 48
#define INDEX_SHIFT 16
#else
#define WORD_SHIFT 32
#define INDEX_SHIFT 0
#endif
__device__ __forceinline__ u64 composite(u32 word, u32 index) {
    return (u64(word) << WORD_SHIFT) | (u64(~index) << INDEX_SHIFT);
}
__device__ __forceinline__ u64 composite(u16 word, u32 index) { return composite(u32(word), index); }
__device__ __forceinline__ KeyIndex composite(u64 word, u32 index) {
    KeyIndex c;
    c.key = word;
    c.index = ~index;
    c.value = 0;
    return c;
}
__device__ __forceinline__ bool better(u64 a, u64 b) { return a > b; }
__device__ __forceinline__ bool better(const KeyIndex &a, const KeyIndex &b) { return b < a; }
__device__ __forceinline__ u32 word_of(u64 c) { return u32(c >> WORD_SHIFT); }
__device__ __forceinline__ u64 word_of(const KeyIndex &c) { return c.key; }
__device__ __forceinline__ u32 index_of(u64 c) { return ~u32(c >> INDEX_SHIFT); }
__device__ __forceinline__ u32 index_of(const KeyIndex &c) { return ~c.index; }

template <typename C> __device__ __forceinline__ C padding();
template <> __device__ __forceinline__ u64 padding<u64>() { return 0; }
template <> __device__ __forceinline__ KeyIndex padding<KeyIndex>() { return composite(u64(0), ~0u); }

// Held words (radix digits, thresholds) and the warp sort's u32 composites of 16-bit keys
// compare and pad as words: larger = better, 0 = padding.
template <> __device__ __forceinline__ u32 padding<u32>() { return 0; }
__device__ __forceinline__ bool better(u32 a, u32 b) { return a > b; }

// What a kernel holds of an element `In` of a row whose composites are `C` (the radix select
// holds it in a register): `of` reads it, `composite` makes the element's composite from it and
// its index in the row, `real` says whether it is an element at all (a reduction pass's
// input has padding, and is PADDED), and `of_word` holds a composite's word (word_of) as a key
// of that word would be held. A key of 32 or 64 bits is held as its sortable word;
// 16-bit words in the top half of a u32, so that their radix digits come first.
template <typename C, typename In> struct Held {
    typedef In T;
    template <typename Order = RuntimeOrder> __device__ static T of(In key, u32 map, Order order = Order()) {
        return to_sortable(key, map, order);
    }
    __device__ static C composite(T h, u32 index) { return ::composite(h, index); }
    __device__ static bool real(T) { return true; }
    __device__ static T of_word(T word) { return word; }
    static const bool PADDED = false;
};
template <> struct Held<u64, u16> {
    typedef u32 T;
    template <typename Order = RuntimeOrder> __device__ static T of(u16 key, u32 map, Order order = Order()) {
        return u32(to_sortable(key, map, order)) << 16;
    }
    __device__ static u64 composite(T h, u32 index) { return ::composite(u16(h >> 16), index); }
    __device__ static bool real(T) { return true; }
    __device__ static T of_word(u32 word) { return word << 16; }
    static const bool PADDED = false;
};
template <typename C> struct Held<C, C> {
    typedef C T;
    template <typename Order = RuntimeOrder> __device__ static T of(const C &c, u32, Order = Order()) { return c; }
    __device__ static C composite(const T &h, u32) { return h; }
    __device__ static bool real(const T &h) { return better(h, padding<C>()); }
    static const bool PADDED = true;
};

// The composite of an element `In` at `index` in its row: a key is mapped and paired with its
// index; a composite (a reduction pass) is one already.
template <typename C, typename In, typename Order = RuntimeOrder>
__device__ __forceinline__ C candidate(const In &e, u32 index, u32 map, Order order = Order()) {
    return Held<C, In>::composite(Held<C, In>::of(e, map, order), index);
}

// 16 bytes of elements, loaded at once from a 16-byte aligned address.
template <typename T> struct Vector;
template <> struct Vector<u16> {
    static const u32 N = 8;
    __device__ static void load(const u16 *p, u16 *out) {
        uint4 v = *reinterpret_cast<const uint4 *>(p);
        const u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (u32 i = 0; i < 4; i++) out[2 * i] = u16(w[i]), out[2 * i + 1] = u16(w[i] >> 16);
    }
};
template <> struct Vector<u32> {
    static const u32 N = 4;
    __device__ static void load(const u32 *p, u32 *out) {
        uint4 v = *reinterpret_cast<const uint4 *>(p);
        out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
    }
};
template <> struct Vector<u64> {
    static const u32 N = 2;
    __device__ static void load(const u64 *p, u64 *out) {
        ulonglong2 v = *reinterpret_cast<const ulonglong2 *>(p);
        out[0] = v.x, out[1] = v.y;
    }
};
template <> struct Vector<KeyIndex> {
    static const u32 N = 1;
    __device__ static void load(const KeyIndex *p, KeyIndex *out) {
        ulonglong2 v = *reinterpret_cast<const ulonglong2 *>(p);
        out[0].key = v.x;
        out[0].index = u32(v.y); // little-endian: index, then value
        out[0].value = u32(v.y >> 32);
    }
};

// The result's i-th best composite c of item `item` of a select: for a row's final chunk
// (`last`), the key it names (SortableMap::key_of, from the row's own keys `row_keys` where it must) to
// `values` of row `row`, and its index to `indices` (u64 where the map has MAP_INDEX64); else c
// to the item's k partial results.
template <typename K, typename C> struct Put {
    K *values;
    u32 *indices;
    const K *row_keys;
    C *partials;
    u64 row, item;
    u32 k, map;
    bool last;
    __device__ void operator()(u32 i, const C &c) const {
        if (last) {
            const u32 index = index_of(c);
            values[row * k + i] = SortableMap<K>(map).key_of(K(word_of(c)), row_keys, index);
            store_index(indices, row * k + i, index, map);
        } else {
            partials[item * k + i] = c;
        }
    }
};

// The sum of `v` over the lanes of the warp up to this one (an inclusive prefix sum by
// shuffles). Called by every lane.
__device__ __forceinline__ u32 warp_inclusive_sum(u32 v) {
    const u32 lane = threadIdx.x % WARP_SIZE;
#pragma unroll
    for (u32 d = 1; d < WARP_SIZE; d <<= 1) {
        const u32 other = __shfl_up_sync(FULL_WARP_MASK, v, d);
        if (lane >= d) v += other;
    }
    return v;
}
