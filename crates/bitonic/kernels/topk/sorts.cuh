// The bitonic networks of the top-k kernels, best first: of a block's buffer in shared memory
// (sort_best_first: the filter's flushes, the final sort of a radix select, a merge pass's
// runs) and of a warp's registers (warp_sort_best_first, warp_clean_best_first: the
// tournaments and the warp sort), with the warp shuffle they use. Relies on topk/common.cuh
// (better, THREADS) and common/network.cuh (lower_index).
#pragma once

#include "common/network.cuh"
#include "topk/common.cuh"

// Sorts buf[0, slots) best first (slots a power of two): the network's all-ascending form,
// slots / 2 comparators a step spread over the block. Ends with a barrier.
template <typename C> __device__ __noinline__ void sort_best_first(C *buf, u32 slots) {
    for (u32 size = 2; size <= slots; size <<= 1) {
        for (u32 stride = size >> 1; stride > 0; stride >>= 1) {
            for (u32 t = threadIdx.x; t < slots / 2; t += THREADS) {
                u32 i = lower_index(t, stride);
                u32 j = stride * 2 == size ? i ^ (size - 1) : i + stride;
                C a = buf[i], b = buf[j];
                if (better(b, a)) {
                    buf[i] = b;
                    buf[j] = a;
                }
            }
            __syncthreads();
        }
    }
}

// A value from lane `lane ^ mask` of the warp.
__device__ __forceinline__ u32 shuffle_xor(u32 v, u32 mask) { return __shfl_xor_sync(FULL_WARP_MASK, v, mask); }
__device__ __forceinline__ u64 shuffle_xor(u64 v, u32 mask) { return __shfl_xor_sync(FULL_WARP_MASK, v, mask); }
__device__ __forceinline__ KeyIndex shuffle_xor(const KeyIndex &c, u32 mask) {
    KeyIndex o;
    o.key = __shfl_xor_sync(FULL_WARP_MASK, c.key, mask);
    o.index = __shfl_xor_sync(FULL_WARP_MASK, c.index, mask);
    o.value = 0;
    return o;
}

// Sorts the 32 x P values of a warp best first: a bitonic network whose blocks of `size`
// alternate direction until the last. Slot i of the network is register p of lane L, i =
// p x 32 + L (LANE_MAJOR false: one load of the warp fills a register with consecutive
// elements) or i = L x P + p (true: a lane holds P consecutive slots). Strides between a lane's
// own registers compare them in place; the others take the partner lane's register by a
// shuffle, so the lane-major layout shuffles only at strides from P on (15 of the 55 stages of
// 1,024 values at P = 32, against 40).
template <u32 P, bool LANE_MAJOR = false, typename T> __device__ __forceinline__ void warp_sort_best_first(T (&x)[P]) {
    const u32 lane = threadIdx.x % WARP_SIZE, N = P * WARP_SIZE;
#pragma unroll
    for (u32 size = 2; size <= N; size <<= 1) {
#pragma unroll
        for (u32 stride = size >> 1; stride > 0; stride >>= 1) {
            const bool in_lane = LANE_MAJOR ? stride < P : stride >= WARP_SIZE;
            const u32 register_stride = LANE_MAJOR ? stride : stride / WARP_SIZE;
            const u32 lane_stride = LANE_MAJOR ? stride / P : stride;
#pragma unroll
            for (u32 p = 0; p < P; p++) {
                const u32 slot = LANE_MAJOR ? lane * P + p : p * WARP_SIZE + lane;
                const bool best_first = size == N || (slot & size) == 0;
                if (in_lane) {
                    const u32 q = p ^ register_stride;
                    if (q > p && best_first == better(x[q], x[p])) {
                        const T t = x[p];
                        x[p] = x[q];
                        x[q] = t;
                    }
                } else {
                    const T other = shuffle_xor(x[p], lane_stride);
                    if ((best_first == ((lane & lane_stride) == 0)) == better(other, x[p])) x[p] = other;
                }
            }
        }
    }
}

// Sorts a bitonic sequence of 32 x V values, laid out as warp_sort_best_first's default, best first:
// half-cleaners of strides 16 V down to 1.
template <u32 V, typename T> __device__ __forceinline__ void warp_clean_best_first(T (&x)[V]) {
    const u32 lane = threadIdx.x % WARP_SIZE;
#pragma unroll
    for (u32 s = V / 2; s > 0; s >>= 1) {
#pragma unroll
        for (u32 v = 0; v < V; v++) {
            if ((v & s) == 0 && better(x[v + s], x[v])) {
                const T t = x[v];
                x[v] = x[v + s];
                x[v + s] = t;
            }
        }
    }
#pragma unroll
    for (u32 stride = WARP_SIZE / 2; stride > 0; stride >>= 1) {
#pragma unroll
        for (u32 v = 0; v < V; v++) {
            const T other = shuffle_xor(x[v], stride);
            if (((lane & stride) == 0) == better(other, x[v])) x[v] = other;
        }
    }
}
