// The spread select's four kernels' device code (topk_spread_sample, _threshold, _gather,
// _select). Relies on topk/sampled.cuh (load_samples, sample_rank, select_gathered) and the
// host's KERNEL_TOPK_SPREAD_* defines.
//
// The spread select (src/plan/topk/spread.rs `SpreadPlan`): the sampled select's three steps for rows
// that are few and long, each a launch over all rows, so that many blocks read a row:
//  1. topk_spread_sample, a block a row: the row's threshold, a word (SpreadWord: 16-bit keys
//     with their index's bits) that at least `rank` (sample_rank) of SPREAD_SAMPLES keys reach
//     (runs of 32 spread evenly over the row), into spread[row].threshold, whose count and
//     ties it zeroes. A row too long for one block's sample
//     takes sample_blocks blocks' (SPREAD_SAMPLES each, from a slice of the row), and
//     topk_spread_threshold, a block a row, reduces their lists of best words to the row's.
//  2. topk_spread_gather, rows x chunks blocks: every key of a chunk whose word beats its
//     row's threshold to the row's SPREAD_CAPACITY candidates (global memory), counted by the
//     row's count, and every key whose word equals it to as many ties, counted by its ties
//     and, a chunk at a time, chunk_ties (slots past the capacity are not written).
//  3. topk_spread_select, a block a row: the exact select over the row's candidates and ties,
//     sorted, where they fit together (select_gathered, 16 a thread); over the candidates
//     alone where they are enough; where they are not and the ties overflow (an f32 row of a
//     few distinct values; a 16-bit row that repeats one value through a slice of 8,192
//     indices), the candidates sorted and then the first ties by index
//     (put_ties_in_order); otherwise (too few, or too many better ones) the threshold filter
//     over the whole row. Its dynamic shared memory holds max(SPREAD_CAPACITY, the filter's
//     slots, slots, TOURNAMENT_SLOTS) composites (src/plan/topk/mod.rs `spread`), in which the
//     ties' placement keeps a u32 a chunk.
#pragma once

#include "topk/sampled.cuh"

#if !defined(KERNEL_TOPK_SPREAD_SAMPLES_PER_THREAD) || !defined(KERNEL_TOPK_SPREAD_CANDIDATES_PER_THREAD)
#error "the host passes KERNEL_TOPK_SPREAD_SAMPLES_PER_THREAD and _CANDIDATES_PER_THREAD (src/policy/topk.rs)"
#endif
#define SPREAD_SAMPLES_PER_THREAD u32(KERNEL_TOPK_SPREAD_SAMPLES_PER_THREAD)
#define SPREAD_SAMPLES (SPREAD_SAMPLES_PER_THREAD * THREADS)
#define SPREAD_CANDIDATES_PER_THREAD u32(KERNEL_TOPK_SPREAD_CANDIDATES_PER_THREAD)
#define SPREAD_CAPACITY (THREADS * SPREAD_CANDIDATES_PER_THREAD)

// A row's threshold, how many of its keys' words are better than it (`count`) and how many
// equal it (`ties`), each gathered apart.
struct SpreadRow {
    u32 threshold, count, ties;
};

// The word the spread select compares for a key held as `held` at `index` in its row. A 32-bit
// key's is its held word. A 16-bit key's held word leaves its low half free, and there go the
// index's bits: 0xffff minus index >> shift, so that equal keys order as their composites do,
// the earlier the better. A threshold then cuts a run of repeated values at an index (a bf16
// row of 2^24 in [-1, 1) repeats each value near 1 about 32,000 times), and about as many keys
// reach it as would if every key differed; keys tie only within 2^shift consecutive indices.
// `shift` is at least SPREAD_TILE_SHIFT, so that the keys of one of the gather's tiles share
// their index's bits (tile_bits): one OR a key. Rows of up to 2^29 keys have 2^16 tiles or
// fewer, and shift = 13.
#ifndef KERNEL_TOPK_SPREAD_TILE_SHIFT
#error "the host passes KERNEL_TOPK_SPREAD_TILE_SHIFT (src/policy/topk.rs)"
#endif
#define SPREAD_TILE_SHIFT KERNEL_TOPK_SPREAD_TILE_SHIFT
static_assert(SPREAD_TILE_SHIFT == 13, "a gather tile is 32 keys a thread of 256");
template <typename In> struct SpreadWord {
    __device__ explicit SpreadWord(u64) {}
    __device__ u32 operator()(u32 held, u64) const { return held; }
    __device__ u32 tile_bits(u64) const { return 0; }
};
template <> struct SpreadWord<u16> {
    u32 shift;
    __device__ explicit SpreadWord(u64 row_len)
        : shift(max(SPREAD_TILE_SHIFT, row_len > 0x10000 ? 48 - __clzll(row_len - 1) : 0)) {}
    __device__ u32 operator()(u32 held, u64 index) const { return held | tile_bits(index); }
    // The bits of every index of the tile (2^SPREAD_TILE_SHIFT keys) from `begin`.
    __device__ u32 tile_bits(u64 begin) const { return 0xffffu - u32(begin >> shift); }
};

// The group bests of a thread's R registers (G groups) that are better than `threshold`, to
// list[0, most) in any order, counted by *listed (which may pass `most`: those are dropped).
template <u32 G, typename T, u32 R>
__device__ __forceinline__ void list_above(const T (&x)[R], T threshold, u32 *list, u32 most, u32 *listed) {
    T best[G];
    group_bests<G>(x, best);
#pragma unroll
    for (u32 g = 0; g < G; g++)
        if (better(best[g], threshold)) {
            const u32 at = atomicAdd(listed, 1u);
            if (at < most) list[at] = best[g];
        }
}

// Step 1 over `sample_blocks` blocks a row: block b of a row samples SPREAD_SAMPLES keys of the
// b-th of sample_blocks equal slices of it and takes the word (SpreadWord) that the best
// samples of `rank` groups of a thread's registers reach (the radix select's step 1, over all
// four digits of the word), `rank` (sample_rank) counted over the whole row's sample (the
// host's). One block a row writes it as the row's threshold, zeroing its count and
// ties. Several write `rank` words each to lists[item x rank, …), their best group bests:
// those above their threshold (at most rank of them), then copies of it;
// topk_spread_threshold takes the row's threshold from those lists. (Whatever word lists hold,
// their rank-th best is reached by at least `rank` samples of the row: the lists' words that
// reach it are real samples unless it is a copy of some block's threshold, which `rank` of
// that block's samples reach.)
template <typename C, typename In>
__device__ void topk_spread_sample(const In *input, u64 row_len, u32 rows, u32 rank, u32 map, u32 sample_blocks,
                                   SpreadRow *spread, u32 *lists) {
    static_assert(THREADS == 256 && !Held<C, In>::PADDED, "keys");
    typedef typename Held<C, In>::T T; // u32: 16-bit keys in the top half
    constexpr u32 R = SPREAD_SAMPLES_PER_THREAD, ALL = Digits<T>::COUNT;
    __shared__ RadixShared s;
    __shared__ u32 listed;
    const SpreadWord<In> word(row_len);
    const u64 items = u64(rows) * sample_blocks;
    for (u64 item = blockIdx.x; item < items; item += gridDim.x) {
        const u64 row = item / sample_blocks, slice = item % sample_blocks;
        const u64 begin = row_len * slice / sample_blocks, end = row_len * (slice + 1) / sample_blocks;
        T x[R];
        load_samples<C, In>(input + row * row_len, begin, u32(end - begin), map, x, word);
        const u32 groups = groups_for(rank, SPREAD_SAMPLES, R);
        T threshold;
        switch (groups) { // block-uniform
        case 1: threshold = group_threshold<1, T, R, ALL, ALL>(x, rank, s); break;
        case 2: threshold = group_threshold<2, T, R, ALL, ALL>(x, rank, s); break;
        case 4: threshold = group_threshold<4, T, R, ALL, ALL>(x, rank, s); break;
        default: threshold = group_threshold<8, T, R, ALL, ALL>(x, rank, s); break;
        }
        if (sample_blocks == 1) { // block-uniform
            if (threadIdx.x == 0) spread[row] = SpreadRow{threshold, 0, 0};
            __syncthreads(); // s is read before the next row's select
            continue;
        }
        if (threadIdx.x == 0) listed = 0;
        __syncthreads();
        u32 *list = lists + item * rank;
        switch (groups) { // block-uniform
        case 1: list_above<1>(x, threshold, list, rank, &listed); break;
        case 2: list_above<2>(x, threshold, list, rank, &listed); break;
        case 4: list_above<4>(x, threshold, list, rank, &listed); break;
        default: list_above<8>(x, threshold, list, rank, &listed); break;
        }
        __syncthreads();
        for (u32 i = min(listed, rank) + threadIdx.x; i < rank; i += THREADS) list[i] = threshold;
        __syncthreads(); // s and listed are read before the next item's
    }
}

// Step 1's second launch where several blocks sampled a row: a block a row takes the word that
// `rank` of the row's sample_blocks x rank listed words reach (at most SPREAD_LISTED, 16 a
// thread; an exact radix select over all four digits) as the row's threshold, zeroing its
// count and ties.
#ifndef KERNEL_TOPK_SPREAD_LISTED_PER_THREAD
#error "the host passes KERNEL_TOPK_SPREAD_LISTED_PER_THREAD (src/policy/topk.rs)"
#endif
#define SPREAD_LISTED (KERNEL_TOPK_SPREAD_LISTED_PER_THREAD * THREADS)
template <typename C, typename In>
__device__ void topk_spread_threshold(u32 rows, u32 rank, u32 sample_blocks, const u32 *lists, SpreadRow *spread) {
    typedef typename Held<C, In>::T T;
    constexpr u32 R = SPREAD_LISTED / THREADS, ALL = Digits<T>::COUNT;
    __shared__ RadixShared s;
    const u32 listed = sample_blocks * rank;
    for (u32 row = blockIdx.x; row < rows; row += gridDim.x) {
        T x[R];
#pragma unroll
        for (u32 r = 0; r < R; r++) {
            const u32 i = r * THREADS + threadIdx.x;
            x[r] = i < listed ? lists[u64(row) * listed + i] : padding<T>();
        }
        const T threshold = group_threshold<R, T, R, ALL, ALL>(x, rank, s);
        if (threadIdx.x == 0) spread[row] = SpreadRow{threshold, 0, 0};
        __syncthreads(); // s is read before the next row's select
    }
}

template <typename C, typename In, u32 R>
__device__ void topk_spread_gather(const In *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len, u32 map,
                                   SpreadRow *spread, C *candidates, u32 *chunk_ties) {
    static_assert(R * THREADS == 1u << SPREAD_TILE_SHIFT, "a tile's keys share their index's bits (SpreadWord)");
    typedef typename Held<C, In>::T T;
    __shared__ u32 ties_here;
    const SpreadWord<In> word(row_len);
    const u64 items = u64(rows) * chunks;
    for (u64 item = blockIdx.x; item < items; item += gridDim.x) {
        const u64 row = item / chunks, begin = item % chunks * chunk_len;
        const u64 end = min(begin + chunk_len, row_len);
        const In *row_input = input + row * row_len;
        const T threshold = spread[row].threshold;
        C *better_ones = candidates + row * 2 * SPREAD_CAPACITY, *tied = better_ones + SPREAD_CAPACITY;
        if (threadIdx.x == 0) ties_here = 0;
        __syncthreads();
        for (u64 sub = begin; sub < end; sub += R * THREADS) { // block-uniform
            T e[R];
            u32 alive = 0;
            // map_here (keys.cuh): one copy of the loads' maps, not one a kind of key.
            const bool vectors =
                load_chunk_unpadded<C, In, R>(row_input, sub, min(sub + R * THREADS, end), map_here(map), e, alive);
            const auto index = [&](u32 r) -> u32 { return chunk_index<In, R>(sub, vectors, r); };
            const u32 bits = word.tile_bits(sub);
#pragma unroll
            for (u32 r = 0; r < R; r++) e[r] |= bits;
            const u32 above = reaching(e, alive, threshold, true);
            gather(above, index, row_input, map, &spread[row].count, better_ones, SPREAD_CAPACITY);
            const u32 tie = reaching(e, alive, threshold) & ~above;
            if (__any_sync(FULL_WARP_MASK, tie != 0)) { // ties are few but for repeated values
                gather(tie, index, row_input, map, &spread[row].ties, tied, SPREAD_CAPACITY);
                const u32 warp_ties = __reduce_add_sync(FULL_WARP_MASK, __popc(tie));
                if (threadIdx.x % WARP_SIZE == 0) atomicAdd(&ties_here, warp_ties);
            }
        }
        __syncthreads();
        if (threadIdx.x == 0) chunk_ties[item] = ties_here;
        __syncthreads(); // read before the next item's reset
    }
}

// The spread select's ties, where more keys tie with a row's threshold than its candidates
// hold and fewer than `need` are better: the first need - better ties by index are the
// result's last places, [better, need). chunk_ties (each chunk's ties) place each chunk's
// ties: a prefix sum over the chunks, a u32 a chunk in the shared tile, then a warp a chunk
// scans its keys in order (V consecutive keys a lane, a warp scan of the lanes'
// ties) and puts those before `need`. Called by the whole block.
template <typename K, typename C, typename In>
__device__ void put_ties_in_order(const In *row_input, u64 row_len, u32 chunks, u64 chunk_len, u32 map,
                                  typename Held<C, In>::T threshold, const u32 *chunk_ties, u32 better, u32 need,
                                  const Put<K, C> &put) {
    constexpr u32 V = 8;
    const SpreadWord<In> word(row_len);
    u32 *first = reinterpret_cast<u32 *>(shared_tile<C>()); // first[c]: chunk c's first place
    __syncthreads(); // the shared tile is free
    if (threadIdx.x == 0) {
        u32 sum = better;
        for (u32 c = 0; c < chunks; c++) {
            first[c] = sum;
            sum = min(sum + chunk_ties[c], need); // at most need: later chunks put nothing
        }
    }
    __syncthreads();
    const u32 lane = threadIdx.x % WARP_SIZE, warps = THREADS / WARP_SIZE;
    for (u32 c = threadIdx.x / WARP_SIZE; c < chunks && first[c] < need; c += warps) { // warp-uniform
        if (chunk_ties[c] == 0) continue;
        u32 place = first[c];
        const u64 end = min(u64(c + 1) * chunk_len, row_len);
        for (u64 at = u64(c) * chunk_len; at < end && place < need; at += V * WARP_SIZE) { // warp-uniform
            u32 mine = 0;
#pragma unroll
            for (u32 v = 0; v < V; v++) {
                const u64 i = at + lane * V + v;
                if (i < end && word(Held<C, In>::of(row_input[i], map), i) == threshold) mine |= 1u << v;
            }
            const u32 count = __popc(mine), inclusive = warp_inclusive_sum(count);
            for (u32 slot = place + inclusive - count; mine != 0; mine &= mine - 1, slot++)
                if (slot < need) put(slot, Held<C, In>::composite(threshold, u32(at + lane * V + __ffs(mine) - 1)));
            place += __shfl_sync(FULL_WARP_MASK, inclusive, WARP_SIZE - 1);
        }
    }
}

template <typename K, typename C, typename In>
__device__ void topk_spread_select(const In *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len, u32 k,
                                   u32 slots, u32 map, const SpreadRow *spread, const C *candidates,
                                   const u32 *chunk_ties, K *values, u32 *indices) {
    C *buf = shared_tile<C>();
    __shared__ RadixShared s;
    __shared__ u32 taken;
    for (u32 row = blockIdx.x; row < rows; row += gridDim.x) {
        const SpreadRow r = spread[row];
        const u32 need = u32(min(u64(k), row_len));
        const C *better_ones = candidates + u64(row) * 2 * SPREAD_CAPACITY, *tied = better_ones + SPREAD_CAPACITY;
        const In *row_input = input + u64(row) * row_len;
        // The map hidden from the compiler (map_here), here and for the ties' placing, which
        // otherwise compiles the select's key maps once a kind of key: 14,608 SASS
        // instructions (u32), not 18,720, and the block, which runs its code once, no longer
        // waits for its instructions (1.3 to 2.9 us).
        const Put<K, C> put = {values, indices, row_input, nullptr, row, row, k, map_here(map), true};
        // The ties to place in order: too many to hold beside the better ones, and needed.
        const bool in_order = r.count < need && r.count + r.ties > SPREAD_CAPACITY;
        // The candidates: better ones and ties where they fit together; else the better ones.
        const u32 held = r.count + r.ties <= SPREAD_CAPACITY ? r.count + r.ties : r.count;
        __syncthreads(); // the previous row is written
        if (threadIdx.x == 0) taken = 0;
        if (held <= SPREAD_CAPACITY)
            for (u32 i = threadIdx.x; i < held; i += THREADS)
                buf[i] = i < r.count ? better_ones[i] : tied[i - r.count];
        __syncthreads();
        if (in_order) { // block-uniform: the better ones sorted, then the first ties by index
            if (r.count > 0)
                select_gathered<SPREAD_CANDIDATES_PER_THREAD, K, C, In>(r.count, r.count, slots, true, s, &taken,
                                                                        row_input, 0, row_len, put);
            put_ties_in_order<K, C, In>(row_input, row_len, chunks, chunk_len, map_here(map), r.threshold,
                                        chunk_ties + u64(row) * chunks, r.count, need, put);
        } else {
            select_gathered<SPREAD_CANDIDATES_PER_THREAD, K, C, In>(held, need, slots, true, s, &taken, row_input, 0,
                                                                    row_len, put);
        }
    }
}
