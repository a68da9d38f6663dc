// V0: the naive network. One thread per key, global memory only, one launch per step.
// The host (src/cuda/seed.rs) loops over every stage and step.
#include "common.cuh"

template <typename K> __device__ void v0_step(K *keys, u32 n, u32 size, u32 stride) {
    global_step_per_key(keys, n, size, stride);
}

EXPORT_FOR_BOTH_WIDTHS(v0_step, STEP_PARAMS, STEP_ARGS)
