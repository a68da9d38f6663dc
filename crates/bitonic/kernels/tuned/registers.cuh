// Thread level: the network's steps on the keys one thread holds in registers.
#pragma once

#include "tuned/tuning.cuh"
#include "common/compare.cuh"

// Register steps (order_pair: common/compare.cuh).
// A half-cleaner step on register bit J: k[r] meets k[r | 2^J].
template <typename T, int J, typename K = typename T::K> __device__ __forceinline__ void register_step(K *k) {
    const int E = 1 << T::E_BITS;
#pragma unroll
    for (int r = 0; r < E; ++r)
        if (!(r & (1 << J))) order_pair(k[r], k[r | (1 << J)]);
}

// A flip step whose mirror covers register bits 0 .. JT: k[r] meets k[r ^ mask].
template <typename T, int JT, typename K = typename T::K> __device__ __forceinline__ void register_flip(K *k) {
    const int E = 1 << T::E_BITS;
    const int mask = (2 << JT) - 1;
#pragma unroll
    for (int r = 0; r < E; ++r)
        if (!(r & (1 << JT))) order_pair(k[r], k[r ^ mask]);
}

// Half-cleaner steps on register bits j, j-1, ... (count of them): straight-line code entered
// at bit j, so the keys stay in the same registers from one step to the next.
template <typename T, typename K = typename T::K> __device__ __forceinline__ void steps_down(K *k, u32 j, u32 count) {
    const int TOP = T::E_BITS > 4 ? 4 : 0; // 16-key groups have no bit 4
    switch (j) {
    case 4:
        register_step<T, TOP>(k);
        if (--count == 0) return;
        [[fallthrough]];
    case 3:
        register_step<T, 3>(k);
        if (--count == 0) return;
        [[fallthrough]];
    case 2:
        register_step<T, 2>(k);
        if (--count == 0) return;
        [[fallthrough]];
    case 1:
        register_step<T, 1>(k);
        if (--count == 0) return;
        [[fallthrough]];
    case 0:
        register_step<T, 0>(k);
    }
}

// A flip whose mirror covers register bits 0 .. jt.
template <typename T, typename K = typename T::K> __device__ __forceinline__ void flip_on_bits(K *k, u32 jt) {
    const int TOP = T::E_BITS > 4 ? 4 : 3; // the top register bit
    switch (jt) {
    case 0: register_flip<T, 0>(k); break;
    case 1: register_flip<T, 1>(k); break;
    case 2: register_flip<T, 2>(k); break;
    case 3: register_flip<T, 3>(k); break;
    case 4: register_flip<T, TOP>(k); break;
    }
}

// Half-cleaner steps on register bits J .. 0, straight-line.
template <typename T, int J, typename K = typename T::K> __device__ __forceinline__ void register_steps_down(K *k) {
    if constexpr (J >= 0) {
        register_step<T, J>(k);
        register_steps_down<T, J - 1>(k);
    }
}
