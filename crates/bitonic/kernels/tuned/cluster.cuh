// Cluster level (sm_90): steps between the blocks of a thread-block cluster through
// distributed shared memory.
#pragma once

#include "tuned/tuning.cuh"

// Thread-block clusters (sm_90): the block's rank in its cluster, a barrier over the whole
// cluster (release/acquire: shared-memory writes before it are visible to every block after
// it), and the generic address of the same shared variable in another block of the cluster.
#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ u32 cluster_rank() {
    u32 rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}
__device__ __forceinline__ void cluster_barrier() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
template <typename K> __device__ __forceinline__ const K *tile_of_rank(K *tile, u32 rank) {
    u64 remote;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(remote) : "l"(tile), "r"(rank));
    return reinterpret_cast<const K *>(remote);
}
#endif

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
    const K *theirs = tile_of_rank(tile, partner);
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
