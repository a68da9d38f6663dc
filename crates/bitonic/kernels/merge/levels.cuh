// Device level: the merge paths of every tile of a merge (two runs, or every pair of runs of
// one level of a merge sort) and the tile merges between them.
#pragma once

#include "merge/path.cuh"
#include "merge/tile.cuh"

template <typename W> __device__ void co_ranks(const W *a, u64 a_len, const W *b, u64 b_len, u64 *ranks, u32 count) {
    u32 q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q < count) ranks[q] = co_rank(a, a_len, b, b_len, min(a_len + b_len, u64(q) << MergeTile<W>::TILE_BITS));
}

template <typename W> __device__ void merge_tiles(const W *a, const W *b, const u64 *ranks, W *out, u64 total) {
    const u64 o0 = u64(blockIdx.x) << MergeTile<W>::TILE_BITS;
    const u64 o1 = min(total, o0 + (1u << MergeTile<W>::TILE_BITS));
    merge_tile(a, b, o0, o1, ranks[blockIdx.x], ranks[blockIdx.x + 1], out, 0u);
}

// ---- A level: `keys` holds sorted runs of run_len words (the last may be shorter), and runs
// 2k and 2k + 1 merge into the same place of `out`. T divides 2 run_len, so a tile lies in one
// pair; ranks[q] = the merge path at tile q's start within its pair. ----

struct RunPair {
    u64 start, a_len, b_len; // a = keys + start, b = a + a_len
};

__device__ __forceinline__ RunPair pair_at(u64 n, u64 run_len, u64 o) {
    RunPair p;
    p.start = o / (2 * run_len) * (2 * run_len);
    p.a_len = min(run_len, n - p.start);
    p.b_len = min(run_len, n - p.start - p.a_len);
    return p;
}

// Tiles of 2^TILE_BITS outputs: the tile merge's, of K itself or of K's tagged words.
template <typename K, u32 TILE_BITS>
__device__ void level_co_ranks_in(const K *keys, u64 n, u64 run_len, u64 *ranks, u32 tiles) {
    u32 q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= tiles) return;
    const u64 o = u64(q) << TILE_BITS;
    const RunPair p = pair_at(n, run_len, o);
    const K *a = keys + p.start;
    ranks[q] = co_rank(a, p.a_len, a + p.a_len, p.b_len, o - p.start);
}

// Where tile q of a level lies: its pair of runs, its outputs [o0, o1) within the pair, and its
// merge paths a0 and a1 (the tile that ends its pair ends with all of a; any other ends where
// the next begins).
struct LevelTile {
    RunPair pair;
    u64 o0, o1, a0, a1;
};

template <u32 TILE_BITS> __device__ __forceinline__ LevelTile level_tile(u64 n, u64 run_len, const u64 *ranks) {
    LevelTile t;
    const u64 o = u64(blockIdx.x) << TILE_BITS;
    t.pair = pair_at(n, run_len, o);
    const u64 total = t.pair.a_len + t.pair.b_len;
    t.o0 = o - t.pair.start;
    t.o1 = min(total, t.o0 + (1u << TILE_BITS));
    t.a0 = ranks[blockIdx.x];
    t.a1 = t.o1 == total ? t.pair.a_len : ranks[blockIdx.x + 1];
    return t;
}

template <typename W> __device__ void level_co_ranks(const W *keys, u64 n, u64 run_len, u64 *ranks, u32 tiles) {
    level_co_ranks_in<W, MergeTile<W>::TILE_BITS>(keys, n, run_len, ranks, tiles);
}

template <typename W>
__device__ void merge_level(const W *keys, u64 n, u64 run_len, const u64 *ranks, W *out, u32 map) {
    const LevelTile t = level_tile<MergeTile<W>::TILE_BITS>(n, run_len, ranks);
    const W *a = keys + t.pair.start;
    merge_tile(a, a + t.pair.a_len, t.o0, t.o1, t.a0, t.a1, out + t.pair.start, map);
}

template <typename K, typename V>
__device__ void merge_level_kv(const K *keys, const V *values, u64 n, u64 run_len, const u64 *ranks, K *out,
                               V *out_values, u32 map) {
    const LevelTile t = level_tile<MergeTile<typename Tagged<K>::Word>::TILE_BITS>(n, run_len, ranks);
    const K *a = keys + t.pair.start;
    const V *va = values + t.pair.start;
    merge_tile_kv(a, a + t.pair.a_len, va, va + t.pair.a_len, t.o0, t.o1, t.a0, t.a1, out + t.pair.start,
                  out_values + t.pair.start, map);
}

// ---- The runs of a key-value merge sort: each tile's keys sorted by the tuned tile sort, then
// their values placed. ----
//
