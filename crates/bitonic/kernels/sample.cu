// Sampling (src/sample/, docs/design/sample.md): one token from each row of logits after
// temperature, min-p, top-k and top-p, drawn at the row's uniform number. One launch does it
// all: a row is one thread-block cluster of G blocks (G = 1 where the host launches no
// clusters), and block r of it holds the r-th slice of the row, as the sortable u32 keys of
// s = logit / temperature, in shared memory (`resident`), or reads its slice again from the
// logits at each step where the slice does not fit (`streamed`).
//
// Every filter keeps a prefix of the stable descending order, so what is kept is "every key
// above a boundary key B, and the first c keys equal to B in index order". The steps find B
// and c: the largest key (a reduction), min-p's smallest kept key (a reduction), top-k's
// k-th key (a radix select by counts), top-p's boundary (a radix select by sums of weights).
// The draw then scans, in index order, the one slice where the running sum of the kept
// weights passes the target. Weights are summed in fixed point (integers), so every sum is
// exact, whatever the order of the additions: the same uniform number gives the same token,
// whatever the launch.
//
// What keeps the passes short: many loads in flight a thread in the first pass; a select's
// first round lists the keys its later rounds can still pick, which they alone scan; a round's
// histogram summed across the row once, each block a part of the buckets; shared memory read
// as shared memory (LDS, and ld.shared::cluster for the row's other blocks); 64-bit sums added
// with two native 32-bit atomics (a 64-bit shared atomicAdd is a compare-and-swap loop).
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
// The most keys of a block's slice that a step lists for the later steps to scan instead of
// the whole slice (top-k leaves about k; a first radix digit's bucket, a few thousand).
#define SAMPLE_LIST 2048
// Logits a thread loads before it uses any, in the first pass: 32 bytes of loads in flight a
// thread, 16 KiB a block, to cover the latency of reading the row.
#define SAMPLE_LOADS(L) (32 / sizeof(L))

// s's sortable u32 key (larger s, larger key) and back. NaN is never keyed (it reads as -inf).
__device__ __forceinline__ u32 key_of_float(float s) {
    const u32 b = __float_as_uint(s);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float float_of_key(u32 k) {
    return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}
#define KEY_NEG_INF 0x007fffffu // key_of_float(-inf)

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

#include "sample/row.cuh"

// A block's slice of its row: `len` logits from `logits`, keyed in shared memory (RESIDENT)
// or keyed again from the logits at each read.
template <typename L, bool RESIDENT> struct Slice {
    const L *logits;
    u32 len;
    float temperature;
    bool greedy;
    bool scaled; // neither greedy nor at temperature 1 (where x / 1 = x: no division)

    __device__ __forceinline__ u32 key_of_logit(L logit) const {
        const float x = to_float(logit);
        float s = scaled ? x / temperature : x;
        if (s != s) s = -__int_as_float(0x7f800000); // NaN reads as -inf
        return key_of_float(s + 0.0f);                // -0.0 ties with +0.0
    }
    __device__ __forceinline__ u32 key(u32 i) const {
        if constexpr (RESIDENT) return resident_keys[i];
        else return key_of_logit(logits[i]);
    }
};

// The keys a step scans: the block's whole slice, or the first `n` of its list (sh.list_keys).
struct Scan {
    bool listed;
    u32 n;
};
template <typename L, bool RESIDENT>
__device__ __forceinline__ u32 key_at(const Slice<L, RESIDENT> &slice, Scan scan, u32 j) {
    return scan.listed ? sh.list_keys[j] : slice.key(j);
}
__device__ __forceinline__ u32 index_at(Scan scan, u32 j) { return scan.listed ? sh.list_index[j] : j; }

// Calls f(key, j) for each key j of `scan` this thread takes (j = threadIdx.x, then a block's
// stride on), loading four keys before it uses any, so that their loads overlap.
#define SAMPLE_KEYS_IN_FLIGHT 4
template <typename L, bool RESIDENT, typename F>
__device__ __forceinline__ void for_each_key(const Slice<L, RESIDENT> &slice, Scan scan, F f) {
    constexpr u32 B = SAMPLE_KEYS_IN_FLIGHT, STRIDE = SAMPLE_THREADS;
    u32 j = threadIdx.x;
    for (; j + (B - 1) * STRIDE < scan.n; j += B * STRIDE) {
        u32 k[B];
#pragma unroll
        for (u32 b = 0; b < B; ++b) k[b] = key_at(slice, scan, j + b * STRIDE);
#pragma unroll
        for (u32 b = 0; b < B; ++b) f(k[b], j + b * STRIDE);
    }
    for (; j < scan.n; j += STRIDE) f(key_at(slice, scan, j), j);
}
// The same over a thread's run of consecutive keys [first, end) (thread_run), in order.
template <typename L, bool RESIDENT, typename F>
__device__ __forceinline__ void for_each_in_run(const Slice<L, RESIDENT> &slice, Scan scan, u32 first, u32 end, F f) {
    constexpr u32 B = SAMPLE_KEYS_IN_FLIGHT;
    u32 i = first;
    for (; i + B <= end; i += B) {
        u32 k[B];
#pragma unroll
        for (u32 b = 0; b < B; ++b) k[b] = key_at(slice, scan, i + b);
#pragma unroll
        for (u32 b = 0; b < B; ++b) f(k[b], i + b);
    }
    for (; i < end; ++i) f(key_at(slice, scan, i), i);
}

// A key's weight exp(s - max), the largest 1; with max = +inf, 1 for +inf and 0 otherwise.
// Without a branch: the largest key's own exponent is 0 (+inf's too, where s - max would be
// NaN), and with max = +inf every other key's is -inf.
__device__ __forceinline__ float weight_of(u32 key, u32 max_key) {
    return expf(key == max_key ? 0.0f : float_of_key(key) - float_of_key(max_key));
}
// The weight in fixed point: weight × 2^WEIGHT_BITS, rounded (at most 2^WEIGHT_BITS).
__device__ __forceinline__ u64 fixed_weight(u32 key, u32 max_key) {
    return __float2ull_rn(weight_of(key, max_key) * float(1ull << KERNEL_SAMPLE_WEIGHT_BITS));
}
// Adds `w` to a u64 sum in shared memory with two native 32-bit atomics: the low word's add
// returns the word before it, from which its carry into the high word follows. Exact once
// every add has landed, whatever their order.
__device__ __forceinline__ void add_to_sum(u64 &sum, u64 w) {
    u32 *words = reinterpret_cast<u32 *>(&sum); // little-endian: low word first
    const u32 low = u32(w), before = atomicAdd(&words[0], low);
    const u32 high = u32(w >> 32) + (before + low < before ? 1u : 0u);
    if (high) atomicAdd(&words[1], high);
}

// The state of a radix select: the digits chosen so far (`prefix` under `mask`), the total of
// the keys above the prefix (`above`), and the target total it seeks.
struct Select {
    u32 prefix, mask;
    u64 above, target;
};

// One round of the radix select of the keys at or above `floor`: the digit at which, from the
// largest key down, the running total of each key's value (1 by counts, its fixed-point weight
// by sums) first reaches `sel.target`. Builds the round's histogram over `scan` (unless the
// caller built the first round's, `built`), then sums it across the row, each block a part of
// the buckets, and the one thread whose bucket reaches the target writes the digit into every
// block. By sums, round 0 sets the target from the total: top_p × the sum of the weights
// left, at least 1; and each round adds to this thread's `above_here` its buckets of this
// block's histogram above the digit found (keys above the final boundary: the draw's sums).
template <typename L, bool RESIDENT>
__device__ void select_round(const Slice<L, RESIDENT> &slice, Scan scan, u32 round, bool built, u32 floor,
                             bool by_weight, float top_p, u32 max_key, u32 rank, u32 G, Select &sel,
                             u64 &above_here) {
    const u32 shift = round == 0 ? 21 : round == 1 ? 10 : 0;
    const u32 digit_mask = round == 2 ? 0x3ffu : 0x7ffu;
    if (!built) {
        for (u32 b = threadIdx.x; b < SAMPLE_BUCKETS; b += SAMPLE_THREADS) {
            if (by_weight) sh.sums[b] = 0;
            else sh.counts[b] = 0;
        }
        __syncthreads();
        for_each_key(slice, scan, [&](u32 k, u32) {
            if (k < floor || (k & sel.mask) != sel.prefix) return;
            const u32 d = (k >> shift) & digit_mask;
            if (by_weight) add_to_sum(sh.sums[d], fixed_weight(k, max_key));
            else atomicAdd(&sh.counts[d], 1u);
        });
    }
    row_barrier(G); // every block's histogram is complete
    // The row's histogram, split among its blocks: block r sums across the row the r-th part
    // of the buckets from the top (2048 / G of them, `per` a thread), so that each bucket is
    // read from each block once, not by every block.
    const u32 part = SAMPLE_BUCKETS / G, per = part > SAMPLE_THREADS ? part / SAMPLE_THREADS : 1;
    u64 value[SAMPLE_BUCKETS_A_THREAD], mine = 0;
#pragma unroll
    for (u32 j = 0; j < SAMPLE_BUCKETS_A_THREAD; ++j) {
        const u32 at = threadIdx.x * per + j; // within the part, from its top
        const u32 b = SAMPLE_BUCKETS - 1 - (rank * part + at);
        u64 v = 0;
        if (j < per && at < part) {
#pragma unroll
            for (u32 g = 0; g < KERNEL_SAMPLE_MOST_BLOCKS; ++g) // unrolled: the remote loads overlap
                if (g < G) v += by_weight ? in_block(sh.sums[b], g, G) : u64(in_block(sh.counts[b], g, G));
        }
        value[j] = v;
        mine += v;
    }
    u64 part_total;
    const u64 in_part = block_exclusive_sum(mine, part_total);
    if (threadIdx.x == 0) sh.published = part_total;
    row_barrier(G); // every part's total is published, and every histogram read
    gather_row(COMBINE_SUM, sh.published, rank, G);
    __syncthreads();
    const u64 total = sh.row_all; // the parts above this block's: sh.row_lower
    if (by_weight && round == 0) { // total: the weights left
        const u64 target = u64(ceil(double(top_p) * double(total)));
        sel.target = target < 1 ? 1 : target > total ? total : target;
    }
    u64 before = sel.above + sh.row_lower + in_part;
    if (before < sel.target && before + mine >= sel.target) { // one thread of the row
        bool found = false;
#pragma unroll
        for (u32 j = 0; j < SAMPLE_BUCKETS_A_THREAD; ++j) {
            if (!found && j < per && before + value[j] >= sel.target) {
                found = true;
                const u64 digit = SAMPLE_BUCKETS - 1 - (rank * part + threadIdx.x * per + j);
                for (u32 g = 0; g < G; ++g) { // into every block of the row
                    store_in_block(sh.found[round][0], g, G, digit);
                    store_in_block(sh.found[round][1], g, G, before);
                }
            }
            before += value[j];
        }
    }
    row_barrier(G); // `found` is written in every block, and `published` is free again
    const u32 digit = u32(sh.found[round][0]);
    sel.prefix |= digit << shift;
    sel.mask |= digit_mask << shift;
    sel.above = sh.found[round][1];
    // The buckets a thread clears at the next round's start, so no other thread's clear races
    // this read.
    if (by_weight)
        for (u32 b = threadIdx.x; b < SAMPLE_BUCKETS; b += SAMPLE_THREADS)
            if (b > digit) above_here += sh.sums[b];
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

// Lists the keys of the block's slice at or above `floor`, with their indices, in index order,
// for the later steps, where they fit (SAMPLE_LIST); else the slice stays the scan. Each thread
// takes its run of consecutive keys (thread_run), so the list keeps index order.
template <typename L, bool RESIDENT> __device__ Scan list_at_or_above(const Slice<L, RESIDENT> &slice, u32 floor) {
    const ThreadRun r = thread_run(slice.len);
    const Scan whole = {false, slice.len};
    u64 mine = 0, total;
    for_each_in_run(slice, whole, r.first, r.end, [&](u32 k, u32) { mine += k >= floor; });
    u64 at = block_exclusive_sum(mine, total);
    if (total > SAMPLE_LIST) return whole; // the same for every thread of the block
    for_each_in_run(slice, whole, r.first, r.end, [&](u32 k, u32 i) {
        if (k >= floor) {
            sh.list_keys[at] = k;
            sh.list_index[at] = i;
            ++at;
        }
    });
    __syncthreads();
    return {true, u32(total)};
}

// Lists the keys of the slice at or above `floor` whose digits so far are the select's
// (`prefix` under `mask`), in no order (no indices): the candidates of a select's later
// rounds, where they fit; else the slice stays the scan.
template <typename L, bool RESIDENT>
__device__ Scan list_candidates(const Slice<L, RESIDENT> &slice, u32 floor, const Select &sel) {
    if (threadIdx.x == 0) sh.list_len = 0;
    __syncthreads();
    for_each_key(slice, Scan{false, slice.len}, [&](u32 k, u32) {
        if (k >= floor && (k & sel.mask) == sel.prefix) {
            const u32 at = atomicAdd(&sh.list_len, 1u);
            if (at < SAMPLE_LIST) sh.list_keys[at] = k;
        }
    });
    __syncthreads();
    const u32 n = sh.list_len;
    return n <= SAMPLE_LIST ? Scan{true, n} : Scan{false, slice.len};
}

// Each block's kept weight from its weight above the boundary (`above`) and its count of
// boundary keys (`ties`; the row's first `keep_ties` are kept, in index order), and the row's
// prefixes over the blocks, the first warp reading every block's pair. Ends with a row
// barrier, after which no block reads another's shared memory (a block may leave).
__device__ Draw gather_draw(u64 above, u64 ties, u64 keep_ties, u64 boundary_weight, u32 rank, u32 G) {
    if (threadIdx.x == 0) sh.block_part[0] = ties, sh.block_part[1] = above;
    row_barrier(G); // every block's pair is published
    if (threadIdx.x < WARP_SIZE) {
        const u32 lane = threadIdx.x;
        const u64 n = lane < G ? in_block(sh.block_part[0], lane, G) : 0;
        const u64 a = lane < G ? in_block(sh.block_part[1], lane, G) : 0;
        const auto inclusive_sum = [&](u64 v) { // over the row's blocks, the first lanes
#pragma unroll
            for (u32 d = 1; d < KERNEL_SAMPLE_MOST_BLOCKS; d *= 2) {
                const u64 other = __shfl_up_sync(FULL_WARP_MASK, v, d);
                if (lane >= d) v += other;
            }
            return v;
        };
        const u64 ties_through = inclusive_sum(n), ties_before = ties_through - n;
        const u64 all_ties = __shfl_sync(FULL_WARP_MASK, ties_through, KERNEL_SAMPLE_MOST_BLOCKS - 1);
        const u64 keep = min(keep_ties, all_ties);
        const u64 kept = keep > ties_before ? min(keep - ties_before, n) : 0;
        const u64 mine = a + kept * boundary_weight;
        const u64 through = inclusive_sum(mine);
        const u64 total = __shfl_sync(FULL_WARP_MASK, through, KERNEL_SAMPLE_MOST_BLOCKS - 1);
        if (lane == rank) sh.draw = {ties_before, through - mine, mine, total, keep};
    }
    row_barrier(G); // every block has read the pairs, and this block's figures are written
    return sh.draw;
}

// Row `blockIdx.x / blocks_a_row`, slice `blockIdx.x % blocks_a_row` (the block's rank in its
// cluster) of `slice_len` logits; see the file's head. Settings: a per-row array where its
// pointer is not null, else the one value of all rows (temperature 1, min-p 0, top-k 0 and
// top-p 1 are "off").
template <typename L, bool RESIDENT>
__device__ void sample_rows(const L *logits, u32 vocab, u32 blocks_a_row, u32 slice_len, const float *temperatures,
                            float temperature_all, const float *min_ps, float min_p_all, const long long *top_ks,
                            long long top_k_all, const float *top_ps, float top_p_all, const float *uniform,
                            long long *tokens) {
    const u32 G = blocks_a_row, row = blockIdx.x / G, rank = blockIdx.x % G;
    const u32 lo = min(rank * slice_len, vocab);
    const float temperature = temperatures ? temperatures[row] : temperature_all;
    Slice<L, RESIDENT> slice;
    slice.logits = logits + u64(row) * vocab + lo;
    slice.len = min(slice_len, vocab - lo);
    slice.temperature = temperature;
    slice.greedy = !(temperature > 0.0f); // not above 0, or NaN
    slice.scaled = !slice.greedy && temperature != 1.0f;
    float min_p = min_ps ? min_ps[row] : min_p_all;
    const bool min_p_on = min_p > 0.0f; // NaN is off
    min_p = fminf(min_p, 1.0f);
    const long long top_k = top_ks ? top_ks[row] : top_k_all;
    // Without min-p, top-k's first round counts every key above -inf: the first pass builds
    // that histogram as it keys the slice.
    const bool count_first_digits = top_k > 0 && !min_p_on && !slice.greedy;
    if (count_first_digits) {
        for (u32 b = threadIdx.x; b < SAMPLE_BUCKETS; b += SAMPLE_THREADS) sh.counts[b] = 0;
        __syncthreads();
    }

    // 1. The keys, and the largest; loads in batches, so that many are in flight.
    u32 largest = 0;
    u64 alive = 0; // keys above -inf
    const auto take = [&](u32 i, L logit) {
        const u32 k = slice.key_of_logit(logit);
        if constexpr (RESIDENT) resident_keys[i] = k;
        largest = max(largest, k);
        if (count_first_digits && k > KEY_NEG_INF) {
            ++alive;
            atomicAdd(&sh.counts[k >> 21], 1u);
        }
    };
    constexpr u32 LOADS = SAMPLE_LOADS(L), BATCH = SAMPLE_THREADS * LOADS;
    for (u32 base = 0; base < slice.len; base += BATCH) {
        const L *at = slice.logits + base + threadIdx.x; // the batch's loads: constant offsets
        L batch[LOADS];
#pragma unroll
        for (u32 j = 0; j < LOADS; ++j)
            if (base + j * SAMPLE_THREADS + threadIdx.x < slice.len) batch[j] = at[j * SAMPLE_THREADS];
#pragma unroll
        for (u32 j = 0; j < LOADS; ++j) {
            const u32 i = base + j * SAMPLE_THREADS + threadIdx.x;
            if (i < slice.len) take(i, batch[j]);
        }
    }
    const u32 max_key = u32(row_combine(COMBINE_MAX, largest, rank, G)); // syncs the block
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
        first = row_combine(COMBINE_MIN, first, rank, G);
        if (rank == 0 && threadIdx.x == 0) tokens[row] = (long long)first;
        return;
    }

    // 2. min-p keeps the keys of weight >= min_p: above its smallest such key. `left`: the
    // keys above -inf that it keeps. `scan`: the keys the later steps look at.
    u32 floor = KEY_NEG_INF + 1;
    u64 left = ~0ull;
    Scan scan = {false, slice.len};
    if (min_p_on) {
        // Keys with s - max below ln(min_p) - 0.01 have weights below min_p (expf errs by a
        // few ulp): only the others need their weight.
        const float cut = logf(min_p) - 0.01f, largest_s = float_of_key(max_key);
        u64 count = 0;
        u32 lowest = 0xffffffffu;
        for_each_key(slice, scan, [&](u32 k, u32) {
            if (k > KEY_NEG_INF && !(float_of_key(k) - largest_s < cut) && weight_of(k, max_key) >= min_p) {
                ++count;
                lowest = min(lowest, k);
            }
        });
        left = row_combine(COMBINE_SUM, count, rank, G);
        floor = u32(row_combine(COMBINE_MIN, lowest, rank, G));
        scan = list_at_or_above(slice, floor);
    } else if (count_first_digits) {
        left = row_combine(COMBINE_SUM, alive, rank, G);
    }
    // What is kept from here on: every key above `boundary`, and the first `keep_ties` keys
    // equal to it in index order.
    u32 boundary = floor;
    u64 keep_ties = ~0ull;

    // 3. top-k keeps the keys at or above the k-th largest left (its ties too). After the
    // first digit, the keys at or above its bucket are all that can be kept: they are listed.
    if (top_k > 0 && u64(top_k) < left) {
        Select sel = {0, 0, 0, u64(top_k)};
        u64 unused = 0;
        select_round(slice, scan, 0, count_first_digits, floor, false, 0.0f, max_key, rank, G, sel, unused);
        if (!scan.listed) scan = list_at_or_above(slice, max(floor, sel.prefix));
        select_round(slice, scan, 1, false, floor, false, 0.0f, max_key, rank, G, sel, unused);
        select_round(slice, scan, 2, false, floor, false, 0.0f, max_key, rank, G, sel, unused);
        boundary = sel.prefix;
    }

    // 4. top-p keeps the shortest prefix of the stable descending order whose weights reach p
    // times the sum of those left; p not above 0 (or NaN) keeps the first token alone. After
    // the first digit, the keys of its bucket are the candidates (listed, if the list is free).
    // Its rounds leave in `sums_above` this block's weight of the keys above the boundary, and
    // a count after them its keys equal to it in `ties_in_block`: the block's part of the draw.
    const float top_p = top_ps ? top_ps[row] : top_p_all;
    bool sums_known = false;
    u64 sums_above = 0, ties_in_block = 0;
    if (top_p != top_p || top_p < 1.0f) {
        if (!(top_p > 0.0f)) {
            boundary = max_key;
            keep_ties = 1;
        } else {
            Select sel = {0, 0, 0, 0};
            select_round(slice, scan, 0, false, boundary, true, top_p, max_key, rank, G, sel, sums_above);
            const Scan candidates = scan.listed ? scan : list_candidates(slice, boundary, sel);
            select_round(slice, candidates, 1, false, boundary, true, top_p, max_key, rank, G, sel, sums_above);
            select_round(slice, candidates, 2, false, boundary, true, top_p, max_key, rank, G, sel, sums_above);
            // The count of the boundary key, which the sums did not keep.
            for_each_key(slice, candidates, [&](u32 k, u32) { ties_in_block += k == sel.prefix; });
            // above < target <= above + ties × w: w > 0, and some ties reach the target; the
            // draw keeps at most the ties there are.
            const u64 w = fixed_weight(sel.prefix, max_key);
            boundary = sel.prefix;
            keep_ties = (sel.target - sel.above + w - 1) / w;
            sums_known = true;
        }
    }

    // 5. The draw: the kept keys in index order, the first at which the running sum of
    // weights passes u × their total. Each block's sum of kept weights (from top-p's rounds,
    // else from a scan of its keys) and the row's prefix over the blocks (gather_draw) pick
    // the one block where the running sum passes the target; only it scans its keys in runs
    // (thread_run), whose running sum a block scan starts.
    const ThreadRun r = thread_run(scan.n);
    const u64 boundary_weight = fixed_weight(boundary, max_key);
    u64 ties_here = 0, above_here = 0;
    const auto tally_runs = [&] {
        for_each_in_run(slice, scan, r.first, r.end, [&](u32 k, u32) {
            if (k > boundary) above_here += fixed_weight(k, max_key);
            else if (k == boundary) ++ties_here;
        });
    };
    if (!sums_known) { // block-uniform
        tally_runs();
        sums_above = above_here;
        ties_in_block = ties_here;
    }
    sums_above = block_combine(COMBINE_SUM, sums_above);
    ties_in_block = block_combine(COMBINE_SUM, ties_in_block);
    const Draw draw = gather_draw(sums_above, ties_in_block, keep_ties, boundary_weight, rank, G);
    float u = uniform[row];
    if (!(u >= 0.0f)) u = 0.0f;               // NaN and below 0
    u = fminf(u, __uint_as_float(0x3f7fffffu)); // at most 1 - 2^-24
    const u64 target = u64(double(u) * double(draw.total)); // below total
    if (!(draw.before <= target && target < draw.before + draw.mine)) return; // block-uniform
    // The runs' sums add up to the block's `mine` (the same fixed-point weights of the same
    // keys), or the target could fall in no thread's run and the row would get no token.
    if (sums_known) tally_runs();
    u64 unused;
    const u64 ties_before = draw.ties_before + block_exclusive_sum(ties_here, unused);
    const u64 kept_ties = ties_before >= draw.keep_ties ? 0 : min(draw.keep_ties - ties_before, ties_here);
    const u64 mine = above_here + kept_ties * boundary_weight;
    const u64 start = draw.before + block_exclusive_sum(mine, unused);
    if (start <= target && target < start + mine) {
        u64 running = start, tie = ties_before;
        for (u32 i = r.first; i < r.end; ++i) {
            const u32 k = key_at(slice, scan, i);
            bool kept = k > boundary;
            if (k == boundary) kept = tie++ < draw.keep_ties;
            if (!kept) continue;
            running += fixed_weight(k, max_key);
            if (running > target) {
                tokens[row] = (long long)(lo + index_at(scan, i));
                break;
            }
        }
    }
}

// One kernel a logit type; `resident` picks the slice's home (uniform over the launch).
#define SAMPLE_KERNEL(NAME, L)                                                                                          \
    extern "C" __global__ void __launch_bounds__(SAMPLE_THREADS)                                                       \
        NAME(const L *logits, u32 vocab, u32 blocks_a_row, u32 slice_len, u32 resident, const float *temperatures,     \
             float temperature_all, const float *min_ps, float min_p_all, const long long *top_ks,                     \
             long long top_k_all, const float *top_ps, float top_p_all, const float *uniform, long long *tokens) {     \
        if (resident)                                                                                                  \
            sample_rows<L, true>(logits, vocab, blocks_a_row, slice_len, temperatures, temperature_all, min_ps,        \
                                 min_p_all, top_ks, top_k_all, top_ps, top_p_all, uniform, tokens);                    \
        else                                                                                                           \
            sample_rows<L, false>(logits, vocab, blocks_a_row, slice_len, temperatures, temperature_all, min_ps,       \
                                  min_p_all, top_ks, top_k_all, top_ps, top_p_all, uniform, tokens);                   \
    }
SAMPLE_KERNEL(sample_rows_f32, LogitF32)
SAMPLE_KERNEL(sample_rows_f16, LogitF16)
SAMPLE_KERNEL(sample_rows_bf16, LogitBF16)
