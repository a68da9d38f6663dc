// Block level: the stages of a tile sort, register group by register group, the tile in
// shared memory.
#pragma once

#include "tuned/lanes.cuh"

// Stage B of a tile sort from the register group whose top tile bit is TOP down: the group of
// tile bits TOP-E_BITS+1 .. TOP (or 0 .. E_BITS-1 at the bottom) comes out of shared memory,
// runs its steps and goes back, then the next group below. Every index, step and address is
// known at compile time, so the keys stay in the same registers from step to step (the run-time
// path through register_group moves them at every join).
template <typename T, u32 B, u32 TOP, typename K = typename T::K>
__device__ __forceinline__ void tile_sort_groups(K *tile) {
    const u32 E_BITS = T::E_BITS, E = 1u << E_BITS;
    const u32 Q0 = TOP + 1 >= E_BITS ? TOP + 1 - E_BITS : 0;
    const u32 t = threadIdx.x;
    const u32 thread_part = (t & ((1u << Q0) - 1)) | ((t >> Q0) << (Q0 + E_BITS));
    // The flip (the stage's first step) mirrors every tile bit up to B: the part below Q0
    // through the thread index, as in register_group.
    const bool flip = TOP == B;
    const u32 thread_mirror = flip ? (1u << Q0) - 1 : 0;
    const u32 half_bit = 1u << (TOP - Q0);
    const u32 slot_lo = slot<T>(thread_part), slot_hi = slot<T>(thread_part ^ thread_mirror);
    K k[E];
#pragma unroll
    for (u32 r = 0; r < E; ++r) k[r] = tile[((r & half_bit) && flip ? slot_hi : slot_lo) ^ slot<T>(r << Q0)];
    if constexpr (flip) {
        register_flip<T, int(TOP - Q0)>(k);
        register_steps_down<T, int(TOP - Q0) - 1>(k);
    } else {
        register_steps_down<T, int(TOP - Q0)>(k);
    }
#pragma unroll
    for (u32 r = 0; r < E; ++r) tile[((r & half_bit) && flip ? slot_hi : slot_lo) ^ slot<T>(r << Q0)] = k[r];
    __syncthreads();
    if constexpr (Q0 > 0) tile_sort_groups<T, B, Q0 - 1>(tile);
}

// Stage b (first_group_stage <= b < TILE_BITS) of a tile sort, the tile in shared memory.
template <typename T, typename K = typename T::K> __device__ __forceinline__ void tile_sort_stage(K *tile, u32 b) {
    switch (b) {
#define TILE_SORT_STAGE(B)                                                                                   \
    case B:                                                                                                  \
        if constexpr (B >= first_group_stage<T> && B < TILE_BITS) tile_sort_groups<T, B, B>(tile);       \
        break;
        TILE_SORT_STAGE(4) TILE_SORT_STAGE(5) TILE_SORT_STAGE(6) TILE_SORT_STAGE(7) TILE_SORT_STAGE(8)
        TILE_SORT_STAGE(9) TILE_SORT_STAGE(10) TILE_SORT_STAGE(11) TILE_SORT_STAGE(12) TILE_SORT_STAGE(13)
        TILE_SORT_STAGE(14)
#undef TILE_SORT_STAGE
    default: __trap(); // the host never makes a larger tile
    }
}
