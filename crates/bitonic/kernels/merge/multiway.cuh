// Multiway merge levels: one level merges groups of `ways` neighbouring runs at once (2 to 32,
// a power of two: the policy's for the word size, src/policy.rs), so a merge sort of R runs
// makes ceil(log_ways R) passes over its keys instead of log2 R.
//
// A level is two launches, as the two-way level's (merge/levels.cuh):
// * multiway_co_ranks: one warp a tile boundary finds where the boundary's output position
//   falls in each run of its group (the k-way merge path), exactly, by narrowing a window in
//   every run: a pivot word's count in each run (the warp searching all runs at once) says on
//   which side of the boundary it falls, and so which ends of the windows move.
// * multiway_merge_level: one block a tile loads the tile's segment of every run into shared
//   memory, merges them pairwise in log2(ways) rounds — each thread finds the merge path of
//   its first output in the pair that holds it with a binary search and then merges its E
//   outputs sequentially, one comparison an output (a search again where they cross into the
//   next pair) — and stores the tile, coalesced.
// Ties go to the lower run, then the lower position: the merge is stable, as a two-way level.
// src/cuda/merge.rs's tests model both launches on the CPU.
#pragma once

#include "common/types.cuh"
#include "common/keys.cuh"
#include "common/memory.cuh"
#include "merge/tile.cuh"

// The most runs a level merges: one lane of a warp a run, at least, in multiway_co_ranks.
#define MAX_WAYS 32u

// The group of runs output position o of a level lies in: `ways` runs of run_len words from
// `start` (the last group may hold fewer, the last run be shorter), `len` words in all.
struct RunGroup {
    u64 start, len;
};

__device__ __forceinline__ RunGroup group_at(u64 n, u64 run_len, u32 ways, u64 o) {
    RunGroup g;
    const u64 span = run_len * ways;
    g.start = o / span * span;
    g.len = min(span, n - g.start);
    return g;
}

// Words of run j of group g.
__device__ __forceinline__ u64 run_length(RunGroup g, u64 run_len, u32 j) {
    const u64 begin = min(g.len, u64(j) * run_len);
    return min(run_len, g.len - begin);
}

__device__ __forceinline__ u64 warp_max(u64 x) {
#pragma unroll
    for (u32 d = 16; d > 0; d /= 2) x = max(x, __shfl_xor_sync(FULL_WARP_MASK, x, d));
    return x;
}

__device__ __forceinline__ u64 warp_sum(u64 x) {
#pragma unroll
    for (u32 d = 16; d > 0; d /= 2) x += __shfl_xor_sync(FULL_WARP_MASK, x, d);
    return x;
}

// How many words of run `run` (positions [first, last) of it) come before the pivot c, a word
// of run `pivot_run`: those <= c in lower runs, those < c in higher ones (the merge is stable).
// The `lanes` lanes of one group search together, each step probing `lanes` evenly spaced
// positions and keeping the gap between the last probe before c and the first after it, so a
// window of w words takes log_{lanes+1} w steps. Every lane of the group returns the count.
template <typename W>
__device__ __forceinline__ u64 count_before(const W *run, u64 first, u64 last, W c, bool lower_run, u32 lanes,
                                            u32 rank_in_group, u32 group_mask) {
    for (;;) {
        const bool open = first < last;
        if (!__any_sync(FULL_WARP_MASK, open)) return first;
        u64 probe = 0;
        bool before = false;
        if (open) {
            probe = first + (last - first) * (rank_in_group + 1) / (lanes + 1);
            const W w = run[probe];
            before = lower_run ? !(c < w) : w < c;
        }
        // Probes rise with the lane: those before c are a prefix of the group's lanes.
        const u32 ballot = __ballot_sync(FULL_WARP_MASK, before) & group_mask;
        const u32 below = __popc(ballot), group_first = __ffs(group_mask) - 1;
        if (open) { // the same for the whole group: its lanes share the window
            const u64 lower = below ? __shfl_sync(group_mask, probe, group_first + below - 1) + 1 : first;
            const u64 upper = below < lanes ? __shfl_sync(group_mask, probe, group_first + below) : last;
            first = lower;
            last = upper;
        }
    }
}

// ranks[q ways + j] = how many words of run j come before output position q T of the
// level (T: the merge tile), for every tile q < tiles and run j < ways. One warp a tile
// boundary; the 32 / ways lanes of group j keep run j's window and search it, so a lane holds
// one window, whatever the ways (few registers: many warps an SM hide the searches' latency).
//
// The invariant: run j's split lies in [lo_j, hi_j]. Each round takes a word of the widest
// window as the pivot (where the boundary falls if the words are spread alike, or, every
// third round, the middle) and counts the words before it in every window (count_before). The
// pivot comes before the boundary's output position d exactly when the counts sum below d; then every
// run's split is at least its count (the pivot's own run: one more), else at most. The counts
// are taken within the windows (clamped to them), which changes no comparison with d: a run's
// count below lo_j (above hi_j) lies on the same side of its split as lo_j (hi_j). Every
// round shrinks the chosen window, and a middle round halves it; on keys of like
// distributions the aimed rounds close in fast.
template <typename W>
__device__ void multiway_co_ranks(const W *keys, u64 n, u64 run_len, u32 ways, u64 *ranks, u32 tiles) {
    const u32 lane = threadIdx.x % WARP_SIZE;
    const u32 q = (blockIdx.x * blockDim.x + threadIdx.x) / WARP_SIZE; // the same for the warp
    if (q >= tiles) return;
    const RunGroup g = group_at(n, run_len, ways, u64(q) << MergeTile<W>::TILE_BITS);
    const u64 d = (u64(q) << MergeTile<W>::TILE_BITS) - g.start;
    const W *runs = keys + g.start;
    // Lanes [mine lanes, (mine + 1) lanes) keep and search run `mine` (ways is a power of two,
    // so every lane has a run); a group's first lane, its leader, speaks for it in warp sums.
    const u32 lanes = WARP_SIZE / ways, mine = lane / lanes, rank_in_group = lane % lanes;
    const u32 group_mask = (lanes == WARP_SIZE ? FULL_WARP_MASK : (1u << lanes) - 1) << (mine * lanes);
    const bool leader = rank_in_group == 0;
    u64 lo = 0, hi = min(run_length(g, run_len, mine), d);
    for (u32 round = 0;; ++round) {
        const u64 width = hi - lo;
        const u64 widest_len = warp_max(width);
        if (widest_len == 0) break;
        // The widest window (the lowest run of the widest ones), the open words and the words
        // known to come before the boundary.
        const u32 widest_lane = __ffs(__ballot_sync(FULL_WARP_MASK, leader && width == widest_len)) - 1;
        const u32 widest = widest_lane / lanes;
        const u64 open = warp_sum(leader ? width : 0), below = warp_sum(leader ? lo : 0);
        // Two rounds of three aim at where the boundary would fall if the windows' words were
        // spread alike (interpolation); the third takes the middle, which bounds the rounds
        // (docs/notes/multiway.md: fewer dependent loads than aiming one round of two).
        const u64 at = round % 3 != 2 ? u64(double(widest_len) * (double(d - below) / double(open)))
                                       : widest_len / 2;
        const u64 pivot = __shfl_sync(FULL_WARP_MASK, lo, widest_lane) + min(at, widest_len - 1);
        const W c = runs[u64(widest) * run_len + pivot]; // one address: one load for the warp
        // The pivot's own run counts the words before it: an empty window at the pivot. Every
        // lane calls count_before, whose votes take the whole warp.
        const bool own = mine == widest;
        const u64 count = count_before(runs + u64(mine) * run_len, own ? pivot : lo, own ? pivot : hi, c,
                                       mine < widest, lanes, rank_in_group, group_mask);
        if (warp_sum(leader ? count : 0) < d) lo = max(lo, count + (own ? 1 : 0));
        else hi = min(hi, count);
    }
    if (leader) ranks[u64(q) * ways + mine] = lo;
}

// Tile indices [seg[s], seg[s + 1]) of the block's shared tile hold run s's words; a round of
// width w merges segments [2 p w, (2 p + 1) w) with [(2 p + 1) w, (2 p + 2) w) for each pair p
// (the segment indices capped at `ways`), so the pair's words are contiguous too.
struct MergePair {
    u32 a, b, end; // A = [a, b), B = [b, end)
};

__device__ __forceinline__ MergePair merge_pair(const u32 *seg, u32 ways, u32 width, u32 p) {
    MergePair m;
    m.a = seg[min(ways, 2 * p * width)];
    m.b = seg[min(ways, (2 * p + 1) * width)];
    m.end = seg[min(ways, (2 * p + 2) * width)];
    return m;
}

// The merge path at output o of pair m: how many of the pair's first o outputs are A's (ties:
// A's words first).
template <typename W> __device__ __forceinline__ u32 pair_path(const W *from, MergePair m, u32 o) {
    const u32 a_len = m.b - m.a, b_len = m.end - m.b;
    u32 lo = o > b_len ? o - b_len : 0, hi = min(o, a_len);
    while (lo < hi) {
        const u32 mid = (lo + hi) / 2;
        if (!(from[merge_slot<W>(m.b + o - mid - 1)] < from[merge_slot<W>(m.a + mid)])) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// Merges `n` outputs of one pair from its merge path: A's next word is `from`'s tile index ai
// (A ends at a_end), B's bi (B ends at b_end); output r goes to tile index out + r of `to`.
// An output is one comparison, two selects, one shared load (the next head of the segment it
// came from, read even past the segment's end: the buffers have a slack word) and one shared
// store. FULL: n = E outputs from a multiple of E, so the count costs nothing, and when no
// padding falls among them (merge_slot pads every 128 bytes) their slots are one base plus r.
template <typename W, bool FULL>
__device__ __forceinline__ void merge_serially(const W *from, W *to, u32 ai, u32 a_end, u32 bi, u32 b_end, u32 out,
                                               u32 n) {
    const u32 E = 1u << MergeTile<W>::E_BITS;
    const bool constant_slots = FULL && E <= 128 / sizeof(W);
    W head_a = from[merge_slot<W>(ai)], head_b = from[merge_slot<W>(bi)];
    const u32 base = merge_slot<W>(out);
#pragma unroll
    for (u32 r = 0; r < E; ++r) {
        if (!FULL && r >= n) break;
        // A's head goes first unless A is done or B's head is smaller (ties: A, the lower run).
        const bool take_a = ai < a_end && (bi >= b_end || !(head_b < head_a));
        to[constant_slots ? base + r : merge_slot<W>(out + r)] = take_a ? head_a : head_b;
        if (r + 1 < E) {
            ai += take_a ? 1 : 0;
            bi += take_a ? 0 : 1;
            const W next = from[merge_slot<W>(take_a ? ai : bi)];
            head_a = take_a ? next : head_a;
            head_b = take_a ? head_b : next;
        }
    }
}

// One merge round in shared memory: thread t writes `to`'s tile indices [t E, t E + E) below
// len, merging `from`'s pairs of width `width`. A thread whose E outputs lie in one pair (all
// but the few at a pair's end or the tile's) merges them without bounds on the count; the
// others go pair by pair.
template <typename W>
__device__ __forceinline__ void merge_round(const W *from, W *to, const u32 *seg, u32 ways, u32 width, u32 len) {
    const u32 E = 1u << MergeTile<W>::E_BITS;
    u32 out = threadIdx.x * E;
    if (out >= len) return;
    const u32 stop = min(len, out + E);
    u32 p = 0;
    MergePair m = merge_pair(seg, ways, width, 0);
    while (m.end <= out) m = merge_pair(seg, ways, width, ++p);
    if (stop == out + E && stop <= m.end) {
        const u32 o = out - m.a, k = pair_path(from, m, o);
        merge_serially<W, true>(from, to, m.a + k, m.b, m.b + (o - k), m.end, out, E);
        return;
    }
    while (out < stop) {
        while (m.end <= out) m = merge_pair(seg, ways, width, ++p); // (a pair may be empty)
        const u32 n = min(stop, m.end) - out, o = out - m.a, k = pair_path(from, m, o);
        merge_serially<W, false>(from, to, m.a + k, m.b, m.b + (o - k), m.end, out, n);
        out += n;
    }
}

// One tile of a multiway level, given the splits of multiway_co_ranks. Dynamic shared
// memory: two padded tiles and a slack word after each, which the rounds merge between
// (src/cuda/merge.rs's multiway_shared_bytes).
template <typename W>
__device__ void multiway_merge_level(const W *keys, u64 n, u64 run_len, u32 ways, const u64 *ranks, W *out,
                                     u32 map) {
    typedef MergeTile<W> Tile;
    const u32 E = 1u << Tile::E_BITS, THREADS = 1u << Tile::THREAD_BITS;
    // Segment j of the tile holds run j's words from its split: tile index i of it is word
    // source[j] + i of the group (never negative: seg[j] <= j run_len, each lower segment
    // holding at most run_len words).
    __shared__ u64 source[MAX_WAYS];
    __shared__ u32 seg[MAX_WAYS + 1];
    // The rounds merge from `merged` into `spare` and swap them. Each tile has a slack word
    // after it, which merge_serially may read (never use) past the last segment's end.
    W *merged = shared_tile<W>(), *spare = merged + padded_tile<W>(1u << Tile::TILE_BITS) + 1;

    const u64 o = u64(blockIdx.x) << Tile::TILE_BITS;
    const RunGroup g = group_at(n, run_len, ways, o);
    const u64 o0 = o - g.start, o1 = min(g.len, o0 + (1u << Tile::TILE_BITS));
    const u32 len = u32(o1 - o0);
    if (threadIdx.x < WARP_SIZE) {
        // Run j's segment: from its split at o0 to its split at o1 (the whole run when the
        // tile ends the group), placed after the lower runs' segments.
        const u32 j = threadIdx.x;
        u64 a0 = 0, a1 = 0;
        if (j < ways) {
            a0 = ranks[u64(blockIdx.x) * ways + j];
            a1 = o1 == g.len ? run_length(g, run_len, j) : ranks[(u64(blockIdx.x) + 1) * ways + j];
        }
        u32 count = u32(a1 - a0), before = count;
#pragma unroll
        for (u32 d = 1; d < WARP_SIZE; d *= 2) {
            const u32 x = __shfl_up_sync(FULL_WARP_MASK, before, d);
            if (j >= d) before += x;
        }
        if (j < ways) {
            seg[j] = before - count;
            source[j] = u64(j) * run_len + a0 - (before - count);
        }
        if (j == 0) seg[ways] = len;
    }
    __syncthreads();
    // Load the segments, coalesced: tile index i is thread i % THREADS's register i / THREADS,
    // all E loads in flight at once. A warp's 32 indices of a register are consecutive: the
    // segments starting at or before its first one (a ballot over the lanes, lane j holding
    // segment j's start) give the first one's segment, and the few starting inside the 32
    // move the lanes past them (empty segments: the last of equal starts is the one that holds
    // words).
    {
        const u32 lane = threadIdx.x % WARP_SIZE, warp_first = threadIdx.x - lane;
        const u32 start_of_lane = lane < ways ? seg[lane] : 0xffffffffu;
        const u64 source_of_lane = lane < ways ? source[lane] : 0;
        const W *runs = keys + g.start;
        const u32 slot = merge_slot<W>(threadIdx.x);
        W w[E];
#pragma unroll
        for (u32 r = 0; r < E; ++r) {
            const u32 first = r * THREADS + warp_first, i = first + lane;
            u32 s = __popc(__ballot_sync(FULL_WARP_MASK, start_of_lane <= first)) - 1;
            for (u32 inside = __ballot_sync(FULL_WARP_MASK, start_of_lane > first && start_of_lane <= first + 31);
                 inside != 0; inside &= inside - 1)
                s += __shfl_sync(FULL_WARP_MASK, start_of_lane, __ffs(inside) - 1) <= i ? 1 : 0;
            const u64 at = __shfl_sync(FULL_WARP_MASK, source_of_lane, s) + i;
            if (i < len) w[r] = runs[at];
        }
#pragma unroll
        for (u32 r = 0; r < E; ++r)
            if (r * THREADS + threadIdx.x < len) merged[slot + merge_slot<W>(r * THREADS)] = w[r];
    }
    __syncthreads();
    // Rounds of pairwise merges between the two tiles, as many as the group's runs need.
    const u32 runs_here = u32((g.len + run_len - 1) / run_len);
    for (u32 width = 1; width < runs_here; width *= 2) {
        merge_round<W>(merged, spare, seg, ways, width, len);
        W *was = merged;
        merged = spare;
        spare = was;
        __syncthreads();
    }
    // (merge_slot is additive over indices with disjoint bits: a thread's slots are one base
    // plus constants.)
    const u32 slot = merge_slot<W>(threadIdx.x);
    W *tile_out = out + g.start + o0 + threadIdx.x;
#pragma unroll
    for (u32 r = 0; r < E; ++r) {
        if (r * THREADS + threadIdx.x < len) {
            const W w = merged[slot + merge_slot<W>(r * THREADS)];
            tile_out[r * THREADS] = map ? from_sortable(w, map) : w;
        }
    }
}
