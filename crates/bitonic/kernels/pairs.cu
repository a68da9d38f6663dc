// Key-value sorting, argsort and their row-wise forms (src/cuda/rows.rs) sort (key, index)
// pairs with the tuned passes: equal keys then stay in index order, which makes the sort
// stable. A 32-bit key and its index pack into one u64 word (key in the high half), so they
// sort with the u64 passes; a 64-bit key goes with its index into a 16-byte KeyIndex.
//
// `row_len` splits the keys into rows; an index counts from the start of its row. The unpack
// kernels write the indices as u32, or as u64 where their map has MAP_INDEX64 (store_index);
// gather reads u32 indices.
#include "common.cuh"

#define GRID_STRIDE_LOOP(i, n) \
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += gridDim.x * blockDim.x)

extern "C" __global__ void pack_u32(const u32 *keys, u64 *pairs, u32 n, u32 row_len, u32 map) {
    GRID_STRIDE_LOOP(i, n) pairs[i] = (u64(to_sortable(keys[i], map)) << 32) | (i % row_len);
}

extern "C" __global__ void unpack_u32(const u64 *pairs, u32 *keys, u32 *indices, u32 n, u32 map) {
    GRID_STRIDE_LOOP(i, n) {
        u64 pair = pairs[i];
        keys[i] = from_sortable(u32(pair >> 32), map);
        store_index(indices, i, u32(pair), map);
    }
}

extern "C" __global__ void pack_u64(const u64 *keys, KeyIndex *pairs, u32 n, u32 row_len, u32 map) {
    GRID_STRIDE_LOOP(i, n) {
        KeyIndex pair;
        pair.key = to_sortable(keys[i], map);
        pair.index = i % row_len;
        pair.value = 0;
        pairs[i] = pair;
    }
}

extern "C" __global__ void unpack_u64(const KeyIndex *pairs, u64 *keys, u32 *indices, u32 n, u32 map) {
    GRID_STRIDE_LOOP(i, n) {
        KeyIndex pair = pairs[i];
        keys[i] = from_sortable(pair.key, map);
        store_index(indices, i, pair.index, map);
    }
}

// values_out[i] = values[start of i's row + indices[i]]: the values follow their keys.
template <typename V>
__device__ void gather(const V *values, V *values_out, const u32 *indices, u32 n, u32 row_len) {
    GRID_STRIDE_LOOP(i, n) values_out[i] = values[i - i % row_len + indices[i]];
}

#define GATHER_PARAMS(V) (const V *values, V *values_out, const u32 *indices, u32 n, u32 row_len)
EXPORT_FOR_BOTH_WIDTHS(gather, GATHER_PARAMS, (values, values_out, indices, n, row_len))
