// Value placement after the tuned tile sort: each value moves to its key's rank in its tile
// (a search tree in shared memory), equal keys by index.
#pragma once

#include "merge/tile.cuh"

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
// src/plan/merge.rs). The places wait in
// shared memory, not in registers, so that two blocks of T / 16 threads fit an SM and one
// block's searches overlap the other's loads.

// A placement block's tile: tile blockIdx.x of 2^TILE_BITS keys, T / 16 threads; thread t's
// r-th key is tile index r 2^THREAD_BITS + t, so a warp's keys are neighbours (coalesced).
// WHOLE: the tile has all T keys (every tile but a last short one), so no index needs a check.
#ifndef KERNEL_PLACE_KEYS_PER_THREAD
#error "the host passes KERNEL_PLACE_KEYS_PER_THREAD (src/policy/merge.rs)"
#endif
static_assert(KERNEL_PLACE_KEYS_PER_THREAD == 16, "a placement thread holds 16 keys (THREAD_BITS below)");
template <u32 TILE_BITS_, bool WHOLE> struct PlaceTile {
    static const u32 TILE_BITS = TILE_BITS_, KEYS_A_THREAD = KERNEL_PLACE_KEYS_PER_THREAD,
                     THREAD_BITS = TILE_BITS - 4, T = 1u << TILE_BITS;
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
