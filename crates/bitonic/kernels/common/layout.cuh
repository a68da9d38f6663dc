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
