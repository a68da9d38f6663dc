// The values of a key-value sort of rows (src/cuda/rows.rs), after the pair passes have
// argsorted the keys (kernels/tuned/packing.cuh packs each key with its index in its row and
// writes the sorted keys and their u32 indices): each row's values gathered in the order of
// its indices.
#include "common.cuh"

#define GRID_STRIDE_LOOP(i, n) \
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += gridDim.x * blockDim.x)

// values_out[i] = values[start of i's row + indices[i]]: the values follow their keys.
template <typename V>
__device__ void gather(const V *values, V *values_out, const u32 *indices, u32 n, u32 row_len) {
    GRID_STRIDE_LOOP(i, n) values_out[i] = values[i - i % row_len + indices[i]];
}

#define GATHER_PARAMS(V) (const V *values, V *values_out, const u32 *indices, u32 n, u32 row_len)
EXPORT_FOR_BOTH_WIDTHS(gather, GATHER_PARAMS, (values, values_out, indices, n, row_len))
