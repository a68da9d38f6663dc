// Cluster level (sm_90): steps between the blocks of a thread-block cluster through
// distributed shared memory.
#pragma once

#include "common/cluster.cuh"
#include "tuned/tuning.cuh"

// A step on global bit g at or above the block's tile (a cluster bit): key i of this block
// meets key i (or, in a flip, key tile_len-1-i) of the partner block, read from the partner's
// shared memory, and the block of lower index keeps the smaller keys. Every block of the
// cluster takes part, so that the barriers match.
template <typename T, typename K = typename T::K> __device__ void cluster_step(K *tile, u32 tile_bits, u32 b, u32 g) {
#if __CUDA_ARCH__ >= 900
    const u32 E = 1u << T::E_BITS; // = tile_len / blockDim.x
    const u32 bit = g - tile_bits, rank = cluster_rank();
    const bool flip = g == b;
    const u32 partner = rank ^ (flip ? (2u << bit) - 1 : 1u << bit);
    const u32 index_mirror = flip ? (1u << tile_bits) - 1 : 0;
    const bool keep_smaller = !((rank >> bit) & 1);
    cluster_barrier(); // the partner's last writes are visible
    const K *theirs = in_cluster_block(tile, partner);
    K k[E];
#pragma unroll
    for (u32 r = 0; r < E; ++r) {
        const u32 i = threadIdx.x + r * blockDim.x;
        K mine = tile[slot<T>(i)], other = theirs[slot<T>(i ^ index_mirror)];
        order_pair(mine, other);
        k[r] = keep_smaller ? mine : other;
    }
    cluster_barrier(); // every block has read its partner's keys: now overwrite them
#pragma unroll
    for (u32 r = 0; r < E; ++r) tile[slot<T>(threadIdx.x + r * blockDim.x)] = k[r];
    __syncthreads();
#else
    __trap(); // the host launches clusters only on sm_90 and later
#endif
}
