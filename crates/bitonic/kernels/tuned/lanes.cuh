// Warp level: steps between the lanes of a warp (shuffles), and the first trip of a tile sort
// that sorts each warp's keys in registers and lanes.
#pragma once

#include "tuned/registers.cuh"

// Lane steps. In a tile sort's first trip, thread t holds the E keys of tile indices
// t*E .. t*E+E-1, so tile bits E_BITS .. E_BITS+4 are the bits of its lane: a step on one of them
// runs between two lanes of a warp, with a shuffle, and the keys never leave the registers
// (docs/notes/tuned.md). A step on lane bit L keeps the smaller key in the lane whose
// bit L is 0: min or max by a per-thread choice, with no branch.
// Only 4-byte keys take lane steps (see sort_warp_keys).
template <typename K> constexpr bool has_lane_steps = sizeof(K) == 4;

// The first stage of a tile sort that runs group by group (tile_sort_stage): the stages below
// it run in sort_warp_keys.
template <typename T> constexpr u32 first_group_stage = has_lane_steps<typename T::K> ? T::E_BITS + 5 : T::E_BITS;

template <typename K> __device__ __forceinline__ K shuffle_xor(K v, u32 lane_mask) {
    return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}

template <typename K> __device__ __forceinline__ K keep(K mine, K theirs, bool upper) {
    return upper ? max(mine, theirs) : min(mine, theirs);
}

template <typename T, int L, typename K = typename T::K> __device__ __forceinline__ void lane_step(K *k) {
    const int E = 1 << T::E_BITS;
    const bool upper = threadIdx.x & (1u << L);
#pragma unroll
    for (int r = 0; r < E; ++r) k[r] = keep(k[r], shuffle_xor(k[r], 1u << L), upper);
}

// A flip whose mirror covers lane bits 0 .. L and every register bit: k[r] meets the partner
// lane's k[E-1-r]. Both of a mirrored pair are shuffled before either changes.
template <typename T, int L, typename K = typename T::K> __device__ __forceinline__ void lane_flip(K *k) {
    const int E = 1 << T::E_BITS;
    const u32 mirror = (2u << L) - 1;
    const bool upper = threadIdx.x & (1u << L);
#pragma unroll
    for (int r = 0; r < E / 2; ++r) {
        const K theirs_for_r = shuffle_xor(k[E - 1 - r], mirror), theirs_for_mirror = shuffle_xor(k[r], mirror);
        k[r] = keep(k[r], theirs_for_r, upper);
        k[E - 1 - r] = keep(k[E - 1 - r], theirs_for_mirror, upper);
    }
}

template <typename T, int L, typename K = typename T::K> __device__ __forceinline__ void lane_steps_down(K *k) {
    if constexpr (L >= 0) {
        lane_step<T, L>(k);
        lane_steps_down<T, L - 1>(k);
    }
}

// Stages E_BITS+L .. E_BITS+4 while they are at most `last`, in registers and lanes.
template <typename T, int L, typename K = typename T::K>
__device__ __forceinline__ void lane_stages_from(K *k, u32 last) {
    if constexpr (L <= 4 && has_lane_steps<K>) {
        if (T::E_BITS + L > last) return;
        lane_flip<T, L>(k);
        lane_steps_down<T, L - 1>(k);
        register_steps_down<T, T::E_BITS - 1>(k);
        lane_stages_from<T, L + 1>(k, last);
    }
}

// The first trip of a tile sort: stages 0 .. E_BITS-1 on each thread's E adjacent keys, then
// stages E_BITS .. up to `last` (at most E_BITS+4: a warp's keys) with lane steps, one trip
// through shared memory for all of them (the slot map is linear in XOR, so slot(t*E | r) =
// slot(t*E) ^ slot(r), and lanes hit distinct banks). Returns the next stage. Lane steps are
// for 4-byte keys only: an 8-byte key takes two shuffles a step, which costs more than the
// trip through shared memory it saves (docs/notes/tuned.md); 8- and 16-byte keys stop at
// stage E_BITS-1 here.
template <typename T, typename K = typename T::K> __device__ __forceinline__ u32 sort_warp_keys(K *tile, u32 last) {
    const u32 E_BITS = T::E_BITS, E = 1u << E_BITS;
    const u32 base = slot<T>(threadIdx.x << E_BITS);
    K k[E];
#pragma unroll
    for (u32 r = 0; r < E; ++r) k[r] = tile[base ^ slot<T>(r)];
    register_flip<T, 0>(k);
    register_flip<T, 1>(k);
    register_step<T, 0>(k);
    register_flip<T, 2>(k);
    register_step<T, 1>(k);
    register_step<T, 0>(k);
    register_flip<T, 3>(k);
    register_step<T, 2>(k);
    register_step<T, 1>(k);
    register_step<T, 0>(k);
    if constexpr (T::E_BITS > 4) {
        register_flip<T, 4>(k);
        register_step<T, 3>(k);
        register_step<T, 2>(k);
        register_step<T, 1>(k);
        register_step<T, 0>(k);
    }
    lane_stages_from<T, 0>(k, last);
#pragma unroll
    for (u32 r = 0; r < E; ++r) tile[base ^ slot<T>(r)] = k[r];
    __syncthreads();
    return min(last + 1, first_group_stage<T>);
}
