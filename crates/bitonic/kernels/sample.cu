// Sampling (src/sample/, docs/design/sample.md): one token from each row of logits after
// temperature, min-p, top-k and top-p, drawn at the row's uniform number. One launch does it
// all: a row is one thread-block cluster of G blocks (G = 1 where the host launches no
// clusters), and block r of it holds the r-th slice of the row, as the sortable u32 keys of
// s = logit / temperature, in shared memory (`resident`), or reads its slice again from the
// logits at each step where the slice does not fit.
//
// Every filter keeps a prefix of the stable descending order, so what is kept is "every key
// above a boundary key B, and the first c keys equal to B in index order". The steps find B
// and c: the largest key (a reduction), min-p's smallest kept key (a reduction), top-k's
// k-th key (a radix select by counts), top-p's boundary (a radix select by sums of weights).
// The draw is then one scan of the row in index order. Weights are summed in fixed point
// (integers), so every sum is exact, independent of the order of the additions: the same
// uniform number gives the same token, whatever the launch.
#include "common/cluster.cuh"
#include "common/types.cuh"

#ifndef KERNEL_SAMPLE_THREADS
#error "the host passes KERNEL_SAMPLE_THREADS (src/kernels/abi.rs)"
#endif
#ifndef KERNEL_SAMPLE_WEIGHT_BITS
#error "the host passes KERNEL_SAMPLE_WEIGHT_BITS (src/kernels/abi.rs)"
#endif
#ifndef KERNEL_SAMPLE_STATIC_SHARED
#error "the host passes KERNEL_SAMPLE_STATIC_SHARED (src/kernels/abi.rs)"
#endif
#ifndef KERNEL_SAMPLE_MOST_BLOCKS
#error "the host passes KERNEL_SAMPLE_MOST_BLOCKS (src/kernels/abi.rs)"
#endif

#define SAMPLE_THREADS KERNEL_SAMPLE_THREADS
#define SAMPLE_WARPS (SAMPLE_THREADS / WARP_SIZE)
// Radix digits of the selects, high to low: 11, 11 and 10 bits of a u32 key.
#define SAMPLE_BUCKETS 2048
#define SAMPLE_BUCKETS_A_THREAD (SAMPLE_BUCKETS / SAMPLE_THREADS)
static_assert(SAMPLE_BUCKETS % SAMPLE_THREADS == 0, "whole buckets a thread");
// The most keys of a block's slice that a filter leaves for the later steps to scan as a list
// (key, index) instead of the whole slice (top-k leaves about k).
#define SAMPLE_LIST 2048

// s's sortable u32 key (larger s, larger key) and back. NaN is never keyed (it reads as -inf).
__device__ __forceinline__ u32 key_of_float(float s) {
    const u32 b = __float_as_uint(s);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float float_of_key(u32 k) {
    return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}
#define KEY_NEG_INF 0x007fffffu // key_of_float(-inf)
#define KEY_POS_INF 0xff800000u // key_of_float(+inf)

// The logit types, as their bits.
struct LogitF32 { float x; };
struct LogitF16 { u16 bits; };
struct LogitBF16 { u16 bits; };
__device__ __forceinline__ float to_float(LogitF32 v) { return v.x; }
__device__ __forceinline__ float to_float(LogitBF16 v) { return __uint_as_float(u32(v.bits) << 16); }
__device__ __forceinline__ float to_float(LogitF16 v) {
    float f;
    asm("{ .reg .b16 h; mov.b16 h, %1; cvt.f32.f16 %0, h; }" : "=f"(f) : "h"(v.bits));
    return f;
}

// One row's settings, read from the per-row arrays where given (null: the one value of all).
struct RowSettings {
    float temperature, min_p, top_p;
    long long top_k;
    float u;
};

// The row's barrier and the address of a shared variable in another block of the row: the
// cluster's (common/cluster.cuh), or with G = 1 the block's own.
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
template <typename T> __device__ __forceinline__ const T *in_block(const T *mine, u32 rank, u32 G) {
#if __CUDA_ARCH__ >= 900
    if (G > 1) return in_cluster_block(mine, rank);
#endif
    return mine;
}

// The shared memory of a block besides the resident keys.
struct SampleShared {
    u32 counts[SAMPLE_BUCKETS];
    u64 sums[SAMPLE_BUCKETS];
    u64 warp[SAMPLE_WARPS];
    u32 list_keys[SAMPLE_LIST], list_index[SAMPLE_LIST]; // the keys left, in index order
    u64 published[2]; // this block's part of a cluster reduction
    u64 found[3];     // a select's digit, sum above it and count in it
};

enum Combine { COMBINE_SUM, COMBINE_MAX, COMBINE_MIN };
__device__ __forceinline__ u64 combine(Combine op, u64 a, u64 b) {
    return op == COMBINE_SUM ? a + b : op == COMBINE_MAX ? (a > b ? a : b) : (a < b ? a : b);
}

// The block's combination of each thread's `v`, returned to every thread.
__device__ u64 block_combine(SampleShared &sh, Combine op, u64 v) {
    const u32 lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE;
#pragma unroll
    for (u32 d = WARP_SIZE / 2; d > 0; d /= 2) v = combine(op, v, __shfl_xor_sync(FULL_WARP_MASK, v, d));
    if (lane == 0) sh.warp[warp] = v;
    __syncthreads();
    v = sh.warp[0];
    for (u32 w = 1; w < SAMPLE_WARPS; ++w) v = combine(op, v, sh.warp[w]);
    __syncthreads(); // sh.warp is free again
    return v;
}

// The row's combination of each thread's `v` (every block of the cluster), to every thread.
// With `before`, instead: the combination of the blocks of lower rank alone (an exclusive
// prefix across the row's slices, in index order).
__device__ u64 row_combine(SampleShared &sh, Combine op, u64 v, u32 rank, u32 G, bool before = false) {
    v = block_combine(sh, op, v);
    if (G == 1) return before ? (op == COMBINE_MIN ? ~0ull : 0) : v;
    if (threadIdx.x == 0) sh.published[0] = v;
    row_barrier(G);
    u64 r = op == COMBINE_MIN ? ~0ull : 0;
    const u32 last = before ? rank : G;
#pragma unroll
    for (u32 g = 0; g < KERNEL_SAMPLE_MOST_BLOCKS; ++g) // unrolled: the remote loads overlap
        if (g < last) r = combine(op, r, *in_block(&sh.published[0], g, G));
    row_barrier(G); // every block has read: `published` is free again
    return r;
}

// Exclusive prefix sum of each thread's `v` over the block, in thread order; the block's
// total in `total`.
__device__ u64 block_exclusive_sum(SampleShared &sh, u64 v, u64 &total) {
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
    for (u32 w = 0; w < SAMPLE_WARPS; ++w) {
        if (w < warp) before += sh.warp[w];
        total += sh.warp[w];
    }
    __syncthreads();
    return before + inclusive - v;
}

// A block's slice of its row: `len` logits from `logits`, keyed by `key(i)`; and, once a
// filter has left few keys (`listed`), those keys with their indices in the slice, in index
// order, which the later steps scan instead (`n`, `key_at`, `index_at`).
template <typename L> struct Slice {
    const L *logits;
    u32 *keys; // the resident keys, or null
    u32 len;
    float temperature;
    bool greedy;
    bool listed;
    u32 listed_len;
    const u32 *list_keys, *list_index;

    __device__ __forceinline__ u32 n() const { return listed ? listed_len : len; }
    __device__ __forceinline__ u32 key_at(u32 j) const { return listed ? list_keys[j] : key(j); }
    __device__ __forceinline__ u32 index_at(u32 j) const { return listed ? list_index[j] : j; }

    __device__ __forceinline__ u32 read(u32 i) const {
        const float x = to_float(logits[i]);
        float s = greedy ? x : x / temperature;
        if (s != s) s = -__int_as_float(0x7f800000); // NaN reads as -inf
        return key_of_float(s + 0.0f);                // -0.0 ties with +0.0
    }
    __device__ __forceinline__ u32 key(u32 i) const { return keys ? keys[i] : read(i); }
};

// A key's weight exp(s - max), the largest 1; with max = +inf, 1 for +inf and 0 otherwise.
__device__ __forceinline__ float weight_of(u32 key, u32 max_key) {
    if (max_key == KEY_POS_INF) return key == KEY_POS_INF ? 1.0f : 0.0f;
    return expf(float_of_key(key) - float_of_key(max_key));
}
// The weight in fixed point: weight × 2^WEIGHT_BITS, rounded (at most 2^WEIGHT_BITS).
__device__ __forceinline__ u64 fixed_weight(u32 key, u32 max_key) {
    return __float2ull_rn(weight_of(key, max_key) * float(1ull << KERNEL_SAMPLE_WEIGHT_BITS));
}

// The radix select of the keys at or above `floor`: the key K at which, from the largest key
// down, the running total of each key's value (1 by counts, its fixed-point weight by sums)
// first reaches `target` (>= 1, and at most the total). Returns K, the total of the keys
// above K in `above` and the keys equal to K in `ties`. Three rounds, one a digit.
template <typename L>
__device__ u32 radix_select(SampleShared &sh, const Slice<L> &slice, u32 floor, u64 target, bool by_weight, u32 max_key,
                            u32 rank, u32 G, u64 &above, u64 &ties) {
    const u32 shifts[3] = {21, 10, 0}, widths[3] = {11, 11, 10};
    u32 prefix = 0, mask = 0;
    above = 0;
    ties = 0;
    for (u32 round = 0; round < 3; ++round) {
        const u32 shift = shifts[round], digit_mask = (1u << widths[round]) - 1;
        for (u32 b = threadIdx.x; b < SAMPLE_BUCKETS; b += SAMPLE_THREADS) {
            sh.counts[b] = 0;
            sh.sums[b] = 0;
        }
        __syncthreads();
        for (u32 j = threadIdx.x; j < slice.n(); j += SAMPLE_THREADS) {
            const u32 k = slice.key_at(j);
            if (k < floor || (k & mask) != prefix) continue;
            const u32 d = (k >> shift) & digit_mask;
            if (by_weight) atomicAdd(&sh.sums[d], fixed_weight(k, max_key));
            else atomicAdd(&sh.counts[d], 1u);
        }
        row_barrier(G); // every block's histogram is complete
        // Thread t sums buckets from the top: 2047 - t·B down to 2047 - t·B - (B - 1).
        u64 value[SAMPLE_BUCKETS_A_THREAD], mine = 0;
#pragma unroll
        for (u32 j = 0; j < SAMPLE_BUCKETS_A_THREAD; ++j) {
            const u32 b = SAMPLE_BUCKETS - 1 - (threadIdx.x * SAMPLE_BUCKETS_A_THREAD + j);
            u64 v = 0;
#pragma unroll
            for (u32 g = 0; g < KERNEL_SAMPLE_MOST_BLOCKS; ++g) // unrolled: the remote loads overlap
                if (g < G) v += by_weight ? *in_block(&sh.sums[b], g, G) : u64(*in_block(&sh.counts[b], g, G));
            value[j] = v;
            mine += v;
        }
        u64 total;
        u64 before = above + block_exclusive_sum(sh, mine, total);
        if (before < target && before + mine >= target) {
#pragma unroll
            for (u32 j = 0; j < SAMPLE_BUCKETS_A_THREAD; ++j) {
                if (before + value[j] >= target) {
                    const u32 b = SAMPLE_BUCKETS - 1 - (threadIdx.x * SAMPLE_BUCKETS_A_THREAD + j);
                    u64 count = 0;
#pragma unroll
                    for (u32 g = 0; g < KERNEL_SAMPLE_MOST_BLOCKS; ++g)
                        if (g < G) count += *in_block(&sh.counts[b], g, G);
                    sh.found[0] = b;
                    sh.found[1] = before;
                    sh.found[2] = by_weight ? 0 : count; // by sums, counted below
                    break;
                }
                before += value[j];
            }
        }
        row_barrier(G); // `found` is written, and every block has read the histograms
        prefix |= u32(sh.found[0]) << shift;
        mask |= digit_mask << shift;
        above = sh.found[1];
        ties = sh.found[2];
        __syncthreads(); // `found` is read before a next round writes it
    }
    if (by_weight) { // the count of K, which the sums did not keep
        u64 n = 0;
        for (u32 j = threadIdx.x; j < slice.n(); j += SAMPLE_THREADS) n += slice.key_at(j) == prefix;
        ties = row_combine(sh, COMBINE_SUM, n, rank, G);
    }
    return prefix;
}

// The run of `n` keys a thread takes where it needs them consecutive (index order): an odd
// number of them, so that a warp's reads of resident keys fall in different banks.
struct ThreadRun {
    u32 first, end;
};
__device__ __forceinline__ ThreadRun thread_run(u32 n) {
    const u32 run = ((n + SAMPLE_THREADS - 1) / SAMPLE_THREADS) | 1;
    const u32 first = min(threadIdx.x * run, n);
    return {first, min(first + run, n)};
}

// Lists the keys of the block's slice at or above `floor` (with their indices, in index
// order) for the later steps, where they fit (SAMPLE_LIST); else the slice stays as it is.
// Each thread takes its run of consecutive keys (thread_run), so the list keeps index order.
template <typename L> __device__ void list_keys_left(SampleShared &sh, Slice<L> &slice, u32 floor) {
    const ThreadRun r = thread_run(slice.len);
    const u32 first = r.first, end = r.end;
    u64 mine = 0, total;
    for (u32 i = first; i < end; ++i) mine += slice.key(i) >= floor;
    u64 at = block_exclusive_sum(sh, mine, total);
    if (total > SAMPLE_LIST) return; // the same for every thread of the block
    for (u32 i = first; i < end; ++i) {
        const u32 k = slice.key(i);
        if (k >= floor) {
            sh.list_keys[at] = k;
            sh.list_index[at] = i;
            ++at;
        }
    }
    __syncthreads();
    slice.listed = true;
    slice.listed_len = u32(total);
    slice.list_keys = sh.list_keys;
    slice.list_index = sh.list_index;
}

// Row `blockIdx.x / blocks_a_row`, slice `blockIdx.x % blocks_a_row` (the block's rank in its
// cluster) of `slice_len` logits; see the file's head. Settings: a per-row array where its
// pointer is not null, else the one value of all rows (temperature 1, min-p 0, top-k 0 and
// top-p 1 are "off").
template <typename L>
__device__ void sample_rows(const L *logits, u32 vocab, u32 blocks_a_row, u32 slice_len, u32 resident,
                            const float *temperatures, float temperature_all, const float *min_ps, float min_p_all,
                            const long long *top_ks, long long top_k_all, const float *top_ps, float top_p_all,
                            const float *uniform, long long *tokens) {
    extern __shared__ u32 resident_keys[];
    __shared__ SampleShared sh;
    const u32 G = blocks_a_row, row = blockIdx.x / G, rank = blockIdx.x % G;
    const u32 lo = min(rank * slice_len, vocab);
    const float temperature = temperatures ? temperatures[row] : temperature_all;
    Slice<L> slice;
    slice.logits = logits + u64(row) * vocab + lo;
    slice.keys = resident ? resident_keys : nullptr;
    slice.len = min(slice_len, vocab - lo);
    slice.temperature = temperature;
    slice.greedy = !(temperature > 0.0f); // not above 0, or NaN
    slice.listed = false;

    // 1. The keys, and the largest.
    u32 largest = 0;
    for (u32 i = threadIdx.x; i < slice.len; i += SAMPLE_THREADS) {
        const u32 k = slice.read(i);
        if (resident) resident_keys[i] = k;
        largest = max(largest, k);
    }
    const u32 max_key = u32(row_combine(sh, COMBINE_MAX, largest, rank, G)); // syncs the block
    if (max_key <= KEY_NEG_INF) { // nothing above -inf
        if (rank == 0 && threadIdx.x == 0) tokens[row] = -1;
        return;
    }
    if (slice.greedy) { // the first index of the largest
        u64 first = ~0ull;
        for (u32 i = threadIdx.x; i < slice.len; i += SAMPLE_THREADS) {
            if (slice.key(i) == max_key) {
                first = lo + i;
                break;
            }
        }
        first = row_combine(sh, COMBINE_MIN, first, rank, G);
        if (rank == 0 && threadIdx.x == 0) tokens[row] = (long long)first;
        return;
    }

    // 2. min-p keeps the keys of weight >= min_p: above its smallest such key. `left`: the
    // keys above -inf that it keeps.
    float min_p = min_ps ? min_ps[row] : min_p_all;
    const bool min_p_on = min_p > 0.0f; // NaN is off
    min_p = fminf(min_p, 1.0f);
    const long long top_k = top_ks ? top_ks[row] : top_k_all;
    u32 floor = KEY_NEG_INF + 1;
    u64 left = ~0ull;
    if (min_p_on || top_k > 0) {
        u64 count = 0;
        u32 lowest = 0xffffffffu;
        for (u32 i = threadIdx.x; i < slice.len; i += SAMPLE_THREADS) {
            const u32 k = slice.key(i);
            if (k > KEY_NEG_INF && (!min_p_on || weight_of(k, max_key) >= min_p)) {
                ++count;
                lowest = min(lowest, k);
            }
        }
        left = row_combine(sh, COMBINE_SUM, count, rank, G);
        if (min_p_on) floor = u32(row_combine(sh, COMBINE_MIN, lowest, rank, G));
    }
    // What is kept from here on: every key above `boundary`, and the first `keep_ties` keys
    // equal to it in index order.
    u32 boundary = floor;
    u64 keep_ties = ~0ull;

    // 3. top-k keeps the keys at or above the k-th largest left (its ties too).
    if (top_k > 0 && u64(top_k) < left) {
        u64 above, ties;
        boundary = radix_select(sh, slice, floor, u64(top_k), false, max_key, rank, G, above, ties);
    }
    // What min-p and top-k left is often a few keys: the steps below scan them as a list.
    if (boundary > floor || min_p_on) list_keys_left(sh, slice, boundary);

    // 4. top-p keeps the shortest prefix of the stable descending order whose weights reach p
    // times the sum of those left; p not above 0 (or NaN) keeps the first token alone.
    const float top_p = top_ps ? top_ps[row] : top_p_all;
    if (top_p != top_p || top_p < 1.0f) {
        if (!(top_p > 0.0f)) {
            boundary = max_key;
            keep_ties = 1;
        } else {
            u64 z = 0;
            for (u32 j = threadIdx.x; j < slice.n(); j += SAMPLE_THREADS) {
                const u32 k = slice.key_at(j);
                if (k >= boundary) z += fixed_weight(k, max_key);
            }
            z = row_combine(sh, COMBINE_SUM, z, rank, G);
            u64 target = u64(ceil(double(top_p) * double(z)));
            target = target < 1 ? 1 : target > z ? z : target;
            u64 above, ties;
            const u32 b = radix_select(sh, slice, boundary, target, true, max_key, rank, G, above, ties);
            // above < target <= above + ties × w: w > 0, and some ties reach the target.
            const u64 w = fixed_weight(b, max_key), need = (target - above + w - 1) / w;
            boundary = b;
            keep_ties = need < ties ? need : ties;
        }
    }

    // 5. The draw: the kept keys in index order, the first at which the running sum of
    // weights passes u × their total. Each thread takes its run of consecutive keys
    // (thread_run), whose running sum a block scan and the cluster's prefix start.
    const ThreadRun r = thread_run(slice.n());
    const u32 first = r.first, end = r.end;
    const u64 boundary_weight = fixed_weight(boundary, max_key);
    u64 ties_here = 0, above_here = 0;
    for (u32 i = first; i < end; ++i) {
        const u32 k = slice.key_at(i);
        if (k > boundary) above_here += fixed_weight(k, max_key);
        else if (k == boundary) ++ties_here;
    }
    u64 unused;
    u64 ties_before = block_exclusive_sum(sh, ties_here, unused);
    ties_before += row_combine(sh, COMBINE_SUM, ties_here, rank, G, true);
    const u64 kept_ties = ties_before >= keep_ties ? 0 : min(keep_ties - ties_before, ties_here);
    const u64 mine = above_here + kept_ties * boundary_weight;
    const u64 before_here = block_exclusive_sum(sh, mine, unused);
    const u64 before_block = row_combine(sh, COMBINE_SUM, mine, rank, G, true);
    const u64 total = row_combine(sh, COMBINE_SUM, mine, rank, G);
    float u = uniform[row];
    if (!(u >= 0.0f)) u = 0.0f;               // NaN and below 0
    u = fminf(u, __uint_as_float(0x3f7fffffu)); // at most 1 - 2^-24
    const u64 target = u64(double(u) * double(total)); // below total
    const u64 start = before_block + before_here;
    if (start <= target && target < start + mine) {
        u64 running = start, tie = ties_before;
        for (u32 i = first; i < end; ++i) {
            const u32 k = slice.key_at(i);
            bool kept = k > boundary;
            if (k == boundary) kept = tie++ < keep_ties;
            if (!kept) continue;
            running += fixed_weight(k, max_key);
            if (running > target) {
                tokens[row] = (long long)(lo + slice.index_at(i));
                break;
            }
        }
    }
}

static_assert(sizeof(SampleShared) <= KERNEL_SAMPLE_STATIC_SHARED, "the host's budget of static shared memory");

#define SAMPLE_KERNEL(NAME, L)                                                                                          \
    extern "C" __global__ void __launch_bounds__(SAMPLE_THREADS)                                                       \
        NAME(const L *logits, u32 vocab, u32 blocks_a_row, u32 slice_len, u32 resident, const float *temperatures,     \
             float temperature_all, const float *min_ps, float min_p_all, const long long *top_ks,                     \
             long long top_k_all, const float *top_ps, float top_p_all, const float *uniform, long long *tokens) {     \
        sample_rows<L>(logits, vocab, blocks_a_row, slice_len, resident, temperatures, temperature_all, min_ps,        \
                       min_p_all, top_ks, top_k_all, top_ps, top_p_all, uniform, tokens);                              \
    }
SAMPLE_KERNEL(sample_rows_f32, LogitF32)
SAMPLE_KERNEL(sample_rows_f16, LogitF16)
SAMPLE_KERNEL(sample_rows_bf16, LogitBF16)
