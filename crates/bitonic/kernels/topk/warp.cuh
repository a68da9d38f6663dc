// The warp sort of short rows (topk_warp_sort): one warp a row of up to 1,024 16- or 32-bit
// keys, held as composites in registers, sorted whole or after a warp filter. Relies on
// topk/common.cuh, topk/sorts.cuh (warp_sort_best_first) and the host's
// KERNEL_TOPK_WARP_FILTER_MOST.
#pragma once

#include "topk/sorts.cuh"

// The composites of the warp sort: u64 for 32-bit keys, as everywhere; for 16-bit keys u32,
// the word in the top half and the complemented index below (rows of at most 2^16 keys; real
// ones are never 0, the padding), which halves the network's compares and shuffles.
template <typename In> struct WarpComposite {
    typedef u64 C;
    template <typename Order> __device__ static C of(In key, u32 index, u32 map, Order order) {
        return candidate<C, In>(key, index, map, order);
    }
    __device__ static u32 index(C c) { return index_of(c); }
    __device__ static In word(C c) { return In(word_of(c)); }
};
template <> struct WarpComposite<u16> {
    typedef u32 C;
    template <typename Order> __device__ static C of(u16 key, u32 index, u32 map, Order order) {
        return u32(to_sortable(key, map, order)) << 16 | (~index & 0xffffu);
    }
    __device__ static u32 index(C c) { return ~c & 0xffffu; }
    __device__ static u16 word(C c) { return u16(c >> 16); }
};

// warp_put's stores of row `row`'s first k results from the staged composites, with the index
// width I (u32, or u64 where the map has MAP_INDEX64) and whether a word may stand for several
// keys (TIED: a tied map, whose shared words' keys are read back from the row: SortableMap::key_of)
// known here, so that the loop is a few instructions a result and unrolls. (One loop that
// chose both per result took about five times the instructions, and the whole-row sort of
// 16,384 x 1,024 keys at k = 1,024 ran 4-6% slower than the base: docs/notes/plan-layer.md.)
template <typename W, u32 P, typename I, bool TIED, typename K, typename In>
__device__ __forceinline__ void warp_put_stores(const typename W::C *staged, const In *row_input, const SortableMap<In> &m,
                                                u32 k, K *row_values, I *row_indices) {
    for (u32 i = threadIdx.x % WARP_SIZE; i < k; i += WARP_SIZE) {
        const typename W::C c = staged[i + i / P];
        const u32 index = W::index(c);
        row_values[i] = TIED ? m.key_of(W::word(c), row_input, index) : m.from(W::word(c));
        row_indices[i] = index;
    }
}

// Writes the first k of a warp's 32 x P composites, sorted best first in the lane-major layout,
// as row `row`'s values (the keys they name, bit for bit: SortableMap::key_of) and indices (u64 where the
// map has MAP_INDEX64), through the warp's `WARP_SIZE x (P + 1)` composites of shared memory, so
// that the stores are coalesced: slot i sits at i + i / P (a gap after each lane's P), so that
// the lanes' writes of one register meet in no bank, nor their reads of consecutive slots at
// P = 32 (at 2 and 8, two at most).
template <typename K, typename In, u32 P>
__device__ __forceinline__ void warp_put(const typename WarpComposite<In>::C (&x)[P], typename WarpComposite<In>::C *staged,
                                         const In *row_input, u64 row, u32 k, u32 map, K *values,
                                         u32 *indices) {
    typedef WarpComposite<In> W;
    const u32 lane = threadIdx.x % WARP_SIZE;
#pragma unroll
    for (u32 p = 0; p < P; p++) staged[lane * (P + 1) + p] = x[p];
    __syncwarp();
    const SortableMap<In> m(map);
    K *row_values = values + row * k;
    u64 *wide = reinterpret_cast<u64 *>(indices) + row * k;
    u32 *narrow = indices + row * k;
    // Warp-uniform choices, each of whose four loops is compiled on its own.
    if (m.ties()) {
        if (map & MAP_INDEX64) warp_put_stores<W, P, u64, true>(staged, row_input, m, k, row_values, wide);
        else warp_put_stores<W, P, u32, true>(staged, row_input, m, k, row_values, narrow);
    } else {
        if (map & MAP_INDEX64) warp_put_stores<W, P, u64, false>(staged, row_input, m, k, row_values, wide);
        else warp_put_stores<W, P, u32, false>(staged, row_input, m, k, row_values, narrow);
    }
    __syncwarp(); // read before the warp's next writes
}

// The best values of G groups a lane (group g: the registers r with r % G == g, so that a short
// row's few registers still fill every group) of the warp's composites, sorted best first into
// staged[0, 32 G): the warp filter's threshold is the k-th of them.
template <u32 G, u32 P, typename C> __device__ __forceinline__ void warp_group_bests(const C (&x)[P], C *staged) {
    static_assert(P % G == 0, "G groups of whole registers");
    const u32 lane = threadIdx.x % WARP_SIZE;
    C best[G];
#pragma unroll
    for (u32 g = 0; g < G; g++) best[g] = x[g];
#pragma unroll
    for (u32 r = G; r < P; r++)
        if (better(x[r], best[r % G])) best[r % G] = x[r];
    warp_sort_best_first<G, true>(best);
#pragma unroll
    for (u32 g = 0; g < G; g++) staged[lane * G + g] = best[g];
    __syncwarp();
}

// The warp filter's candidates, gathered in `staged` (the `total` composites that reach the
// threshold, total <= 32 x Q), sorted best first in Q registers a lane, and their first k put.
template <u32 Q, typename K, typename In>
__device__ __forceinline__ void warp_sort_candidates(typename WarpComposite<In>::C *staged, u32 total,
                                                     const In *row_input, u64 row, u32 k, u32 map, K *values,
                                                     u32 *indices) {
    typedef typename WarpComposite<In>::C C;
    const u32 lane = threadIdx.x % WARP_SIZE;
    C y[Q];
#pragma unroll
    for (u32 q = 0; q < Q; q++) y[q] = q * WARP_SIZE + lane < total ? staged[q * WARP_SIZE + lane] : padding<C>();
    __syncwarp(); // read before warp_put writes
    warp_sort_best_first<Q, true>(y);
    warp_put<K, In, Q>(y, staged, row_input, row, k, map, values, indices);
}

// The most candidates the warp filter sorts (16 a lane); past them it sorts the whole row.
#ifndef KERNEL_TOPK_WARP_FILTER_MOST
#error "the host passes KERNEL_TOPK_WARP_FILTER_MOST (src/policy/topk.rs)"
#endif
#define WARP_FILTER_MOST u32(KERNEL_TOPK_WARP_FILTER_MOST)
static_assert(WARP_FILTER_MOST == 16 * WARP_SIZE, "the warp filter keeps 16 composites a lane");

// What a warp does before it sorts a row of up to 1,024 keys (topk_warp_sort's FILTER): sort
// it whole, or only the keys that reach a threshold taken from the groups' bests (k up to 128:
// 8 groups a lane give 256 bests, about 2 k, which leave about 1.2 k to 2 k candidates), or
// from a search of the composites' top bits (a larger k, up to WARP_FILTER_MOST). Each is a
// kernel of its own (the host picks it by k), so that each compiles with only its registers.
enum WarpFilter { WHOLE_ROW, GROUP_BESTS, TOP_BITS };

// The top 32 bits of a warp composite: the word of a 32-bit key (u64), or the whole composite
// of a 16-bit key (u32: word and index, unique in a row).
__device__ __forceinline__ u32 top_bits(u64 c) { return u32(c >> 32); }
__device__ __forceinline__ u32 top_bits(u32 c) { return c; }

// A threshold on the composites' top bits that at least k of the warp's 32 x P composites
// reach (1 <= k <= 32 x P): the u32 T, chosen a bit at a time from the top, that the most
// reach while at least k do, stopping early once no more than `enough` reach it. A round is a
// compare and an add a register and one warp reduction. Padding's top bits are 0, and so are a
// real 32-bit key's whose sortable word is 0: only T = 0 counts them, and every slot reaches
// that.
template <u32 P, typename C>
__device__ __forceinline__ u32 warp_search_threshold(const C (&x)[P], u32 k, u32 enough) {
    u32 threshold = 0;
#pragma unroll 1
    for (u32 bit = 32; bit-- > 0;) {
        const u32 trial = threshold | 1u << bit;
        u32 mine = 0;
#pragma unroll
        for (u32 p = 0; p < P; p++) mine += top_bits(x[p]) >= trial;
        const u32 count = __reduce_add_sync(FULL_WARP_MASK, mine);
        if (count >= k) { // warp-uniform
            threshold = trial;
            if (count <= enough) break;
        }
    }
    return threshold;
}

// The warp filter's candidates, the composites that `reaches` (at most WARP_FILTER_MOST of
// them), gathered in `staged` in the lanes' order, sorted best first in 2, 8 or 16 registers a
// lane, and their first k put. Returns false, having put nothing, where more reach it.
template <typename K, typename In, u32 P, typename Reaches>
__device__ __forceinline__ bool warp_sort_reaching(const typename WarpComposite<In>::C (&x)[P],
                                                   typename WarpComposite<In>::C *staged, const Reaches &reaches,
                                                   const In *row_input, u64 row, u32 k, u32 map, K *values,
                                                   u32 *indices) {
    u32 mine = 0;
#pragma unroll
    for (u32 p = 0; p < P; p++) mine += reaches(x[p]);
    const u32 below = warp_inclusive_sum(mine);
    const u32 total = __shfl_sync(FULL_WARP_MASK, below, WARP_SIZE - 1);
    if (total > WARP_FILTER_MOST) return false; // warp-uniform
    u32 at = below - mine;
#pragma unroll
    for (u32 p = 0; p < P; p++)
        if (reaches(x[p])) staged[at++] = x[p];
    __syncwarp();
    if (total <= 2 * WARP_SIZE) warp_sort_candidates<2, K, In>(staged, total, row_input, row, k, map, values, indices);
    else if (total <= 8 * WARP_SIZE) warp_sort_candidates<8, K, In>(staged, total, row_input, row, k, map, values, indices);
    else warp_sort_candidates<16, K, In>(staged, total, row_input, row, k, map, values, indices);
    return true;
}

// The warp filter (FILTER, GROUP_BESTS or TOP_BITS) of a row held as 32 x 32 composites of
// more than 256 keys (padding past the row's end): the first k of the composites that reach
// the threshold, sorted and put, where at most WARP_FILTER_MOST reach it; false, having put
// nothing, where more do (the caller sorts the row).
// - GROUP_BESTS: the k-th best of the groups' bests (warp_group_bests), with G groups a lane,
//   the fewest (up to 8) that give 2 k groups (padding past 32 G); k <= 256 needs no more.
// - TOP_BITS: warp_search_threshold, stopping once no more than 256 (k up to 256) or 512 reach
//   it, so that they sort in 8 or 16 registers a lane; k > WARP_FILTER_MOST needs no search.
template <WarpFilter FILTER, typename K, typename In>
__device__ __forceinline__ bool warp_filter(const typename WarpComposite<In>::C (&x)[32],
                                            typename WarpComposite<In>::C *staged, const In *row_input, u64 row,
                                            u32 k, u32 map, K *values, u32 *indices) {
    typedef typename WarpComposite<In>::C C;
    if constexpr (FILTER == TOP_BITS) {
        if (k > WARP_FILTER_MOST) return false;
        const u32 enough = k <= 8 * WARP_SIZE ? 8 * WARP_SIZE : WARP_FILTER_MOST;
        const u32 threshold = warp_search_threshold(x, k, enough);
        return warp_sort_reaching<K, In>(x, staged, [=](const C &c) { return top_bits(c) >= threshold; }, row_input,
                                         row, k, map, values, indices);
    } else {
        u32 groups = 1;
        while (groups < 8 && WARP_SIZE * groups < 2 * k) groups <<= 1;
        switch (groups) { // warp-uniform
        case 1: warp_group_bests<1>(x, staged); break;
        case 2: warp_group_bests<2>(x, staged); break;
        case 4: warp_group_bests<4>(x, staged); break;
        default: warp_group_bests<8>(x, staged); break;
        }
        const C threshold = k <= WARP_SIZE * groups ? staged[k - 1] : padding<C>();
        __syncwarp(); // read before the candidates overwrite it
        if (!better(threshold, padding<C>())) return false; // warp-uniform
        return warp_sort_reaching<K, In>(x, staged, [=](const C &c) { return !better(threshold, c); }, row_input,
                                         row, k, map, values, indices);
    }
}

// A warp's composites of its row's keys, key[p] being key p x 32 + lane (padding past
// `row_len`), each key's map with or without numeric order's work (`order`: the warp sort has
// a copy of each). Every key is mapped (a key past the row's end is a loaded 0) and the padding
// selected after: straight-line code, whose map constants are worked out once. (A branch a key
// around its map worked them out again in each branch: bf16 16,384 x 1,024 took up to 1.09x
// the time; docs/notes/plan-layer.md.)
template <typename W, typename In, u32 P, typename Order>
__device__ __forceinline__ void warp_composites(const In (&key)[P], u64 row_len, u32 map, Order order,
                                                typename W::C (&x)[P]) {
    const u32 lane = threadIdx.x % WARP_SIZE;
    const u32 len = u32(min(row_len, u64(P * WARP_SIZE)));
#pragma unroll
    for (u32 p = 0; p < P; p++) {
        const u32 at = p * WARP_SIZE + lane;
        const typename W::C c = W::of(key[p], at, map, order);
        x[p] = at < len ? c : padding<typename W::C>();
    }
}

// Rows of at most 32 x P keys of 16 or 32 bits, one warp a row: the warp holds the row's
// composites in registers, P a lane (padding past the row's end), sorts them best first
// (warp_sort_best_first, lane-major) and puts the first k (warp_put). No barrier, and no shared
// memory but each warp's own `WARP_SIZE x (P + 1)` composites. The grid's warps take rows
// `gridDim.x x warps` apart. (`partials`, `keys` and `keys_row_len`, in the shared parameter
// list, are unused: the warp puts the keys from the row it reads.)
// With a FILTER (P = 32, rows of more than 256 keys; the host's `topk_warp_filter_max_k`), the
// warp first sorts only the keys that reach a threshold (warp_filter), and the whole row where
// too many do (ties of 32-bit keys' words, a threshold that is padding, k past 512).
template <typename K, typename In, u32 P, WarpFilter FILTER>
__device__ void topk_warp_sort(const In *input, u64 row_len, u32 rows, u32 k, u32 map, K *values, u32 *indices) {
    typedef WarpComposite<In> W;
    typedef typename W::C C;
    static_assert(FILTER == WHOLE_ROW || P == 32, "the filter takes rows of up to 1,024");
    const u32 lane = threadIdx.x % WARP_SIZE, warps = blockDim.x / WARP_SIZE;
    C *staged = shared_tile<C>() + threadIdx.x / WARP_SIZE * (WARP_SIZE * (P + 1));
    const u64 first = u64(blockIdx.x) * warps + threadIdx.x / WARP_SIZE;
    for (u64 row = first; row < rows; row += u64(gridDim.x) * warps) {
        const In *row_input = input + row * row_len;
        // Coalesced loads, all issued before the first is used; any slot does, composites are unique.
        In key[P];
        if (row_len >= P * WARP_SIZE) { // warp-uniform
#pragma unroll
            for (u32 p = 0; p < P; p++) key[p] = row_input[p * WARP_SIZE + lane];
        } else {
#pragma unroll
            for (u32 p = 0; p < P; p++) key[p] = p * WARP_SIZE + lane < row_len ? row_input[p * WARP_SIZE + lane] : In(0);
        }
        C x[P];
        // The whole row's network holds every register: there the key map's constants are
        // worked out where used (map_here), so that they die with the loads. (The filters
        // hold fewer, and run faster with the constants kept.)
        const u32 load_map = FILTER == WHOLE_ROW ? map_here(map) : map;
        if (map & MAP_NUMERIC) warp_composites<W>(key, row_len, load_map, KnownOrder<true>(), x);
        else warp_composites<W>(key, row_len, load_map, KnownOrder<false>(), x);
        if constexpr (FILTER != WHOLE_ROW) {
            if (warp_filter<FILTER, K, In>(x, staged, row_input, row, k, map, values, indices)) continue; // warp-uniform
        }
        warp_sort_best_first<P, true>(x);
        warp_put<K, In, P>(x, staged, row_input, row, k, FILTER == WHOLE_ROW ? map_here(map) : map, values, indices);
    }
}
