// The network's schedule on the device: partners, comparator indices and one step over
// global memory (the seed versions' building blocks).
#pragma once

#include "common/compare.cuh"
#include "common/memory.cuh"

// The partner of index i in the step (size, stride).
__device__ __forceinline__ u32 partner(u32 i, u32 size, u32 stride) {
    bool first_step_of_stage = stride * 2 == size;
    return first_step_of_stage ? i ^ (size - 1) : i ^ stride;
}

// The lower index of comparator t: a zero bit inserted at the stride's position.
// This is the report's get_lower_partner (V4).
__device__ __forceinline__ u32 lower_index(u32 t, u32 stride) {
    u32 low = stride - 1;
    return ((t & ~low) << 1) | (t & low);
}

// Smaller key to keys[i], larger to keys[j] (i < j).
template <typename K> __device__ __forceinline__ void compare_exchange(K *keys, u32 i, u32 j) {
    K a = keys[i], b = keys[j];
    if (b < a) {
        keys[i] = b;
        keys[j] = a;
    }
}

// One network step over global memory, one thread per key (V0, and V1-V3's steps that span
// blocks). Half the threads find their partner below them and do nothing.
template <typename K>
__device__ __forceinline__ void global_step_per_key(K *keys, u32 n, u32 size, u32 stride) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 j = partner(i, size, stride);
    if (j > i && j < n) compare_exchange(keys, i, j);
}

// One network step over global memory, one thread per comparator (V4, V5). The grid covers
// padded_n / 2 comparators.
template <typename K>
__device__ __forceinline__ void global_step_per_pair(K *keys, u32 n, u32 size, u32 stride) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    u32 i = lower_index(t, stride);
    u32 j = stride * 2 == size ? i ^ (size - 1) : i + stride;
    if (j < n) compare_exchange(keys, i, j);
}

#define STEP_PARAMS(K) (K * keys, u32 n, u32 size, u32 stride)
#define STEP_ARGS (keys, n, size, stride)
#define SORT_PARAMS(K) (K * keys, u32 n)
#define SORT_ARGS (keys, n)
#define MERGE_PARAMS(K) (K * keys, u32 n, u32 size)
#define MERGE_ARGS (keys, n, size)
