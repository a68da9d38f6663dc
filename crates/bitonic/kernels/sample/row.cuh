// The sampling kernel's shared memory and its reductions over a block and over a row (the
// blocks of a thread-block cluster, through distributed shared memory): a part of sample.cu,
// included once by it after its SAMPLE_* sizes.
#pragma once

// The draw's figures for a block: the boundary keys in blocks before it (index order); the
// kept weights in blocks before it, in it, and in the row; and how many boundary keys the row
// keeps (at most those there are).
struct Draw {
    u64 ties_before, before, mine, total, keep_ties;
};

// The shared memory of a block besides the resident keys. At file scope, so that every access
// is a shared-memory access the compiler can see (no generic pointers).
struct SampleShared {
    union { // a select's histogram: top-k's by counts, then top-p's by sums, never both at once
        u32 counts[SAMPLE_BUCKETS];
        u64 sums[SAMPLE_BUCKETS];
    };
    u64 warp[SAMPLE_WARPS];
    u32 list_keys[SAMPLE_LIST], list_index[SAMPLE_LIST]; // keys a step left, and where they sit
    u32 list_len;
    u64 published;          // this block's part of a row reduction
    u64 row_all, row_lower; // a row reduction's result, and that of the blocks of lower rank
    u64 found[3][2];        // each select round's digit, and the sum above it
    u64 block_part[2];      // the draw: this block's count of boundary keys, and its weight above them
    Draw draw;              // the draw's figures for this block (gather_draw)
};
// sm_90 takes 1 KiB more static shared memory a block than the struct (34,064 bytes): both fit.
static_assert(sizeof(SampleShared) + 1024 <= KERNEL_SAMPLE_STATIC_SHARED, "the host's budget of static shared memory");
__shared__ SampleShared sh;
extern __shared__ u32 resident_keys[];

// The row's barrier: the cluster's (common/cluster.cuh), or with G = 1 the block's.
__device__ __forceinline__ void row_barrier(u32 G) {
#if __CUDA_ARCH__ >= 900
    if (G > 1) {
        cluster_barrier();
        return;
    }
#else
    if (G > 1) __trap(); // the host launches clusters only on sm_90 and later
#endif
    __syncthreads();
}

#if __CUDA_ARCH__ >= 900
// The address in the cluster's shared window (a 32-bit shared::cluster address) of this
// block's shared variable at `mine`, as block `rank` of the row holds it.
__device__ __forceinline__ u32 in_row_window(const void *mine, u32 rank) {
    u32 at;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(at) : "r"(u32(__cvta_generic_to_shared(mine))), "r"(rank));
    return at;
}
#endif

// The value of this block's shared variable `mine` as block `rank` of the row holds it: read
// through the cluster's shared window (ld.shared::cluster), or with G = 1 the block's own.
// Volatile: never moved across the row's barriers.
__device__ __forceinline__ u64 in_block(const u64 &mine, u32 rank, u32 G) {
#if __CUDA_ARCH__ >= 900
    if (G > 1) {
        u64 v;
        asm volatile("ld.shared::cluster.u64 %0, [%1];" : "=l"(v) : "r"(in_row_window(&mine, rank)));
        return v;
    }
#endif
    return mine;
}
__device__ __forceinline__ u32 in_block(const u32 &mine, u32 rank, u32 G) {
#if __CUDA_ARCH__ >= 900
    if (G > 1) {
        u32 v;
        asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(in_row_window(&mine, rank)));
        return v;
    }
#endif
    return mine;
}

// Writes `v` into this block's shared variable `mine` as block `rank` of the row holds it.
__device__ __forceinline__ void store_in_block(u64 &mine, u32 rank, u32 G, u64 v) {
#if __CUDA_ARCH__ >= 900
    if (G > 1) {
        asm volatile("st.shared::cluster.u64 [%0], %1;" ::"r"(in_row_window(&mine, rank)), "l"(v) : "memory");
        return;
    }
#endif
    mine = v;
}

enum Combine { COMBINE_SUM, COMBINE_MAX, COMBINE_MIN };
__device__ __forceinline__ u64 combine(Combine op, u64 a, u64 b) {
    return op == COMBINE_SUM ? a + b : op == COMBINE_MAX ? (a > b ? a : b) : (a < b ? a : b);
}
__device__ __forceinline__ u64 identity(Combine op) { return op == COMBINE_MIN ? ~0ull : 0; }

// The block's combination of each thread's `v`, returned to every thread.
__device__ u64 block_combine(Combine op, u64 v) {
    const u32 lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE;
#pragma unroll
    for (u32 d = WARP_SIZE / 2; d > 0; d /= 2) v = combine(op, v, __shfl_xor_sync(FULL_WARP_MASK, v, d));
    if (lane == 0) sh.warp[warp] = v;
    __syncthreads();
    v = sh.warp[0];
#pragma unroll
    for (u32 w = 1; w < SAMPLE_WARPS; ++w) v = combine(op, v, sh.warp[w]);
    __syncthreads(); // sh.warp is free again
    return v;
}

// The combination of one value from each block of the row (`mine`, published by each
// block's thread 0 before a row barrier): the first warp reads them, a lane a block, and
// leaves in sh.row_all the combination of all and in sh.row_lower that of the blocks of lower
// rank. One remote load a block, not one a thread. The caller syncs the block after.
__device__ __forceinline__ void gather_row(Combine op, const u64 &mine, u32 rank, u32 G) {
    if (threadIdx.x >= WARP_SIZE) return;
    const u32 lane = threadIdx.x;
    const u64 theirs = lane < G ? in_block(mine, lane, G) : identity(op);
    u64 all = theirs, lower = lane < rank ? theirs : identity(op);
#pragma unroll
    for (u32 d = 1; d < KERNEL_SAMPLE_MOST_BLOCKS; d *= 2) { // the row's blocks are the first lanes
        all = combine(op, all, __shfl_xor_sync(FULL_WARP_MASK, all, d));
        lower = combine(op, lower, __shfl_xor_sync(FULL_WARP_MASK, lower, d));
    }
    if (lane == 0) {
        sh.row_all = all;
        sh.row_lower = lower;
    }
}

// The row's combination of each thread's `v` (every block of the cluster), to every thread.
__device__ u64 row_combine(Combine op, u64 v, u32 rank, u32 G) {
    v = block_combine(op, v);
    if (G == 1) return v;
    if (threadIdx.x == 0) sh.published = v;
    row_barrier(G);
    gather_row(op, sh.published, rank, G);
    row_barrier(G); // every block has read `published` (free again), and row_all is written
    return sh.row_all;
}

// Exclusive prefix sum of each thread's `v` over the block, in thread order; the block's
// total in `total`.
__device__ u64 block_exclusive_sum(u64 v, u64 &total) {
    const u32 lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE;
    u64 inclusive = v;
#pragma unroll
    for (u32 d = 1; d < WARP_SIZE; d *= 2) {
        const u64 other = __shfl_up_sync(FULL_WARP_MASK, inclusive, d);
        if (lane >= d) inclusive += other;
    }
    if (lane == WARP_SIZE - 1) sh.warp[warp] = inclusive;
    __syncthreads();
    u64 before = 0;
    total = 0;
#pragma unroll
    for (u32 w = 0; w < SAMPLE_WARPS; ++w) {
        if (w < warp) before += sh.warp[w];
        total += sh.warp[w];
    }
    __syncthreads();
    return before + inclusive - v;
}
