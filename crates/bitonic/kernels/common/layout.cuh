// Where the keys of the tuned passes' slots live: src/kernels/abi.rs's RowLayout, field for
// field, checked by size.
#pragma once

#include "common/types.cuh"

// Where the slots of the passes' index space live. The passes sort rows of 2^row_bits slots
// each; slot `col` of row `row` holds key start(row) + col while col < the row's length, and
// is padding (+inf, never moved) past it. A plain sort of n keys is one row.
struct RowLayout {
    const u32 *segment_start; // per row, or null: rows of row_len keys back to back
    const u32 *segment_len;
    u32 n;          // keys in all
    u32 row_bits;
    u32 row_len;
    u32 rows;
    u32 contiguous; // slot g is key g (one row, or rows of exactly 2^row_bits keys)
};

#ifndef KERNEL_ROW_LAYOUT_BYTES
#error "the host passes KERNEL_ROW_LAYOUT_BYTES (src/kernels/abi.rs)"
#endif
static_assert(sizeof(RowLayout) == KERNEL_ROW_LAYOUT_BYTES, "RowLayout differs from src/kernels/abi.rs");

// Where the tuned passes over key-index pairs read the caller's keys and write a sorted row's
// first k (src/kernels/abi.rs's Packing, field for field): the first pass of a plan packs each
// key with its index in its row as it loads (PACK_ON_LOAD), and the last unpacks as it stores
// (UNPACK_ON_STORE), so that no launch of its own packs or unpacks. Other passes: flags 0.
struct Packing {
    const void *keys; // the caller's keys, key_bytes each, in the layout's rows
    void *values;     // k a row: the caller's keys that sort first in their row, their own bits
                      // (or `keys` itself: an argsort in place, written from the words)
    u32 *indices;     // k a row: their indices in the row (u64s where map has MAP_INDEX64)
    u32 k;
    u32 key_bytes; // 2 or 4 (in u64 words: key in the high half) or 8 (in KeyIndex words)
    u32 map;       // the keys' map (common/keys.cuh), and MAP_INDEX64 for 8-byte indices
    u32 flags;     // PACK_ON_LOAD | UNPACK_ON_STORE
};

#if !defined(KERNEL_PACKING_BYTES) || !defined(KERNEL_PACK_ON_LOAD) || !defined(KERNEL_UNPACK_ON_STORE)
#error "the host passes KERNEL_PACKING_BYTES, KERNEL_PACK_ON_LOAD and KERNEL_UNPACK_ON_STORE (src/kernels/abi.rs)"
#endif
static_assert(sizeof(Packing) == KERNEL_PACKING_BYTES, "Packing differs from src/kernels/abi.rs");
#define PACK_ON_LOAD KERNEL_PACK_ON_LOAD
#define UNPACK_ON_STORE KERNEL_UNPACK_ON_STORE

#define PADDING 0xffffffffu

// The key index of slot g, or PADDING.
__device__ __forceinline__ u32 key_index(const RowLayout &layout, u32 g) {
    if (layout.contiguous) return g < layout.n ? g : PADDING;
    u32 row = g >> layout.row_bits, col = g & ((1u << layout.row_bits) - 1);
    if (row >= layout.rows) return PADDING;
    if (layout.segment_start)
        return col < layout.segment_len[row] ? layout.segment_start[row] + col : PADDING;
    return col < layout.row_len ? row * layout.row_len + col : PADDING;
}
