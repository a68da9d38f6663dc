// Merging sorted runs (src/cuda/merge.rs): two runs of any lengths (the multi-GPU sort's
// merges), or every pair of neighbouring runs of one array at once (a level of a merge sort
// whose runs a tile sort made: the tuned version past 2^22 keys, and the key-value sorts and
// argsorts of one long row).
//
// One block merges one tile of T outputs, reading its words once and writing them once, so a
// merge is one pass over the runs whatever their lengths. For a tile's first output o0 and end
// o1, the merge path (co_rank) says how many of the first o0 (o1) merged words come from run A,
// A's words first among equal ones: a0 (a1). The tile's words are then A[a0, a1) and
// B[o0 - a0, o1 - a1). Placed as B's words falling, A's rising and +inf up to T, they form a
// bitonic sequence, which log2 T half-cleaner steps sort. A thread holds E = 2^E_BITS words in
// registers; the steps run E_BITS tile bits at a time, the thread's registers covering those
// bits, with a trip through shared memory between. src/multi/mod.rs's merge_by_tiles is the
// same on the CPU.
//
// Key-value merges carry values that the network never touches. Each key goes into the network
// with its *tag*, its rank in the tile's stable input order (A's words first, then B's), so
// equal keys leave in that order: the merge is stable. At the store a word's tag says where its
// value waits. The runs those merges start from: the tuned tile sort sorts each tile's keys
// alone, then place_values moves each value to where its key went (the key's rank among the
// sorted keys, and, where keys are equal, the count of equal ones before it).
// Words are u32, u64 or 16-byte KeyIndex; lengths and positions are 64-bit.
#include "common.cuh"

template <typename W> struct MergeTile {
    // 16 words a thread, 2^12-word tiles of 16 or 32 KiB; key-index pairs 8, 2^11 (32 KiB).
    static const u32 E_BITS = sizeof(W) == 16 ? 3 : 4;
    static const u32 THREAD_BITS = 8;
    static const u32 TILE_BITS = E_BITS + THREAD_BITS;
};

// The merge path at output o of sorted a and b: how many of the first o merged words are a's.
template <typename W> __device__ u64 co_rank(const W *a, u64 a_len, const W *b, u64 b_len, u64 o) {
    u64 lo = o > b_len ? o - b_len : 0, hi = o < a_len ? o : a_len;
    while (lo < hi) {
        u64 mid = lo + (hi - lo) / 2;
        if (!(b[o - mid - 1] < a[mid])) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// Shared-memory slot of tile index i: one word of padding after every 128 bytes, so that the
// lanes of a warp hit distinct banks in every phase's loads and stores. The map is additive
// over indices with disjoint bits, so a thread's slots in a phase are one base plus constants.
template <typename W> __device__ __forceinline__ u32 merge_slot(u32 i) {
    const u32 words_a_wavefront_bits = sizeof(W) == 4 ? 5 : sizeof(W) == 8 ? 4 : 3;
    return i + (i >> words_a_wavefront_bits);
}

// Shared-memory words a tile of T words takes with its padding.
template <typename W> __host__ __device__ constexpr u32 padded_tile(u32 t) {
    return t + t / (128 / sizeof(W));
}

// The tile index of thread t's register r when the registers cover tile bits LO ...
template <typename W, u32 LO> __device__ __forceinline__ u32 merge_index(u32 t, u32 r) {
    const u32 E_BITS = MergeTile<W>::E_BITS;
    return ((t >> LO) << (LO + E_BITS)) | (r << LO) | (t & ((1u << LO) - 1));
}

// The half-cleaner steps on register bits J ... 0.
template <typename W, int J> __device__ __forceinline__ void half_cleaners(W *k) {
    const int E = 1 << MergeTile<W>::E_BITS;
#pragma unroll
    for (int j = J; j >= 0; --j)
#pragma unroll
        for (int r = 0; r < E; ++r)
            if (!(r & (1 << j))) order_pair(k[r], k[r | (1 << j)]);
}

// The half-cleaner steps on tile bits TOP down to LO, in registers, then later bits' phases.
template <typename W, int TOP> __device__ __forceinline__ void merge_phases(W *tile) {
    const int E_BITS = MergeTile<W>::E_BITS, E = 1 << E_BITS;
    const int LO = TOP + 1 >= E_BITS ? TOP + 1 - E_BITS : 0;
    W k[E];
#pragma unroll
    for (int r = 0; r < E; ++r) k[r] = tile[merge_slot<W>(merge_index<W, LO>(threadIdx.x, r))];
    half_cleaners<W, TOP - LO>(k);
#pragma unroll
    for (int r = 0; r < E; ++r) tile[merge_slot<W>(merge_index<W, LO>(threadIdx.x, r))] = k[r];
    __syncthreads();
    if constexpr (LO > 0) merge_phases<W, LO - 1>(tile);
}

// The tile merge of one block of 2^THREAD_BITS threads in `tile` (padded_tile(T) words of
// shared memory): word i of the tile's bitonic sequence is load(i); store(i, w) gets the sorted
// tile's word i. The first phase's registers cover the top tile bits: thread t's word r is tile
// index r 2^THREAD_BITS + t, so it loads them straight from global memory, coalesced, all E
// loads in flight at once.
template <typename W, typename Load, typename Store>
__device__ __forceinline__ void merge_in_tile(W *tile, Load load, Store store) {
    const u32 THREAD_BITS = MergeTile<W>::THREAD_BITS, E = 1u << MergeTile<W>::E_BITS;
    W k[E];
#pragma unroll
    for (u32 r = 0; r < E; ++r) k[r] = load((r << THREAD_BITS) | threadIdx.x);
    half_cleaners<W, int(MergeTile<W>::E_BITS) - 1>(k);
#pragma unroll
    for (u32 r = 0; r < E; ++r) tile[merge_slot<W>((r << THREAD_BITS) | threadIdx.x)] = k[r];
    wait_async_copies(); // what load() put in flight (values) has arrived by the last barrier
    __syncthreads();
    merge_phases<W, int(THREAD_BITS) - 1>(tile);
#pragma unroll
    for (u32 r = 0; r < E; ++r) {
        const u32 i = (r << THREAD_BITS) | threadIdx.x;
        store(i, tile[merge_slot<W>(i)]);
    }
}

// Merges outputs [o0, o1) of runs a and b into out[o0, o1), given their merge paths a0 and a1.
// `map` (0: none) turns sortable words back into keys on the store: the last level of a merge
// sort of mapped keys.
template <typename W>
__device__ __forceinline__ void merge_tile(const W *a, const W *b, u64 o0, u64 o1, u64 a0, u64 a1, W *out, u32 map) {
    const u64 b_end = o1 - a1;
    const u32 len = u32(o1 - o0), from_b = u32(b_end - (o0 - a0));
    __shared__ W tile[padded_tile<W>(1u << MergeTile<W>::TILE_BITS)];
    merge_in_tile<W>(
        tile,
        [&](u32 i) { return i < from_b ? b[b_end - 1 - i] : i < len ? a[a0 + (i - from_b)] : largest_key<W>(); },
        [&](u32 i, W w) {
            if (i < len) out[o0 + i] = map ? from_sortable(w, map) : w;
        });
}

// ---- Tags: a key and its rank in a tile's stable input order, as one word ordered by key,
// then tag (32-bit keys: one u64, key in the high half; 64-bit keys: a KeyIndex). ----

template <typename K> struct Tagged;
template <> struct Tagged<u32> {
    typedef u64 Word;
    static __device__ __forceinline__ Word make(u32 key, u32 tag) { return (u64(key) << 32) | tag; }
    static __device__ __forceinline__ u32 key(Word w) { return u32(w >> 32); }
    static __device__ __forceinline__ u32 tag(Word w) { return u32(w); }
};
template <> struct Tagged<u64> {
    typedef KeyIndex Word;
    static __device__ __forceinline__ Word make(u64 key, u32 tag) {
        KeyIndex w;
        w.key = key;
        w.index = tag;
        w.unused = 0;
        return w;
    }
    static __device__ __forceinline__ u64 key(Word w) { return w.key; }
    static __device__ __forceinline__ u32 tag(Word w) { return w.index; }
};

// merge_tile for keys with values: a's words take tags 0 … from_a - 1 in order, b's the next
// ones, so a tag names one value of va or vb. Each value is copied to shared memory at its tag
// (cp.async: in flight while the keys' first steps run), after the tile's padded_tile(T)
// words: dynamic shared memory. The padding's tag (all ones) is above every real one.
template <typename K, typename V>
__device__ __forceinline__ void merge_tile_kv(const K *a, const K *b, const V *va, const V *vb, u64 o0, u64 o1,
                                              u64 a0, u64 a1, K *out, V *out_values, u32 map) {
    typedef Tagged<K> Tag;
    typedef typename Tag::Word W;
    W *tile = shared_tile<W>();
    V *tile_values = reinterpret_cast<V *>(tile + padded_tile<W>(1u << MergeTile<W>::TILE_BITS));
    const u64 b0 = o0 - a0, b_end = o1 - a1;
    const u32 len = u32(o1 - o0), from_b = u32(b_end - b0);
    merge_in_tile<W>(
        tile,
        [&](u32 i) {
            if (i < from_b) {
                const u32 tag = len - 1 - i;
                copy_async(&tile_values[tag], &vb[b_end - 1 - i]);
                return Tag::make(b[b_end - 1 - i], tag);
            }
            if (i < len) {
                const u32 tag = i - from_b;
                copy_async(&tile_values[tag], &va[a0 + tag]);
                return Tag::make(a[a0 + tag], tag);
            }
            return largest_key<W>();
        },
        [&](u32 i, W w) {
            if (i >= len) return;
            out[o0 + i] = from_sortable(Tag::key(w), map);
            out_values[o0 + i] = tile_values[Tag::tag(w)];
        });
}

// ---- Two runs: ranks[q] = the merge path at output min(total, q T); one block a tile. ----

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
// The bitonic network of a whole tile inside one block, for the words that place values (its
// first E_BITS stages in each thread's registers, the loads going anywhere, so a thread calls
// its words tile indices t E ... t E + E - 1; then each stage's flip with the steps that
// follow it on the same register bits, then the stage's later steps by merge_phases).

// Stages 0 ... E_BITS - 1 on one thread's registers: its E words, sorted.
template <typename W> __device__ __forceinline__ void sort_registers(W *k) {
    const int E_BITS = MergeTile<W>::E_BITS, E = 1 << E_BITS;
#pragma unroll
    for (int s = 0; s < E_BITS; ++s) {
#pragma unroll
        for (int r = 0; r < E; ++r)
            if (!(r & (1 << s))) order_pair(k[r], k[r ^ ((2 << s) - 1)]);
#pragma unroll
        for (int j = s - 1; j >= 0; --j)
#pragma unroll
            for (int r = 0; r < E; ++r)
                if (!(r & (1 << j))) order_pair(k[r], k[r | (1 << j)]);
    }
}

// Stage S's flip (i meets i ^ (2^(S+1) - 1)) and its steps on bits S-1 ... LO, with the
// registers covering tile bits LO ... S. A register in the upper half holds its index with the
// thread bits below LO complemented, so that every flip partner is in the same thread: k[r] and
// k[E - 1 - r].
template <typename W, int S> __device__ __forceinline__ void flip_phase(W *tile) {
    const int E_BITS = MergeTile<W>::E_BITS, E = 1 << E_BITS, LO = S - E_BITS + 1;
    const auto index = [](u32 r) {
        const u32 i = merge_index<W, LO>(threadIdx.x, r);
        return r >= E / 2 ? i ^ ((1u << LO) - 1) : i;
    };
    W k[E];
#pragma unroll
    for (int r = 0; r < E; ++r) k[r] = tile[merge_slot<W>(index(r))];
#pragma unroll
    for (int r = 0; r < E / 2; ++r) order_pair(k[r], k[E - 1 - r]);
    half_cleaners<W, E_BITS - 2>(k);
#pragma unroll
    for (int r = 0; r < E; ++r) tile[merge_slot<W>(index(r))] = k[r];
    __syncthreads();
}

// Stages S ... TILE_BITS - 1 of the tile in shared memory.
template <typename W, int S, int TILE_BITS> __device__ __forceinline__ void sort_stages(W *tile) {
    if constexpr (S < TILE_BITS) {
        flip_phase<W, S>(tile);
        merge_phases<W, S - int(MergeTile<W>::E_BITS)>(tile);
        sort_stages<W, S + 1, TILE_BITS>(tile);
    }
}

// Sorts a tile of 2^TILE_BITS words in shared memory (its last ones may be the largest word):
// one block of 2^(TILE_BITS - E_BITS) threads, w holding each thread's words.
template <typename W, u32 TILE_BITS> __device__ __forceinline__ void sort_block(W *tile, W *w) {
    sort_registers<W>(w);
#pragma unroll
    for (u32 r = 0; r < (1u << MergeTile<W>::E_BITS); ++r) tile[merge_slot<W>(merge_index<W, 0>(threadIdx.x, r))] = w[r];
    __syncthreads();
    sort_stages<W, int(MergeTile<W>::E_BITS), int(TILE_BITS)>(tile);
}

// The sorted keys of a tile as a binary search tree in breadth-first order (the Eytzinger
// layout): node 1 is the root, node k's children are 2k and 2k + 1. A search's probes at one
// depth then lie in one contiguous stretch, where those of a binary search over the sorted
// array lie 2^k apart and so in one shared-memory bank. tree_node(i) is the node of the tile's
// i-th smallest key, i < 2^BITS - 1 (a perfect tree: the largest key is left out, and no key of
// the tile is above it).
template <u32 BITS> __device__ __forceinline__ u32 tree_node(u32 i) {
    const u32 j = i + 1, below = __ffs(j) - 1; // j's trailing zeros: the node's height
    return (1u << (BITS - 1 - below)) + (j >> (below + 1));
}

// How many of the tree's keys are below `key`: the path down the tree, read as a number. The
// path is held as its node's byte offset in shared memory, so that a step down is a load, a
// comparison and one shift-and-add (a node index would cost a multiply for every load).
template <typename K, u32 BITS> __device__ __forceinline__ u32 rank_in_tree(const K *tree, K key) {
    const char *tree_bytes = reinterpret_cast<const char *>(tree);
    u32 at = sizeof(K); // node 1
#pragma unroll
    for (u32 depth = 0; depth < BITS; ++depth)
        at = 2 * at + (*reinterpret_cast<const K *>(tree_bytes + at) < key ? u32(sizeof(K)) : 0u);
    return at / u32(sizeof(K)) - (1u << BITS);
}

// Tile b's keys (keys[b T, b T + T), mapped by `map` here) were sorted into `sorted` (sortable
// words) by the tuned tile sort; each key's value is to move to where the key went: values[i]
// to out_values[d], values == nullptr meaning the values are positions (argsort). Key i goes to
// its rank among the sorted keys, plus, where it has equal keys, the number of them before it
// (stability). place_values counts those in the block when a tile has a few equal keys (a
// list of them in shared memory, each scanned by all); a tile with many (few distinct keys)
// is flagged for place_equal_values, a second launch that sorts the words (rank << TILE_BITS)
// | i, distinct and ordered as the stable order, with the bitonic network: word d names the key
// whose value goes to d. `unmap` (0: none) unmaps the sorted keys in place: a single tile.
//
// Dynamic shared memory: one region that the search tree, then the values (and in
// place_equal_values the network's padded words) use in turn, the larger of T keys, T values and
// the padded tile of T u32 words; after it each key's place, a u16 (place_shared_bytes in
// src/cuda/merge.rs). The places wait in
// shared memory, not in registers, so that two blocks of T / 16 threads fit an SM and one
// block's searches overlap the other's loads.

// A placement block's tile: tile blockIdx.x of 2^TILE_BITS keys, T / 16 threads; thread t's
// r-th key is tile index r 2^THREAD_BITS + t, so a warp's keys are neighbours (coalesced).
// WHOLE: the tile has all T keys (every tile but a last short one), so no index needs a check.
template <u32 TILE_BITS_, bool WHOLE> struct PlaceTile {
    static const u32 TILE_BITS = TILE_BITS_, KEYS_A_THREAD = 16, THREAD_BITS = TILE_BITS - 4, T = 1u << TILE_BITS;
    static_assert(TILE_BITS <= 15, "a place and its equal-key flag fit a u16");
    u64 t0;
    u32 len;
    __device__ explicit PlaceTile(u64 n) : t0(u64(blockIdx.x) << TILE_BITS), len(u32(min(n - t0, u64(T)))) {}
    __device__ static u32 index(u32 r) { return (r << THREAD_BITS) | threadIdx.x; }
    __device__ bool holds(u32 i) const { return WHOLE || i < len; }
    // Whether this block's tile of n keys has all T.
    __device__ static bool whole(u64 n) { return n - (u64(blockIdx.x) << TILE_BITS) >= T; }
};

// Marks a key's place while the keys equal to it are being counted.
#define HAS_EQUAL_KEYS 0x8000u

// Where the places start: after the tree / values / words region.
template <typename K, typename V, u32 TILE_BITS> __device__ __forceinline__ unsigned short *key_places() {
    const u32 T = 1u << TILE_BITS, keys = T * sizeof(K), values = T * sizeof(V), words = padded_tile<u32>(T) * 4;
    const u32 region = max(max(keys, values), words);
    return reinterpret_cast<unsigned short *>(shared_tile<unsigned char>() + region);
}

// Builds the tile's search tree, then writes each key's rank among the tile's sorted keys to
// places[i]. Returns, for the whole block, whether the sorted tile has equal neighbours (a
// key's right neighbour from the next lane; lane 31's from memory).
template <typename K, typename Tile>
__device__ __forceinline__ bool rank_keys(const K *keys, const K *sorted, Tile tile, u32 map, unsigned short *places) {
    K *tree = shared_tile<K>();
    bool equal_neighbours = false;
#pragma unroll
    for (u32 r = 0; r < Tile::KEYS_A_THREAD; ++r) {
        const u32 i = Tile::index(r);
        const K key = tile.holds(i) ? sorted[tile.t0 + i] : largest_key<K>();
        K next = __shfl_down_sync(FULL_WARP_MASK, key, 1);
        if (threadIdx.x % WARP_SIZE == WARP_SIZE - 1 && tile.holds(i + 1)) next = sorted[tile.t0 + i + 1];
        equal_neighbours |= tile.holds(i + 1) && key == next;
        if (i + 1 < Tile::T) tree[tree_node<Tile::TILE_BITS>(i)] = key;
    }
    equal_neighbours = __syncthreads_or(equal_neighbours);
#pragma unroll 4
    for (u32 r = 0; r < Tile::KEYS_A_THREAD; ++r) {
        const u32 i = Tile::index(r);
        if (tile.holds(i)) places[i] = rank_in_tree<K, Tile::TILE_BITS>(tree, to_sortable(keys[tile.t0 + i], map));
    }
    __syncthreads();
    return equal_neighbours;
}

// The most keys with equal ones a tile may have for place_values to order them itself.
#define FEW_EQUAL_KEYS 256

// Adds to each key's place the count of equal keys before it, from a list of the keys that
// have an equal one, as (rank << TILE_BITS) | i, each scanning the list for words of its rank
// with a smaller i. Returns false when the list would hold more than FEW_EQUAL_KEYS (the
// places are then left marked, for place_equal_values to redo).
template <typename K, typename Tile>
__device__ __forceinline__ bool order_few_equal_keys(const K *sorted, Tile tile, unsigned short *places) {
    __shared__ u32 equal_keys[FEW_EQUAL_KEYS], equal_count;
    if (threadIdx.x == 0) equal_count = 0;
    __syncthreads();
#pragma unroll
    for (u32 r = 0; r < Tile::KEYS_A_THREAD; ++r) {
        const u32 i = Tile::index(r), d = tile.holds(i) ? places[i] : 0;
        if (tile.holds(i) && tile.holds(d + 1) && sorted[tile.t0 + d + 1] == sorted[tile.t0 + d]) {
            places[i] = d | HAS_EQUAL_KEYS;
            const u32 slot = atomicAdd(&equal_count, 1u);
            if (slot < FEW_EQUAL_KEYS) equal_keys[slot] = (d << Tile::TILE_BITS) | i;
        }
    }
    __syncthreads();
    const u32 count = equal_count;
    if (count > FEW_EQUAL_KEYS) return false;
#pragma unroll
    for (u32 r = 0; r < Tile::KEYS_A_THREAD; ++r) {
        const u32 i = Tile::index(r), d = tile.holds(i) ? places[i] : 0;
        if (!(d & HAS_EQUAL_KEYS)) continue;
        const u32 rank = d & ~HAS_EQUAL_KEYS, word = (rank << Tile::TILE_BITS) | i;
        u32 before = 0;
        for (u32 k = 0; k < count; ++k) {
            const u32 other = equal_keys[k];
            before += other >> Tile::TILE_BITS == rank && other < word;
        }
        places[i] = rank + before;
    }
    __syncthreads();
    return true;
}

// Unmaps the sorted keys (a single tile), then moves each value to its key's place, through
// shared memory so that the stores are coalesced.
template <typename K, typename V, typename Tile>
__device__ __forceinline__ void move_values(K *sorted, const V *values, V *out_values, Tile tile, u32 unmap,
                                            const unsigned short *places) {
    V *tile_values = shared_tile<V>();
#pragma unroll 4
    for (u32 r = 0; r < Tile::KEYS_A_THREAD; ++r) {
        const u32 i = Tile::index(r);
        if (!tile.holds(i)) continue;
        if (unmap) sorted[tile.t0 + i] = from_sortable(sorted[tile.t0 + i], unmap);
        if (values) copy_async(&tile_values[places[i]], &values[tile.t0 + i]);
        else tile_values[places[i]] = V(tile.t0 + i);
    }
    wait_async_copies();
    __syncthreads();
#pragma unroll 4
    for (u32 r = 0; r < Tile::KEYS_A_THREAD; ++r) {
        const u32 d = Tile::index(r);
        if (tile.holds(d)) out_values[tile.t0 + d] = tile_values[d];
    }
}

template <typename K, typename V, typename Tile>
__device__ __forceinline__ void place_values_of(const K *keys, K *sorted, const V *values, V *out_values, Tile tile,
                                                u32 map, u32 unmap, u32 *equal_tiles) {
    unsigned short *places = key_places<K, V, Tile::TILE_BITS>();
    const bool many_equal =
        rank_keys(keys, sorted, tile, map, places) && !order_few_equal_keys(sorted, tile, places);
    if (threadIdx.x == 0) equal_tiles[blockIdx.x] = many_equal;
    if (!many_equal) move_values(sorted, values, out_values, tile, unmap, places);
}

template <typename K, typename V, u32 TILE_BITS>
__device__ void place_values(const K *keys, K *sorted, const V *values, V *out_values, u64 n, u32 map, u32 unmap,
                             u32 *equal_tiles) {
    if (PlaceTile<TILE_BITS, true>::whole(n))
        place_values_of(keys, sorted, values, out_values, PlaceTile<TILE_BITS, true>(n), map, unmap, equal_tiles);
    else
        place_values_of(keys, sorted, values, out_values, PlaceTile<TILE_BITS, false>(n), map, unmap, equal_tiles);
}

// The rare tiles with many equal keys: no need for a whole-tile copy of the code.
template <typename K, typename V, u32 TILE_BITS>
__device__ void place_equal_values(const K *keys, K *sorted, const V *values, V *out_values, u64 n, u32 map,
                                   u32 unmap, const u32 *equal_tiles) {
    typedef PlaceTile<TILE_BITS, false> Tile;
    if (!equal_tiles[blockIdx.x]) return;
    const Tile tile(n);
    unsigned short *places = key_places<K, V, TILE_BITS>();
    rank_keys(keys, sorted, tile, map, places);
    u32 w[Tile::KEYS_A_THREAD];
#pragma unroll
    for (u32 r = 0; r < Tile::KEYS_A_THREAD; ++r) {
        const u32 i = Tile::index(r);
        w[r] = tile.holds(i) ? (u32(places[i]) << TILE_BITS) | i : largest_key<u32>();
    }
    u32 *tile_words = shared_tile<u32>(); // the tree's region: the tree is done with
    sort_block<u32, TILE_BITS>(tile_words, w);
    // The sorted word d names the key whose value goes to d.
#pragma unroll
    for (u32 r = 0; r < Tile::KEYS_A_THREAD; ++r) {
        const u32 d = Tile::index(r), word = tile_words[merge_slot<u32>(d)];
        if (tile.holds(d)) places[word & (Tile::T - 1)] = d;
    }
    __syncthreads();
    move_values(sorted, values, out_values, tile, unmap, places);
}

#define CO_RANKS_PARAMS(W) (const W *a, u64 a_len, const W *b, u64 b_len, u64 *ranks, u32 count)
EXPORT_FOR_ALL_WORDS(co_ranks, CO_RANKS_PARAMS, (a, a_len, b, b_len, ranks, count))
#define MERGE_TILES_PARAMS(W) (const W *a, const W *b, const u64 *ranks, W *out, u64 total)
EXPORT_FOR_ALL_WORDS(merge_tiles, MERGE_TILES_PARAMS, (a, b, ranks, out, total))
#define LEVEL_CO_RANKS_PARAMS(W) (const W *keys, u64 n, u64 run_len, u64 *ranks, u32 tiles)
EXPORT_FOR_ALL_WORDS(level_co_ranks, LEVEL_CO_RANKS_PARAMS, (keys, n, run_len, ranks, tiles))
#define MERGE_LEVEL_PARAMS(W) (const W *keys, u64 n, u64 run_len, const u64 *ranks, W *out, u32 map)
EXPORT_FOR_ALL_WORDS(merge_level, MERGE_LEVEL_PARAMS, (keys, n, run_len, ranks, out, map))

// Key-value kernels, name_kv_K_V for keys K and values V (u32 or u64 words): a level's merge
// and the value placement after the tuned tile sort (tiles of 2^14 u32 keys, 2^13 u64: the
// tuned version's). The bounds cap registers (80 a merge thread, no spills: three blocks an
// SM).
#define EXPORT_KV(K, V, TILE_BITS)                                                                \
    extern "C" __global__ void __launch_bounds__(256, 3)                                          \
        merge_level_kv_##K##_##V(const K *keys, const V *values, u64 n, u64 run_len, const u64 *ranks, K *out, \
                                 V *out_values, u32 map) {                                        \
        merge_level_kv<K, V>(keys, values, n, run_len, ranks, out, out_values, map);             \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(1u << (TILE_BITS - 4), 2)                         \
        place_values_kv_##K##_##V(const K *keys, K *sorted, const V *values, V *out_values, u64 n, u32 map, \
                                  u32 unmap, u32 *equal_tiles) {                                  \
        place_values<K, V, TILE_BITS>(keys, sorted, values, out_values, n, map, unmap, equal_tiles); \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(1u << (TILE_BITS - 4), 1)                         \
        place_equal_values_kv_##K##_##V(const K *keys, K *sorted, const V *values, V *out_values, u64 n, \
                                        u32 map, u32 unmap, const u32 *equal_tiles) {             \
        place_equal_values<K, V, TILE_BITS>(keys, sorted, values, out_values, n, map, unmap, equal_tiles); \
    }
// The merge paths of a level in the key-value merge's tiles.
#define EXPORT_KV_CO_RANKS(K)                                                                     \
    extern "C" __global__ void level_co_ranks_kv_##K(const K *keys, u64 n, u64 run_len, u64 *ranks, u32 tiles) { \
        level_co_ranks_in<K, MergeTile<Tagged<K>::Word>::TILE_BITS>(keys, n, run_len, ranks, tiles);       \
    }
EXPORT_KV(u32, u32, 14)
EXPORT_KV(u32, u64, 14)
EXPORT_KV(u64, u32, 13)
EXPORT_KV(u64, u64, 13)
EXPORT_KV_CO_RANKS(u32)
EXPORT_KV_CO_RANKS(u64)
