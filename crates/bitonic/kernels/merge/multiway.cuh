// Multiway merge levels: one level merges groups of `ways` neighbouring runs at once (2 to 32,
// a power of two: the policy's for the word size, src/policy/), so a merge sort of R runs
// makes ceil(log_ways R) passes over its keys instead of log2 R.
//
// A level is up to three launches:
// * multiway_samples gathers every S-th word of the runs (S: MultiwayTiling's spacing), a
//   small array that stays in L2 — unless the level before was a multiway level, whose
//   stores wrote them (store_with_sample).
// * multiway_co_ranks: one warp a tile finds where the tile starts in each run of its group
//   (the k-way merge path). A tile starts at a sample: the first one past a multiple of the
//   tile's samples in the samples' stable merge, found by narrowing a window in every run of
//   samples (k_way_split), and then its position in every run of keys by one search a run
//   inside a window of S words. So tiles hold slightly different numbers of words, at most a
//   merge tile.
// * multiway_merge_level: one block a tile loads the tile's segment of every run into shared
//   memory, merges them pairwise in log2(ways) rounds — each thread finds the merge path of
//   its first output in the pair that holds it with a binary search and then merges its E
//   outputs sequentially, one comparison an output (a search again where they cross into the
//   next pair) — and stores the tile, coalesced. Its key-value form tags each key with its
//   tile index and moves the values by the tags (multiway_merge_level_kv).
// Ties go to the lower run, then the lower position: the merge is stable, as a two-way level.
// src/plan/merge/tests.rs models the launches on the CPU.
#pragma once

#include "common/types.cuh"
#include "common/keys.cuh"
#include "common/memory.cuh"
#include "merge/tile.cuh"

#if !defined(KERNEL_MERGE_MAX_WAYS) || !defined(KERNEL_CO_RANKS_WARPS) || !defined(KERNEL_MULTIWAY_TILING_BYTES)
#error "the host passes KERNEL_MERGE_MAX_WAYS, KERNEL_CO_RANKS_WARPS and KERNEL_MULTIWAY_TILING_BYTES (src/policy/, src/kernels/abi.rs)"
#endif
// The most runs a level merges: one lane of a warp a run, at least, in multiway_co_ranks.
#define MAX_WAYS u32(KERNEL_MERGE_MAX_WAYS)
static_assert(MAX_WAYS <= WARP_SIZE, "a lane a run");

// A group of `ways` runs of run_len words from `start` (the last group may hold fewer, the last
// run be shorter), `len` words in all.
struct RunGroup {
    u64 start, len;
};

// Words of run j of group g.
__device__ __forceinline__ u64 run_length(RunGroup g, u64 run_len, u32 j) {
    const u64 begin = min(g.len, u64(j) * run_len);
    return min(run_len, g.len - begin);
}

// Positions inside a group are 32-bit: the host merges multiway only groups of fewer than 2^32
// words (src/plan/merge.rs, level_ways_of), and 32-bit shuffles, sums and probes cost half the
// instructions of 64-bit ones on the searches' critical path.
__device__ __forceinline__ u32 warp_max(u32 x) {
#pragma unroll
    for (u32 d = 16; d > 0; d /= 2) x = max(x, __shfl_xor_sync(FULL_WARP_MASK, x, d));
    return x;
}

__device__ __forceinline__ u32 warp_sum(u32 x) {
#pragma unroll
    for (u32 d = 16; d > 0; d /= 2) x += __shfl_xor_sync(FULL_WARP_MASK, x, d);
    return x;
}

// The lanes of one run in multiway_co_ranks: `lanes` (a power of two) lanes from `first`,
// `mask` their bits, and this lane's probe share, floor(2^32 (rank + 1) / (lanes + 1)) for its
// rank among them, so that its probe into a window of w words is __umulhi(w, share): rising
// with the rank and below w, in one instruction (no division on the critical path).
struct RunLanes {
    u32 lanes, first, mask, share;
};

// How many words of run `run` (positions [first, last) of it) come before the pivot c, a word
// of run `pivot_run`: those <= c in lower runs, those < c in higher ones (the merge is stable).
// The lanes of one run search together, each step probing `lanes` spread positions and
// keeping the gap between the last probe before c and the first after it, so a window of w
// words takes about log_{lanes+1} w steps. Every lane of the run returns the count.
template <typename W>
__device__ __forceinline__ u32 count_before(const W *run, u32 first, u32 last, W c, bool lower_run, RunLanes g) {
    for (;;) {
        const bool open = first < last;
        if (!__any_sync(FULL_WARP_MASK, open)) return first;
        u32 probe = 0;
        bool before = false;
        if (open) {
            probe = first + __umulhi(last - first, g.share);
            const W w = run[probe];
            before = lower_run ? !(c < w) : w < c;
        }
        // Probes rise with the lane: those before c are a prefix of the run's lanes.
        const u32 below = __popc(__ballot_sync(FULL_WARP_MASK, before) & g.mask);
        if (open) { // the same for the run's lanes: they share the window
            const u32 lower = below ? __shfl_sync(g.mask, probe, g.first + below - 1) + 1 : first;
            const u32 upper = below < g.lanes ? __shfl_sync(g.mask, probe, g.first + below) : last;
            first = lower;
            last = upper;
        }
    }
}

// The k-way split at output position d of `ways` runs (run j: `stride` j words from `runs`; run
// `mine` of this lane holds `len` words): how many words of run `mine` come before position d
// of their stable merge. Every lane returns its run's count; the whole warp calls it.
//
// The invariant: run j's split lies in [lo_j, hi_j]. Each round takes a word of the widest
// window as the pivot (where the boundary falls if the words are spread alike, or, every
// third round, the middle) and counts the words before it in every window (count_before). The
// pivot comes before position d exactly when the counts sum below d; then every run's split
// is at least its count (the pivot's own run: one more), else at most. The counts are taken
// within the windows (clamped to them), which changes no comparison with d: a run's count
// below lo_j (above hi_j) lies on the same side of its split as lo_j (hi_j). Every round
// shrinks the chosen window, and a middle round halves it; on keys of like distributions the
// aimed rounds close in fast. The aim needs no precision (any word of the window is a valid
// pivot), so it is a 32-bit float estimate.
template <typename W>
__device__ __forceinline__ u32 k_way_split(const W *runs, u64 stride, u32 len, u32 d, RunLanes me, u32 mine) {
    const u32 lane_bits = __ffs(me.lanes) - 1;
    const bool leader = threadIdx.x % WARP_SIZE == me.first;
    const W *run = runs + u64(mine) * stride;
    u32 lo = 0, hi = min(len, d);
    for (u32 round = 0;; ++round) {
        const u32 width = hi - lo;
        const u32 widest_len = warp_max(width);
        if (widest_len == 0) break;
        // The widest window (the lowest run of the widest ones), the open words and the words
        // known to come before the boundary.
        const u32 widest_lane = __ffs(__ballot_sync(FULL_WARP_MASK, leader && width == widest_len)) - 1;
        const u32 widest = widest_lane >> lane_bits;
        const u32 open = warp_sum(leader ? width : 0), below = warp_sum(leader ? lo : 0);
        // Two rounds of three aim at where the boundary would fall if the windows' words were
        // spread alike (interpolation); the third takes the middle, which bounds the rounds
        // (docs/notes/multiway.md: fewer dependent loads than aiming one round of two).
        const u32 at = round % 3 != 2 ? u32(float(widest_len) * __fdividef(float(d - below), float(open)))
                                       : widest_len / 2;
        const u32 pivot = __shfl_sync(FULL_WARP_MASK, lo, widest_lane) + min(at, widest_len - 1);
        const W c = runs[u64(widest) * stride + pivot]; // one address: one load for the warp
        // The pivot's own run counts the words before it: an empty window at the pivot. Every
        // lane calls count_before, whose votes take the whole warp.
        const bool own = mine == widest;
        const u32 count = count_before(run, own ? pivot : lo, own ? pivot : hi, c, mine < widest, me);
        if (warp_sum(leader ? count : 0) < d) lo = max(lo, count + (own ? 1 : 0));
        else hi = min(hi, count);
    }
    return lo;
}

// Warps of a multiway_co_ranks block (the host launches blocks of as many: MergePolicy).
#define CO_RANKS_WARPS u32(KERNEL_CO_RANKS_WARPS)

// How a multiway level cuts each group of runs into tiles (src/plan/merge.rs and src/kernels/abi.rs, MultiwayTiling):
// every 2^sample_bits-th word of each run is a sample (multiway_samples gathers them), and a
// tile boundary falls at a sample — the first one past tile_samples t samples of the group in
// their stable merge, for the group's tile t — so that a boundary costs a search over the
// samples (few, so in L2) and one narrow search a run in the keys. A full group has
// group_tiles tiles; the level's last, maybe fewer.
struct MultiwayTiling {
    u32 sample_bits, tile_samples, group_tiles;
};
static_assert(sizeof(MultiwayTiling) == KERNEL_MULTIWAY_TILING_BYTES, "MultiwayTiling differs from src/kernels/abi.rs");

// The group of runs that tile b of a level merges.
__device__ __forceinline__ RunGroup group_of_tile(u64 n, u64 run_len, u32 ways, MultiwayTiling tiling, u32 b) {
    RunGroup g;
    const u64 span = run_len * ways;
    g.start = u64(b / tiling.group_tiles) * span;
    g.len = min(span, n - g.start);
    return g;
}

// samples[i] = keys[i 2^sample_bits] for every such word: the samples of every run of a level
// (runs start at multiples of the spacing).
template <typename W> __device__ void multiway_samples(const W *keys, u64 n, u32 sample_bits, W *samples) {
    const u64 count = ((n - 1) >> sample_bits) + 1;
    for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += u64(gridDim.x) * blockDim.x)
        samples[i] = keys[i << sample_bits];
}

// ranks[b ways + j] = how many words of run j come before the start of tile b of the level, for
// every tile b < tiles and run j < ways. One warp a tile; the 32 / ways lanes of run j keep
// run j's window and search it, so a lane holds one window, whatever the ways.
//
// Tile t > 0 of a group starts at its pivot P, the first sample past M = tile_samples t of
// the group's samples in their stable merge (run j*, position m_j* S, S the spacing). The
// samples' split at M (m_j of run j: k_way_split over the samples) bounds every run's split
// at P to S words: the m_j samples of run j before the split come before P, so more than
// (m_j - 1) S words of run j do; its next sample does not, so at most m_j S words do. So
// P starts at output position S M - (ways - 1)(S - 1) at the earliest and S M at the latest,
// which bounds a tile's words (MultiwayTiling keeps them within the merge tile).
template <typename W>
__device__ void multiway_co_ranks(const W *keys, u64 n, u64 run_len, u32 ways, const W *samples,
                                  MultiwayTiling tiling, u64 *ranks, u32 tiles) {
    __shared__ W next_samples[CO_RANKS_WARPS][MAX_WAYS];
    const u32 lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE;
    const u32 b = blockIdx.x * CO_RANKS_WARPS + warp; // the same for the warp
    if (b >= tiles) return;
    const RunGroup g = group_of_tile(n, run_len, ways, tiling, b);
    const u32 t = b % tiling.group_tiles;
    // Lanes [mine lanes, (mine + 1) lanes) keep and search run `mine` (ways is a power of two,
    // so every lane has a run); a run's first lane, its leader, speaks for it in warp sums.
    RunLanes me;
    me.lanes = WARP_SIZE / ways;
    const u32 lane_bits = __ffs(me.lanes) - 1, mine = lane >> lane_bits;
    const u32 rank_in_run = lane & (me.lanes - 1);
    me.first = mine << lane_bits;
    me.mask = (me.lanes == WARP_SIZE ? FULL_WARP_MASK : (1u << me.lanes) - 1) << me.first;
    me.share = u32((u64(rank_in_run + 1) << 32) / (me.lanes + 1));
    const bool leader = rank_in_run == 0;
    const u32 len = u32(run_length(g, run_len, mine));
    u32 split = 0;
    if (t > 0) { // (the same for the warp)
        const u32 sb = tiling.sample_bits;
        const W *sampled = samples + (g.start >> sb);
        const u64 sampled_stride = run_len >> sb;
        const u32 sampled_len = ((len + (1u << sb) - 1) >> sb);
        const u32 m = k_way_split(sampled, sampled_stride, sampled_len, t * tiling.tile_samples, me, mine);
        // The pivot: the lowest of the runs' next samples (ties: the lower run).
        const bool has_next = m < sampled_len;
        if (leader && has_next) next_samples[warp][mine] = sampled[u64(mine) * sampled_stride + m];
        const u32 with_next = __ballot_sync(FULL_WARP_MASK, leader && has_next);
        __syncwarp();
        bool lowest = leader && has_next;
        if (lowest) {
            const W w = next_samples[warp][mine];
            for (u32 j = 0; j < ways; ++j) {
                if (j == mine || !((with_next >> (j << lane_bits)) & 1)) continue;
                const W other = next_samples[warp][j];
                if (other < w || (j < mine && !(w < other))) lowest = false;
            }
        }
        const u32 pivot_run = (__ffs(__ballot_sync(FULL_WARP_MASK, lowest)) - 1) >> lane_bits;
        const W c = next_samples[warp][pivot_run];
        // Run j's split lies in ((m_j - 1) S, m_j S] (0 when m_j is 0); the pivot's own run's is
        // its position, m_j* S. count_before takes the whole warp.
        u32 first = m << sb, last = first;
        if (mine != pivot_run && m > 0) {
            first = ((m - 1) << sb) + 1;
            last = min(m << sb, len);
        }
        split = count_before(keys + g.start + u64(mine) * run_len, first, last, c, mine < pivot_run, me);
    }
    if (leader) ranks[u64(b) * ways + mine] = split;
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

// One tile of a multiway level, given the splits of multiway_co_ranks: words W in the rounds,
// load(i, at) giving tile index i from word `at` of the level's input, and store(o, w) taking
// output o of the level with its word w. Dynamic shared memory: two padded tiles of W
// and a slack word after each, which the rounds merge between (src/plan/merge.rs's
// multiway_tiles_bytes); a key-value level keeps its values after them.
template <typename W, typename Load, typename Store>
__device__ __forceinline__ void multiway_merge_tile(u64 n, u64 run_len, u32 ways, MultiwayTiling tiling,
                                                    const u64 *ranks, Load load, Store store) {
    typedef MergeTile<W> Tile;
    const u32 E = 1u << Tile::E_BITS, THREADS = 1u << Tile::THREAD_BITS;
    // Segment j of the tile holds run j's words from its split: tile index i of it is word
    // source[j] + i of the group (never negative: seg[j] <= j run_len, each lower segment
    // holding at most run_len words).
    __shared__ u64 source[MAX_WAYS];
    __shared__ u32 seg[MAX_WAYS + 1], tile_start;
    // The rounds merge from `merged` into `spare` and swap them. Each tile has a slack word
    // after it, which merge_serially may read (never use) past the last segment's end.
    W *merged = shared_tile<W>(), *spare = merged + padded_tile<W>(1u << Tile::TILE_BITS) + 1;

    const RunGroup g = group_of_tile(n, run_len, ways, tiling, blockIdx.x);
    const bool ends_group = (blockIdx.x + 1) % tiling.group_tiles == 0 || blockIdx.x + 1 == gridDim.x;
    if (threadIdx.x < WARP_SIZE) {
        // Run j's segment: from its split at the tile's start to its split at the next tile's
        // (the run's end when the tile ends the group), placed after the lower runs'
        // segments; the tile starts where the splits sum to.
        const u32 j = threadIdx.x;
        u64 a0 = 0, a1 = 0;
        if (j < ways) {
            a0 = ranks[u64(blockIdx.x) * ways + j];
            a1 = ends_group ? run_length(g, run_len, j) : ranks[(u64(blockIdx.x) + 1) * ways + j];
        }
        u32 count = u32(a1 - a0), before = count;
#pragma unroll
        for (u32 d = 1; d < WARP_SIZE; d *= 2) {
            const u32 x = __shfl_up_sync(FULL_WARP_MASK, before, d);
            if (j >= d) before += x;
        }
        const u32 start = warp_sum(u32(a0));
        if (j < ways) {
            seg[j] = before - count;
            source[j] = u64(j) * run_len + a0 - (before - count);
        }
        if (j == WARP_SIZE - 1) {
            seg[ways] = before;
            tile_start = start;
        }
    }
    __syncthreads();
    const u32 len = seg[ways];
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
            if (i < len) w[r] = load(i, g.start + at);
        }
#pragma unroll
        for (u32 r = 0; r < E; ++r)
            if (r * THREADS + threadIdx.x < len) merged[slot + merge_slot<W>(r * THREADS)] = w[r];
    }
    wait_async_copies(); // what load() put in flight has arrived by the barrier
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
    const u64 first_out = g.start + tile_start + threadIdx.x;
#pragma unroll
    for (u32 r = 0; r < E; ++r)
        if (r * THREADS + threadIdx.x < len) store(first_out + r * THREADS, merged[slot + merge_slot<W>(r * THREADS)]);
}

// Stores key w of output o of a level and, when the next level is multiway (next_sample_bits
// below 64), its sample there: every 2^next_sample_bits-th word of the output, unmapped.
template <typename K>
__device__ __forceinline__ void store_with_sample(K *out, u64 o, K w, u32 map, K *next_samples, u32 next_sample_bits) {
    out[o] = map ? from_sortable(w, map) : w;
    if (next_sample_bits < 64 && (o & ((u64(1) << next_sample_bits) - 1)) == 0) next_samples[o >> next_sample_bits] = w;
}

// A multiway level of words alone: keys into out, unmapping with `map` (the last level), the
// next level's samples into next_samples.
template <typename W>
__device__ void multiway_merge_level(const W *keys, u64 n, u64 run_len, u32 ways, MultiwayTiling tiling,
                                     const u64 *ranks, W *out, u32 map, W *next_samples, u32 next_sample_bits) {
    multiway_merge_tile<W>(
        n, run_len, ways, tiling, ranks, [&](u32, u64 at) { return keys[at]; },
        [&](u64 o, W w) { store_with_sample(out, o, w, map, next_samples, next_sample_bits); });
}

// A multiway level of keys with values: each key goes into the rounds tagged with its tile
// index (Tagged<K>: the words of equal keys then leave in run order, as their tags rise with
// the run and the position), and its value goes into shared memory at that index after the two
// tiles (cp.async, in flight while the keys load), from where the store fetches the value of
// each word's tag.
template <typename K, typename V>
__device__ void multiway_merge_level_kv(const K *keys, const V *values, u64 n, u64 run_len, u32 ways,
                                        MultiwayTiling tiling, const u64 *ranks, K *out, V *out_values, u32 map,
                                        K *next_samples, u32 next_sample_bits) {
    typedef Tagged<K> Tag;
    typedef typename Tag::Word W;
    V *tile_values = reinterpret_cast<V *>(shared_tile<W>() + 2 * (padded_tile<W>(1u << MergeTile<W>::TILE_BITS) + 1));
    multiway_merge_tile<W>(
        n, run_len, ways, tiling, ranks,
        [&](u32 i, u64 at) {
            copy_async(&tile_values[i], &values[at]);
            return Tag::make(keys[at], i);
        },
        [&](u64 o, W w) {
            store_with_sample(out, o, Tag::key(w), map, next_samples, next_sample_bits);
            out_values[o] = tile_values[Tag::tag(w)];
        });
}
