// The radix select's kernels (topk_radix; its streamed segments, STREAM) and the merge of a
// first pass's sorted runs (topk_merge). Relies on topk/candidates.cuh for the steps, and
// through it on topk/radix_rounds.cuh and topk/tournament.cuh.
//
// The radix select (src/plan/topk/radix.rs, Strategy::TopkRadix). One block holds one chunk of a row
// in registers, R elements a thread. What a register *holds* is a key's sortable word (its
// index follows from the register and the thread, and its composite is made only when needed)
// or, in a reduction pass, the composite the element already is. Three steps select the
// chunk's k best:
//  1. A threshold, when k is at most an eighth of the chunk's elements. The registers of each
//     thread are cut into G groups (G chosen by groups_for: about twice as many groups as the
//     k wanted, up to MAX_GROUPS), and the groups' best values give a value T that k of them
//     reach: with one group a thread, by a tournament of the warps' sorted lists; with more,
//     by a radix select over them. If T is above padding, each of those groups has an element
//     that reaches it, so at least k elements do; for keys in no particular order, only a
//     little more than k. If it is padding, every element reaches it.
//  2. The candidates: every element that reaches T goes, as a composite, to shared memory (as
//     many as it holds: CAPACITY).
//  3. The exact select among the candidates. Up to RANK_MAX of them, each one's rank (how many
//     beat it) is its place in the sorted output. Up to two a thread, for k up to
//     TOURNAMENT_MOST, a tournament (block_best) leaves the best sorted. More are selected by a
//     radix select over their composites, and the row's final chunk sorts its k best with a
//     bitonic network. Without a threshold, or with candidates past the shared memory (ties:
//     keys with few distinct values), the same runs over all the elements held (a tournament
//     at 4 a thread, else the radix select). The tournaments of step 3 run over u64
//     composites only (LARGE_TOURNAMENTS); 16-byte ones take the radix select.
// Composites are unique, so a radix select over them keeps exactly k; over words it may end
// on a bin of equal words, which a threshold does not mind.
#pragma once

#include "topk/candidates.cuh"

// The best k of chunk `chunk` of every row, as topk_filter, by the radix select above, R
// elements a thread. A row's final chunk is sorted (by the candidates' ranks, a tournament, or a
// bitonic network over `slots` = next_pow2(k) composites); partial results go out unsorted when
// a radix select chose them (a next pass that selects again needs no order; topk_merge sorts
// such a run itself). The dynamic shared memory
// holds max(slots, THREADS x min(R, CANDIDATES_PER_THREAD), TOURNAMENT_SLOTS) composites.
//
// STREAM (keys, R = 32, k <= R x THREADS / 8): a chunk is a *segment* of several whole blocks
// of registers (only a row's last shorter), which the block takes one after the other against
// one running threshold. The first gets its threshold as above (steps 1 and 2); each later one
// only appends the elements that beat it. When they would overflow the shared memory, the
// block first keeps the best k of the candidates it has (keep_best; the threshold rises to a
// word those k all reach), then, if still too many, takes the threshold of this block of
// registers alone, and, failing that (ties), takes the block in slices of four registers a
// thread, keeping the best k after each; a first block whose candidates overflow goes to the
// slices at once. Step 3 then runs once a segment, over a few k candidates for keys in no
// particular order, and its output is sorted (a merge pass may take it).
template <typename K, typename C, typename In, u32 R, bool STREAM = false>
__device__ void topk_radix(const In *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len,
                           u32 k, u32 slots, u32 map, C *partials, K *values, u32 *indices, const K *keys,
                           u64 keys_row_len) {
    static_assert(R <= 32, "32-bit masks of the registers a thread holds");
    static_assert(THREADS == 256, "one bin of a digit a thread");
    static_assert(!STREAM || (R == 32 && !Held<C, In>::PADDED), "segments of keys, 32 a thread");
    typedef typename Held<C, In>::T T;
    const u32 PER_THREAD = R < CANDIDATES_PER_THREAD ? R : CANDIDATES_PER_THREAD;
    const u32 CAPACITY = THREADS * PER_THREAD;
    // A segment keeps up to k <= R x THREADS / 8 candidates beside a slice of 4 a thread.
    static_assert(!STREAM || CAPACITY >= R * THREADS / 8 + 4 * THREADS, "room for the kept and a slice");
    // Tournaments of up to TOURNAMENT_MOST, for k up to 256, over u64 composites; 16-byte
    // composites take the radix selects (their networks would triple the module's compile time).
    const bool LARGE_TOURNAMENTS = sizeof(C) == 8;
    // The selects over composites skip the index digits all candidates have alike (16-bit
    // keys' parts only: SKIPS_ALIKE_INDEX_DIGITS).
    constexpr bool SKIP_ALIKE = SKIPS_ALIKE_INDEX_DIGITS;
    C *buf = shared_tile<C>();
    __shared__ RadixShared s;
    __shared__ u32 in_play, taken, candidates;
    const u32 t = threadIdx.x;
    const u64 items = u64(rows) * chunks;
    for (u64 item = blockIdx.x; item < items; item += gridDim.x) {
        const u64 row = item / chunks, chunk = item % chunks;
        const u64 begin = chunk * chunk_len;
        const u64 segment_end = min(begin + chunk_len, row_len);
        // A segment's first block of registers (STREAM); else the chunk.
        const u64 end = STREAM ? min(begin + R * THREADS, segment_end) : segment_end;
        const In *row_input = input + row * row_len;
        const bool last = chunks == 1;
        __syncthreads(); // the previous item is written
        if (t == 0) in_play = 0, taken = 0, candidates = 0;
        T e[R];
        u32 alive = 0;
        const u32 len = u32(end - begin);
        const bool vectors = load_chunk<C, In, R>(row_input, begin, end, map, e, alive);
        const auto index = [&](u32 r) -> u32 { return chunk_index<In, R>(begin, vectors, r); };
        const auto composite_of = [&](u32 r) -> C { return Held<C, In>::composite(e[r], index(r)); };
#pragma unroll
        for (u32 r = 0; r < R; r++)
            if (!Held<C, In>::real(e[r])) alive &= ~(1u << r); // a reduction pass's padding
        __syncthreads(); // the counters are reset
        u32 chunk_in_play = len; // every key is an element; a reduction pass counts its own
        if constexpr (Held<C, In>::PADDED) {
            const u32 warp_in_play = __reduce_add_sync(FULL_WARP_MASK, __popc(alive));
            if (t % WARP_SIZE == 0) atomicAdd(&in_play, warp_in_play);
            __syncthreads();
            chunk_in_play = in_play;
        }
        const u32 need = min(k, chunk_in_play);

        // Steps 1 and 2 pay when k is a small part of the chunk; else the radix select of step
        // 3 runs over every element held.
        u32 gathered = ~0u;
        T threshold = padding<T>();
        if (8 * need <= chunk_in_play) { // block-uniform
            // 1. The threshold.
            switch (groups_for(need, chunk_in_play, R)) {
            case 1: {
                T *lists = reinterpret_cast<T *>(buf);
                if (need == 0) threshold = padding<T>();
                else if (need <= WARP_SIZE) threshold = tournament_threshold<1>(e, need, lists);
                else if (need <= 2 * WARP_SIZE) threshold = tournament_threshold<2>(e, need, lists);
                else threshold = tournament_threshold<4>(e, need, lists); // groups_for: need <= THREADS / 2
                break;
            }
            case 2: threshold = group_threshold<2>(e, need, s); break;
            case 4: threshold = group_threshold<4>(e, need, s); break;
            default: if constexpr (R >= 8) threshold = group_threshold<8>(e, need, s); break;
            }
            // 2. The candidates: the elements that reach it.
            gather(reaching(e, alive, threshold), index, row_input, map, &candidates, buf, CAPACITY);
            __syncthreads();
            gathered = candidates;
        }
        if constexpr (STREAM) {
            // Keeps the best `need` of the `count` candidates in buf[0, need) and raises the
            // threshold to a word they all reach. Called by the whole block once every thread
            // has read the count; ends with a barrier.
            const auto keep_best = [&](u32 count) {
                __syncthreads(); // the count was read
                if (t == 0) candidates = 0;
                const C kept = select_candidates<PER_THREAD, false>(buf, count, need, s, &candidates, buf, need);
                const T word = Held<C, In>::of_word(word_of(kept));
                if (better(word, threshold)) threshold = word;
                __syncthreads();
            };
            // Takes this block of registers in slices of 4 a thread (at most 1,024 elements,
            // which fit beside the `need` <= 1,024 kept), keeping the best `need` after each:
            // when ties crowd a threshold. Called by the whole block.
            const auto take_in_slices = [&](u64 from, bool from_vectors, u32 kept) {
                const auto slice_index = [&](u32 r) -> u32 { return chunk_index<In, R>(from, from_vectors, r); };
                __syncthreads(); // the count was read
                if (t == 0) candidates = kept;
#pragma unroll 1
                for (u32 g = 0; g < R / 4; g++) {
                    __syncthreads(); // the count is set
                    const u32 slice = alive & (0xfu << (4 * g));
                    gather(reaching(e, slice, threshold, false), slice_index, row_input, map, &candidates, buf,
                           CAPACITY);
                    __syncthreads();
                    gathered = candidates;
                    if (gathered > need) { // block-uniform
                        keep_best(gathered);
                        gathered = need;
                    }
                }
            };
            if (gathered != ~0u && gathered > CAPACITY) take_in_slices(begin, vectors, 0);
            // 2b. The segment's later blocks of registers against the running threshold: an
            // element of a later block that only ties with it loses to the `need` earlier
            // elements that reach it (equal words go to the smaller index), so these must beat
            // it. When they overflow the candidates, the block keeps the best `need` of the
            // candidates (raising the threshold to a word those all reach), then takes this
            // block's own threshold (which `need` of its elements reach: it holds more than
            // CAPACITY - need >= need, having overflowed the room beside at most `need` kept; its
            // ties count), then takes it in slices.
            for (u64 sub = end; sub < segment_end; sub += R * THREADS) { // block-uniform
                const u64 sub_end = min(sub + R * THREADS, segment_end);
                const bool sub_vectors = load_chunk<C, In, R>(row_input, sub, sub_end, map, e, alive);
                const auto sub_index = [&](u32 r) -> u32 { return chunk_index<In, R>(sub, sub_vectors, r); };
                u32 before = gathered;
                bool strict = true, own = false;
                for (;;) {
                    __syncthreads(); // every thread has read the count
                    gather(reaching(e, alive, threshold, strict), sub_index, row_input, map, &candidates, buf,
                           CAPACITY);
                    __syncthreads();
                    gathered = candidates;
                    if (gathered <= CAPACITY) break;
                    gathered = before; // the slots past it are taken again
                    if (strict && before > need) {
                        keep_best(before);
                        gathered = before = need;
                    } else if (!own) {
                        __syncthreads(); // the count was read
                        if (t == 0) candidates = before;
                        const T own_threshold = group_threshold<8>(e, need, s);
                        if (better(own_threshold, threshold)) threshold = own_threshold;
                        strict = false, own = true;
                    } else {
                        take_in_slices(sub, sub_vectors, before);
                        break;
                    }
                }
            }
        }

        // 3. The exact select. put(i, c): c is the i-th best of the row (last) or of the chunk.
        const Put<K, C> put = {values, indices, keys + row * keys_row_len, partials, row, item, k, map, last};
        if (select_few(buf, gathered, need, put)) {
            // Placed by their ranks or a tournament.
        } else if (LARGE_TOURNAMENTS && R == 4 && need <= TOURNAMENT_MOST && gathered == ~0u) {
            // No threshold, and few elements a thread: the tournament over all of them.
            if constexpr (LARGE_TOURNAMENTS && R == 4) {
                C x[R];
#pragma unroll
                for (u32 r = 0; r < R; r++) x[r] = alive >> r & 1 ? composite_of(r) : padding<C>();
                select_by_tournament(x, need, buf, put);
            }
        } else {
            // A radix select, then for a row's final chunk a bitonic sort of the k best.
            const bool sorted = last || STREAM; // a segment's run may be merged
            C *out = sorted ? buf : partials + item * k;
            if (gathered <= CAPACITY) {
                select_candidates<PER_THREAD, SKIP_ALIKE>(buf, gathered, need, s, &taken, out, k);
            } else {
                C unused;
                // Over every key held, the keys kernels skip no index digits: the check cost them
                // spills (80 registers).
                const u32 won = radix_rounds<C, R, Digits<C>::COUNT, SKIP_ALIKE && Held<C, In>::PADDED>(
                    composite_of, alive, need, s, unused);
                append<R>(composite_of, won, &taken, out, k);
            }
            if (sorted) sort_and_put(buf, need, slots, k, put);
        }
        if (!last)
            for (u32 i = need + t; i < k; i += THREADS) partials[item * k + i] = padding<C>();
    }
}

// The pass after the first of a radix select whose chunks' results are mostly sorted (by
// their ranks or a tournament): rows of row_len partial results, runs of k composites best
// first, cut into chunks of chunk_len (whole runs; a row's last chunk may have fewer). A block
// writes the k best of a chunk, sorted, as the radix select would: to values and indices for a
// row's final chunk, else to partials. An element's place among the chunk's runs is its place
// in its own run plus, in each other run, the number of elements before it: better ones, or
// equal ones of an earlier run (equal composites are padding, all zero). Each count is a binary
// search in shared memory, skipped once the element is out of the first k. The runs lie in
// shared memory `slots` = next_pow2(k) composites apart, so that a run out of order (a radix
// select's: on ties, or a row's short last chunk) is sorted there first.
template <typename K, typename C>
__device__ void topk_merge(const C *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len, u32 k, u32 slots,
                           u32 map, C *partials, K *values, u32 *indices, const K *keys,
                           u64 keys_row_len) {
    C *runs = shared_tile<C>(); // chunk_len / k runs of `slots`
    const u32 t = threadIdx.x;
    const u64 items = u64(rows) * chunks;
    for (u64 item = blockIdx.x; item < items; item += gridDim.x) {
        const u64 row = item / chunks, chunk = item % chunks;
        const u64 begin = chunk * chunk_len;
        const u32 count = u32(min(begin + chunk_len, row_len) - begin) / k;
        const C *in = input + row * row_len + begin;
        const Put<K, C> put = {values, indices, keys + row * keys_row_len, partials, row, item, k, map, chunks == 1};
        __syncthreads(); // the previous item's runs are read
        for (u32 i = t; i < count * slots; i += THREADS) {
            const u32 at = i % slots;
            runs[i] = at < k ? in[i / slots * k + at] : padding<C>();
        }
        __syncthreads();
        for (u32 r = 0; r < count; r++) { // block-uniform
            bool unsorted = false;
            for (u32 at = t + 1; at < k; at += THREADS) unsorted |= better(runs[r * slots + at], runs[r * slots + at - 1]);
            if (__syncthreads_or(unsorted)) sort_best_first(runs + r * slots, slots);
        }
        __syncthreads();
        for (u32 i = t; i < count * k; i += THREADS) {
            const u32 own = i / k;
            const C c = runs[own * slots + i % k];
            u32 place = i % k;
            for (u32 other = 0; other < count && place < k; other++) {
                if (other == own) continue;
                const C *run = runs + other * slots;
                u32 before = 0, after = k; // the count lies in [before, after]
                while (before < after) {
                    const u32 mid = (before + after) / 2;
                    const bool ahead = other < own ? !better(c, run[mid]) : better(run[mid], c);
                    if (ahead) before = mid + 1;
                    else after = mid;
                }
                place += before;
            }
            if (place < k) put(place, c);
        }
    }
}
