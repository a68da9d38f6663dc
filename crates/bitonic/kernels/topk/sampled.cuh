// The sampled select (topk_sampled), and its step 3 (select_gathered), which the spread select
// shares. Relies on topk/candidates.cuh (the radix select's steps 2 and 3), topk/filter.cuh
// (where a sample misses) and the host's KERNEL_TOPK_SAMPLES_PER_THREAD and
// KERNEL_TOPK_MERGE_RUNS_MOST.
//
// The sampled select (src/plan/topk/radix.rs, the radix select's Sampled first pass): one block
// takes one chunk of a row, however long, in three steps, and the chunk's keys are read once:
//  1. A threshold from a sample: SAMPLES keys (load_samples), SAMPLES_PER_THREAD a thread. The
//     threshold is a word that `rank` of them reach (sample_rank; a radix select over their top
//     16 bits). A chunk shorter than SAMPLED_MIN_LEN takes no sample: every key is a candidate.
//  2. The candidates: every key of the chunk that reaches it, 32 a thread at a time, goes to
//     shared memory as a composite (the radix select's step 2).
//  3. The exact select among them, or the threshold filter over the chunk where they are too
//     few or too many (select_gathered): the sample decides only the time, never the result.
// The dynamic shared memory holds max(CAPACITY, next_pow2(k + THREADS x VEC) (the filter's
// slots), slots, TOURNAMENT_SLOTS) composites (src/plan/topk/mod.rs `sampled_held`).
#pragma once

#include "topk/candidates.cuh"
#include "topk/filter.cuh"

#if !defined(KERNEL_TOPK_SAMPLES_PER_THREAD) || !defined(KERNEL_TOPK_MERGE_RUNS_MOST)
#error "the host passes KERNEL_TOPK_SAMPLES_PER_THREAD and _MERGE_RUNS_MOST (src/policy/topk.rs)"
#endif
#define SAMPLES_PER_THREAD u32(KERNEL_TOPK_SAMPLES_PER_THREAD)
#define SAMPLES (SAMPLES_PER_THREAD * THREADS)
#define SAMPLED_MIN_LEN (2 * SAMPLES)
#define MERGE_RUNS_MOST KERNEL_TOPK_MERGE_RUNS_MOST

// How many of `samples` keys spread evenly over `len` keys the threshold of `need` of them is
// reached by: the sample's share of need, plus four standard deviations of it, so that a
// stretch of keys in no particular order holds at least `need` keys that reach it but for about
// one in 30,000, and about need (1 + 4 / sqrt(rank)) do (src/plan/topk/spread.rs `sample_rank`).
__device__ __forceinline__ u32 sample_rank(u32 need, u32 samples, u32 len) {
    const u32 expected = u32((u64(need) * samples + len - 1) / len);
    return min(samples, expected + u32(4.0f * sqrtf(float(expected))) + 1);
}

// A held word as it is, whatever its index (load_samples' default `word`).
struct AsHeld {
    template <typename T> __device__ T operator()(T held, u64) const { return held; }
};

// Where sample i of this thread lies among N x THREADS samples of the `len` keys of a row from
// `begin` (len >= 2 x N x THREADS, so that the runs do not overlap): runs of 32 consecutive
// keys spread evenly over them, register i of thread t holding key t % 32 of run i x warps +
// t / 32, so that a warp's load reads one run.
template <u32 N> __device__ __forceinline__ u64 sample_index(u64 begin, u32 len, u32 i) {
    const u32 t = threadIdx.x, warps = THREADS / WARP_SIZE, runs = N * THREADS / WARP_SIZE;
    const u64 run = i * warps + t / WARP_SIZE;
    return begin + (len - WARP_SIZE) * run / (runs - 1) + t % WARP_SIZE;
}

// The samples' keys as words: word(held word, index in the row).
template <typename C, typename In, u32 N, typename Word, typename Order>
__device__ __forceinline__ void map_samples(const In (&keys)[N], u64 begin, u32 len, u32 map,
                                            typename Held<C, In>::T (&x)[N], const Word &word, Order order) {
#pragma unroll
    for (u32 i = 0; i < N; i++) x[i] = word(Held<C, In>::of(keys[i], map, order), sample_index<N>(begin, len, i));
}

// N sample keys a thread of the `len` keys of a row from `begin` (sample_index), as words.
// Every key is loaded before any is mapped, and the map comes in two copies, with and without
// numeric order's work (keys.cuh KnownOrder), picked once. (Mapped as they came, the keys'
// loads were issued apart, and the spread select's sample took up to 20% longer:
// docs/notes/plan-layer.md.)
template <typename C, typename In, u32 N, typename Word = AsHeld>
__device__ __forceinline__ void load_samples(const In *row_input, u64 begin, u32 len, u32 map,
                                             typename Held<C, In>::T (&x)[N], const Word &word = Word()) {
    In keys[N];
#pragma unroll
    for (u32 i = 0; i < N; i++) keys[i] = row_input[sample_index<N>(begin, len, i)];
    if (map & MAP_NUMERIC) map_samples<C, In, N>(keys, begin, len, map, x, word, KnownOrder<true>());
    else map_samples<C, In, N>(keys, begin, len, map, x, word, KnownOrder<false>());
}

// The slots of the filter that takes over a chunk whose sample missed: k and a tile.
template <typename In> __device__ __forceinline__ u32 fallback_slots(u32 k) {
    u32 slots = 1;
    while (slots < k + THREADS * Vector<In>::N) slots <<= 1;
    return slots;
}

// Step 3 of the sampled and the spread select, once the candidates, buf[0, gathered) of the
// shared tile, are in: when at least `need` (= min(k, end - begin)) keys were gathered and they
// fit (THREADS x PER_THREAD), the exact select of the best `need` among them, to `put` sorted where
// `sorted` (placed by their ranks, a tournament, or a radix select and a bitonic sort of
// `slots` composites), else unordered to the item's partials (for a pass that selects again).
// Otherwise (a threshold that too few keys reached, or too many: ties, a sorted run) the threshold filter
// takes the elements [begin, end) of the row again, and its flushes hold any keys. So a
// threshold decides only the time, never the result. Called by the whole block.
template <u32 PER_THREAD, typename K, typename C, typename In>
__device__ __forceinline__ void select_gathered(u32 gathered, u32 need, u32 slots, bool sorted, RadixShared &s,
                                                u32 *taken, const In *row_input, u64 begin, u64 end,
                                                const Put<K, C> &put) {
    C *buf = shared_tile<C>();
    if (gathered < need || gathered > THREADS * PER_THREAD) { // block-uniform
        filter_chunk(row_input, begin, end, fallback_slots<In>(put.k), put); // padding past the chunk's end
        return;
    }
    if (select_few(buf, gathered, need, put)) return; // placed by their ranks or a tournament
    C *out = sorted ? buf : put.partials + put.item * put.k;
    select_candidates<PER_THREAD, SKIPS_ALIKE_INDEX_DIGITS>(buf, gathered, need, s, taken, out, put.k);
    if (sorted) sort_and_put(buf, need, slots, need, put);
}

template <typename K, typename C, typename In, u32 R>
__device__ void topk_sampled(const In *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len, u32 k,
                             u32 slots, u32 map, C *partials, K *values, u32 *indices, const K *keys,
                             u64 keys_row_len) {
    static_assert(R <= 32 && THREADS == 256 && !Held<C, In>::PADDED, "keys, R a thread");
    typedef typename Held<C, In>::T T;
    const u32 CAPACITY = THREADS * CANDIDATES_PER_THREAD;
    C *buf = shared_tile<C>();
    __shared__ RadixShared s;
    __shared__ u32 candidates, taken;
    const u32 t = threadIdx.x;
    const u64 items = u64(rows) * chunks;
    for (u64 item = blockIdx.x; item < items; item += gridDim.x) {
        const u64 row = item / chunks, chunk = item % chunks;
        const u64 begin = chunk * chunk_len;
        const u64 end = min(begin + chunk_len, row_len);
        const u32 len = u32(end - begin);
        const In *row_input = input + row * row_len;
        const bool last = chunks == 1;
        const u32 need = min(k, len);
        __syncthreads(); // the previous item is written
        if (t == 0) candidates = 0, taken = 0;

        // 1. The threshold: a word `rank` of the samples reach.
        T threshold = padding<T>();
        if (len >= SAMPLED_MIN_LEN) { // block-uniform
            T x[SAMPLES_PER_THREAD];
            load_samples<C, In>(row_input, begin, len, map, x);
            const u32 rank = sample_rank(need, SAMPLES, len);
            const auto sample = [&](u32 i) { return x[i]; };
            const u32 all = SAMPLES_PER_THREAD == 32 ? ~0u : (1u << SAMPLES_PER_THREAD) - 1;
            // The top 16 bits: a 16-bit key's whole word, an f32's sign, exponent and 7 bits.
            radix_rounds<T, SAMPLES_PER_THREAD, 2, false, 2>(sample, all, rank, s, threshold);
        }
        __syncthreads(); // the counters are reset

        // 2. The candidates, R keys a thread at a time.
        for (u64 sub = begin; sub < end; sub += R * THREADS) { // block-uniform
            const u64 sub_end = min(sub + R * THREADS, end);
            T e[R];
            u32 alive = 0;
            const bool vectors = load_chunk<C, In, R>(row_input, sub, sub_end, map, e, alive);
            const auto index = [&](u32 r) -> u32 { return chunk_index<In, R>(sub, vectors, r); };
            gather(reaching(e, alive, threshold), index, row_input, map, &candidates, buf, CAPACITY);
        }
        __syncthreads();
        const u32 gathered = candidates;

        // 3. The exact select, sorted (but for a pass that selects again); or the filter.
        const Put<K, C> put = {values, indices, keys + row * keys_row_len, partials, row, item, k, map, last};
        const bool sorted = last || chunks <= MERGE_RUNS_MOST; // the next pass merges the runs
        select_gathered<CANDIDATES_PER_THREAD, K, C, In>(gathered, need, slots, sorted, s, &taken, row_input, begin,
                                                         end, put);
        if (!last)
            for (u32 i = need + t; i < k; i += THREADS) partials[item * k + i] = padding<C>();
    }
}
