// The tournaments of the radix select (topk/radix.cuh): the block's best values, sorted, by
// warp sorts and merges of the warps' lists; step 1's threshold with one group a thread
// (tournament_threshold) and step 3 over a few values a thread (select_by_tournament).
// Relies on topk/sorts.cuh (the warp networks), topk/radix_rounds.cuh (group_bests) and the
// host's KERNEL_TOPK_TOURNAMENT_MOST.
#pragma once

#include "topk/radix_rounds.cuh"
#include "topk/sorts.cuh"

// The most values a tournament keeps (the host's RADIX_TOURNAMENT_MOST). With u64 composites
// the dynamic shared memory holds at least TOURNAMENT_SLOTS of them (src/plan/topk/mod.rs), of
// which a tournament of M uses WARPS x M; 16-byte composites run only the threshold's
// tournaments of up to 128, which the candidates' space holds.
#ifndef KERNEL_TOPK_TOURNAMENT_MOST
#error "the host passes KERNEL_TOPK_TOURNAMENT_MOST (src/policy/topk.rs)"
#endif
#define TOURNAMENT_MOST u32(KERNEL_TOPK_TOURNAMENT_MOST)
#define TOURNAMENT_SLOTS (THREADS / WARP_SIZE * TOURNAMENT_MOST)

// The block's best M = 32 x V of the values its threads hold (P a thread, P <= V), by a
// tournament: each warp sorts its 32 x P values into a list of M (padded), then pairs of
// warps' lists merge, level by level, each keeping the best M of the two: the better of each
// element of one list and the mirrored element of the other are those M, as a bitonic
// sequence, which warp_clean_best_first sorts. After three levels warp 0's `list` holds them,
// sorted best first (element v x 32 + lane in register v). A list goes through shared memory
// (`lists`, WARPS x M values, free from the call on) once a level, read by one warp; the slots
// written at one level are never those read at the level before, so one barrier a level
// suffices. Called by the whole block; `lists` may be overwritten once all threads pass a
// barrier after it.
template <u32 V, u32 P, typename T>
__device__ __forceinline__ void block_best(T (&x)[P], T (&list)[V], T *lists) {
    static_assert(P <= V && V * WARP_SIZE <= TOURNAMENT_MOST, "lists of at most TOURNAMENT_MOST");
    const u32 M = V * WARP_SIZE, WARPS = THREADS / WARP_SIZE;
    const u32 lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE;
    warp_sort_best_first(x);
#pragma unroll
    for (u32 v = 0; v < V; v++) list[v] = v < P ? x[v < P ? v : 0] : padding<T>();
#pragma unroll
    for (u32 level = 1; level < WARPS; level <<= 1) {
        if (warp % (2 * level) == level)
#pragma unroll
            for (u32 v = 0; v < V; v++) lists[warp * M + v * WARP_SIZE + lane] = list[v];
        __syncthreads();
        if (warp % (2 * level) == 0) {
            const T *other = lists + (warp + level) * M;
#pragma unroll
            for (u32 v = 0; v < V; v++) {
                const T o = other[M - 1 - (v * WARP_SIZE + lane)];
                if (better(o, list[v])) list[v] = o;
            }
            warp_clean_best_first(list);
        }
    }
}

// Element i of a list that block_best left in warp 0, from lane i % 32 of it: `at` gets it,
// read by any thread after a barrier.
template <u32 V, typename T> __device__ __forceinline__ void publish(const T (&list)[V], u32 i, T *at) {
    // Each register tests its own element number, so `list` is never indexed at run time
    // (`list[i / 32]` would put it on the stack).
#pragma unroll
    for (u32 v = 0; v < V; v++)
        if (threadIdx.x < WARP_SIZE && v * WARP_SIZE + threadIdx.x == i) *at = list[v];
}

// Step 1 with one group a thread, by a tournament: the need-th best of the threads' best
// values, for 1 <= need <= 32 x V. Called by the whole block; `lists` is free from its call.
template <u32 V, typename T, u32 R>
__device__ __forceinline__ T tournament_threshold(const T (&e)[R], u32 need, T *lists) {
    T best[1], list[V];
    group_bests<1>(e, best);
    block_best(best, list, lists);
    __shared__ T threshold; // apart from `lists`, which the caller overwrites next
    publish(list, need - 1, &threshold);
    __syncthreads();
    return threshold;
}

// put(i, list[v]) for the elements i = v x 32 + lane < need of a list that block_best left in
// warp 0.
template <u32 V, typename T, typename Put>
__device__ __forceinline__ void put_best(const T (&list)[V], u32 need, const Put &put) {
    const u32 lane = threadIdx.x % WARP_SIZE;
    if (threadIdx.x < WARP_SIZE) {
#pragma unroll
        for (u32 v = 0; v < V; v++)
            if (v * WARP_SIZE + lane < need) put(v * WARP_SIZE + lane, list[v]);
    }
}

// Step 3 by a tournament over the P (2 or 4) values a thread holds, padding where none: the
// block's best `need` (at most TOURNAMENT_MOST), sorted, to put(i, value) for i < need. (One
// size of list for every need: each more would add its network to the compile time.) Called
// by the whole block; `lists` is free from its call.
template <u32 P, typename T, typename Put>
__device__ __forceinline__ void select_by_tournament(T (&x)[P], u32 need, T *lists, const Put &put) {
    T list[TOURNAMENT_MOST / WARP_SIZE];
    block_best(x, list, lists);
    put_best(list, need, put);
}
