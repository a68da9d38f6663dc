// Key-index pairs made as the first pass loads the caller's keys and taken apart as the last
// pass stores them (Packing, common/layout.cuh): a stable sort of rows with indices (an argsort
// in place, or a top-k by sorting into outputs of its own), in the tuned passes alone
// (src/cuda/rows.rs).
//
// A pair orders by the mapped key, then by the index in its row, so equal keys keep their
// input order in either direction (descending complements the key, not the index). A key of
// 2 or 4 bytes goes in the high half of a u64 word, its index in the low half; a key of 8
// bytes and its index make a KeyIndex.
#pragma once

#include "common/keys.cuh"
#include "common/layout.cuh"

// Whether words of type K can be pairs: the u32 kernels never pack.
template <typename K> constexpr bool holds_pairs = sizeof(K) >= 8;

// The pair of the caller's key `at`, whose index in its row is `col`.
__device__ __forceinline__ void pack_pair(u64 &word, const Packing &pk, u32 at, u32 col) {
    const u32 map = pk.map;
    const u32 key = pk.key_bytes == 2 ? u32(to_sortable(static_cast<const u16 *>(pk.keys)[at], map))
                                      : to_sortable(static_cast<const u32 *>(pk.keys)[at], map);
    word = (u64(key) << 32) | col;
}

__device__ __forceinline__ void pack_pair(KeyIndex &word, const Packing &pk, u32 at, u32 col) {
    word.key = to_sortable(static_cast<const u64 *>(pk.keys)[at], pk.map);
    word.index = col;
    word.value = 0;
}

__device__ __forceinline__ u32 index_of(u64 word) { return u32(word); }
__device__ __forceinline__ u32 index_of(const KeyIndex &word) { return word.index; }
__device__ __forceinline__ u64 key_word(u64 word) { return word >> 32; }
__device__ __forceinline__ u64 key_word(const KeyIndex &word) { return word.key; }

// Writes the key that `word` (a key of type W, mapped) stands for to output `out`: the caller's
// own bits (SortableMap::key_of reads a tied word's key again from input key `from`), or where
// the outputs are the keys themselves (an argsort in place, whose other keys may already be
// overwritten) the canonical key.
template <typename W> __device__ __forceinline__ void put_key(const Packing &pk, u64 out, u64 from, W word) {
    const bool may_read = pk.values != pk.keys;
    static_cast<W *>(pk.values)[out] = SortableMap<W>(pk.map).key_of(word, static_cast<const W *>(pk.keys), from, may_read);
}

// Stores the pair sorted into slot g, if its column is among the first k of its row: its index,
// and its key (put_key), to the outputs' rows of k. Values may be the keys: an argsort in place,
// k the whole row, each block writing only the slots it packed from.
template <typename K>
__device__ __forceinline__ void unpack_pair(const Packing &pk, const RowLayout &layout, u32 g, const K &word) {
    const u32 col = g & ((1u << layout.row_bits) - 1);
    if (col >= pk.k) return;
    const u64 row = g >> layout.row_bits;
    const u64 out = row * pk.k + col;
    const u32 index = index_of(word);
    const u64 from = row * layout.row_len + index;
    switch (pk.key_bytes) {
    case 2: put_key<u16>(pk, out, from, u16(key_word(word))); break;
    case 4: put_key<u32>(pk, out, from, u32(key_word(word))); break;
    default: put_key<u64>(pk, out, from, key_word(word)); break;
    }
    store_index(pk.indices, out, index, pk.map);
}
