// Thread-block clusters (sm_90), for the tuned sort's cluster steps (tuned/cluster.cuh) and the
// sampling kernel's row of blocks (sample.cu).
#pragma once

#include "common/types.cuh"

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
template <typename K> __device__ __forceinline__ const K *in_cluster_block(const K *mine, u32 rank) {
    u64 remote;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(remote) : "l"(mine), "r"(rank));
    return reinterpret_cast<const K *>(remote);
}
#endif
