// Block level: one block merges one tile of the output in registers and shared memory (the
// merge tile), for words alone and for keys with their values.
#pragma once

#include "common/types.cuh"
#include "common/keys.cuh"
#include "common/compare.cuh"
#include "common/memory.cuh"

#if !defined(KERNEL_MERGE_TILE) || !defined(KERNEL_MERGE_THREADS) || !defined(KERNEL_MERGE_PAD_BYTES)
#error "the host passes KERNEL_MERGE_TILE, KERNEL_MERGE_THREADS and KERNEL_MERGE_PAD_BYTES (src/policy/)"
#endif

__host__ __device__ constexpr u32 log2_of(u32 x) { return x <= 1 ? 0 : 1 + log2_of(x / 2); }
static_assert(KERNEL_MERGE_TILE == 1u << log2_of(KERNEL_MERGE_TILE), "a merge tile of 2^k words");
static_assert(KERNEL_MERGE_THREADS == 1u << log2_of(KERNEL_MERGE_THREADS), "2^k merge threads");

// The key-value parts of 32-bit keys merge 8-byte tagged words in the policy's key-value merge
// tile (KERNEL_KV_MERGE_TILE: its values share the block's shared memory); elsewhere 8-byte
// words are keys alone, in the merge tile.
#if defined(KERNEL_PART_KV_U32_U32) || defined(KERNEL_PART_KV_U32_U64)
#if !defined(KERNEL_KV_MERGE_TILE)
#error "the host passes KERNEL_KV_MERGE_TILE (src/policy/)"
#endif
#define MERGE_TILE_OF_8_BYTES KERNEL_KV_MERGE_TILE
static_assert(KERNEL_KV_MERGE_TILE == 1u << log2_of(KERNEL_KV_MERGE_TILE), "a key-value merge tile of 2^k words");
#else
#define MERGE_TILE_OF_8_BYTES KERNEL_MERGE_TILE
#endif

// The merge tile of words W, the policy's: KERNEL_MERGE_TILE words (16-byte key-index pairs:
// half as many; see above for 8-byte words) in KERNEL_MERGE_THREADS threads, E = 2^E_BITS
// words a thread (on Hopper 16, and 8 for key-index pairs and for the key-value parts' tagged
// words).
template <typename W> struct MergeTile {
    static const u32 THREAD_BITS = log2_of(KERNEL_MERGE_THREADS);
    static const u32 TILE_BITS = sizeof(W) == 8    ? log2_of(MERGE_TILE_OF_8_BYTES)
                                 : sizeof(W) == 16 ? log2_of(KERNEL_MERGE_TILE) - 1
                                                   : log2_of(KERNEL_MERGE_TILE);
    static const u32 E_BITS = TILE_BITS - THREAD_BITS;
};

// Shared-memory slot of tile index i: one word of padding after every KERNEL_MERGE_PAD_BYTES
// (128: a wavefront's bytes), so that the lanes of a warp hit distinct banks in every phase's
// loads and stores. The map is additive over indices with disjoint bits, so a thread's slots in
// a phase are one base plus constants.
static_assert(KERNEL_MERGE_PAD_BYTES == 128, "the slots' shifts below are for 128 bytes");
template <typename W> __device__ __forceinline__ u32 merge_slot(u32 i) {
    const u32 words_a_wavefront_bits = sizeof(W) == 4 ? 5 : sizeof(W) == 8 ? 4 : 3;
    return i + (i >> words_a_wavefront_bits);
}

// Shared-memory words a tile of T words takes with its padding (MergePolicy::padded_tile_bytes
// on the host).
template <typename W> __host__ __device__ constexpr u32 padded_tile(u32 t) {
    return t + t / (KERNEL_MERGE_PAD_BYTES / sizeof(W));
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
        w.value = 0;
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
