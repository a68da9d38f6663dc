// Pass level: one launch's tile of the array (contiguous or strided), its loads and stores,
// and the run of steps it makes.
#pragma once

#include "tuned/tile_sort.cuh"
#include "tuned/cluster.cuh"
#include "tuned/packing.cuh"

// What every register group of one pass needs to know.
template <typename K> struct Pass {
    const K *src; // where the tile is read: `keys`, or another array of the same layout
    K *keys;      // where the tile is written
    RowLayout layout;
    u32 tile_bits, col_bits, lo, b_last, map;
    bool contiguous;    // lo == col_bits: the tile is one run of adjacent slots
    bool aligned;       // keys start on a 16-byte boundary (vector accesses allowed)
    Packing packing;    // a pass of pairs that packs the caller's keys or unpacks them
    int mirror_row_bit; // >= 0 when a stage starts in a strided pass: see global_index
};

// Where tile index i lives in the array. A contiguous tile is plain. In a strided tile the
// low col_bits bits are the column, the rest the row, at global bit lo; the block index gives
// the bits between (mid) and above. When a stage starts in the pass, the rows with bit
// `mirror_row_bit` set take the mid bits complemented (the flip's partners, see the top).
template <typename K> __device__ __forceinline__ u32 global_index(const Pass<K> &p, u32 i) {
    if (p.contiguous) return (blockIdx.x << p.tile_bits) | i;
    const u32 col_bits = p.col_bits, mid_bits = p.lo - col_bits;
    u32 col = i & ((1u << col_bits) - 1), row = i >> col_bits;
    u32 mid = blockIdx.x & ((1u << mid_bits) - 1), high = blockIdx.x >> mid_bits;
    if (p.mirror_row_bit >= 0 && ((row >> p.mirror_row_bit) & 1)) mid ^= (1u << mid_bits) - 1;
    return (high << (p.lo + p.tile_bits - col_bits)) | (row << p.lo) | (mid << col_bits) | col;
}

// The tile bit holding global bit g.
template <typename K> __device__ __forceinline__ u32 tile_bit(const Pass<K> &p, u32 g) {
    return g < p.col_bits ? g : g - p.lo + p.col_bits;
}

// Whether register group Q0 may read and write global memory directly: its lanes cover 32
// adjacent keys (Q0 >= 5), slot g is key g, and its register bits map to global bits in one
// run (the group lies wholly in the tile's row bits, or the tile is contiguous).
// A pass that packs or unpacks pairs stages its tile (stage_in, stage_out).
template <typename K> __device__ __forceinline__ bool direct_group(const Pass<K> &p, u32 Q0) {
    return Q0 >= 5 && p.layout.contiguous && (p.contiguous || Q0 >= p.col_bits) &&
           (!holds_pairs<K> || p.packing.flags == 0);
}

// One key by tile index, for the staging loops.
template <typename K> __device__ __forceinline__ K load_key(const Pass<K> &p, u32 i) {
    u32 at = key_index(p.layout, global_index(p, i));
    if (at == PADDING) return largest_key<K>(); // acts as +inf and never moves
    K key = p.src[at];
    return (p.map & MAP_ON_LOAD) ? to_sortable(key, p.map) : key;
}

template <typename K> __device__ __forceinline__ void store_key(const Pass<K> &p, u32 i, K key) {
    u32 at = key_index(p.layout, global_index(p, i));
    if (at != PADDING) p.keys[at] = (p.map & MAP_ON_STORE) ? from_sortable(key, p.map) : key;
}

// 16 bytes of keys (4 u32, 2 u64 or one KeyIndex) in one vector access.
template <typename K> struct Vector16;
template <> struct Vector16<u32> {
    static const u32 KEYS = 4;
    static __device__ __forceinline__ void load(const u32 *src, u32 *k) {
        uint4 q = *reinterpret_cast<const uint4 *>(src);
        k[0] = q.x, k[1] = q.y, k[2] = q.z, k[3] = q.w;
    }
    static __device__ __forceinline__ void store(u32 *dst, const u32 *k) {
        *reinterpret_cast<uint4 *>(dst) = make_uint4(k[0], k[1], k[2], k[3]);
    }
};
template <> struct Vector16<u64> {
    static const u32 KEYS = 2;
    static __device__ __forceinline__ void load(const u64 *src, u64 *k) {
        ulonglong2 q = *reinterpret_cast<const ulonglong2 *>(src);
        k[0] = q.x, k[1] = q.y;
    }
    static __device__ __forceinline__ void store(u64 *dst, const u64 *k) {
        *reinterpret_cast<ulonglong2 *>(dst) = make_ulonglong2(k[0], k[1]);
    }
};
template <> struct Vector16<KeyIndex> {
    static const u32 KEYS = 1;
    static __device__ __forceinline__ void load(const KeyIndex *src, KeyIndex *k) { k[0] = *src; }
    static __device__ __forceinline__ void store(KeyIndex *dst, const KeyIndex *k) { *dst = k[0]; }
};

// One register group: each thread takes the E keys whose tile indices differ in bits
// Q0 .. Q0+E_BITS-1 (a compile-time Q0 makes every shared-memory address a constant offset),
// runs the steps of stage b from global bit g down to `stop` while their tile bit stays in the
// group, and puts the keys back. The first group of a pass reads straight from global memory
// and the last writes straight back where `direct_group` allows.
// Returns the global bit of the next step; sets `*stored` when the keys went to global memory.
template <typename T, u32 Q0, typename K = typename T::K>
__device__ int register_group(const Pass<K> &p, K *tile, u32 b, int g, u32 stop, bool first, bool *stored) {
    const u32 E_BITS = T::E_BITS, E = 1u << E_BITS;
    const u32 t = threadIdx.x;
    const u32 tb = tile_bit(p, u32(g));
    const u32 thread_part = (t & ((1u << Q0) - 1)) | ((t >> Q0) << (Q0 + E_BITS));
    // A flip's mirror in tile bits: every bit up to tb (a strided tile's mid bits were mirrored
    // at load). Its part below Q0 belongs to the thread index: the upper half of the registers
    // comes from the mirrored thread, so that every pair of the flip meets inside this thread.
    const u32 mirror = u32(g) == b ? (2u << tb) - 1 : 0;
    const u32 thread_mirror = mirror & ((1u << Q0) - 1);
    const u32 upper_bit = tb - Q0;
    // Direct reads and writes keep this unrolled code small: the other layouts go through
    // the staging loops.
    const bool direct = direct_group(p, Q0);
    const bool direct_in = first && direct;
    const u32 slot_lo = slot<T>(thread_part), slot_hi = slot<T>(thread_part ^ thread_mirror);

    // Global index of register r for the direct reads and writes: the index of register 0 of
    // the thread's half, with r's bits (less the half bit) at rshift.
    const u32 rshift = p.contiguous ? Q0 : Q0 - p.col_bits + p.lo;
    const u32 half_bit = 1u << upper_bit;
    const u32 g_lo = direct ? global_index(p, thread_part) : 0;
    const u32 g_hi = direct ? global_index(p, (thread_part ^ thread_mirror) | (half_bit << Q0)) : 0;

    K k[E];
    if (direct_in) {
#pragma unroll
        for (u32 r = 0; r < E; ++r) {
            u32 g_r = ((r & half_bit) ? g_hi : g_lo) ^ ((r & ~half_bit) << rshift);
            K key = g_r < p.layout.n ? p.src[g_r] : largest_key<K>();
            k[r] = (p.map & MAP_ON_LOAD) && g_r < p.layout.n ? to_sortable(key, p.map) : key;
        }
    } else if (thread_mirror == 0) { // most groups: every address a constant offset
#pragma unroll
        for (u32 r = 0; r < E; ++r) k[r] = tile[slot_lo ^ slot<T>(r << Q0)];
    } else {
#pragma unroll
        for (u32 r = 0; r < E; ++r) k[r] = tile[((r & half_bit) ? slot_hi : slot_lo) ^ slot<T>(r << Q0)];
    }
    // The steps whose tile bits lie in this group, from the top: a flip first if the group
    // starts a stage, then half-cleaners.
    const u32 j_top = tb - Q0;
    const u32 count = tb - max(Q0, tile_bit(p, stop)) + 1;
    if (u32(g) == b) {
        flip_on_bits<T>(k, j_top);
        if (count > 1) steps_down<T>(k, j_top - 1, count - 1);
    } else {
        steps_down<T>(k, j_top, count);
    }
    g -= int(count);
    const bool direct_out = g < int(stop) && b == p.b_last && direct;
    if (direct_out) {
#pragma unroll
        for (u32 r = 0; r < E; ++r) {
            u32 g_r = ((r & half_bit) ? g_hi : g_lo) ^ ((r & ~half_bit) << rshift);
            if (g_r < p.layout.n) p.keys[g_r] = (p.map & MAP_ON_STORE) ? from_sortable(k[r], p.map) : k[r];
        }
    } else if (thread_mirror == 0) {
#pragma unroll
        for (u32 r = 0; r < E; ++r) tile[slot_lo ^ slot<T>(r << Q0)] = k[r];
    } else {
#pragma unroll
        for (u32 r = 0; r < E; ++r) tile[((r & half_bit) ? slot_hi : slot_lo) ^ slot<T>(r << Q0)] = k[r];
    }
    if (!direct_out) __syncthreads();
    *stored = direct_out;
    return g;
}

// The register group holding tile bit tb: aligned groups of E_BITS bits, the last one
// shifted down to end at the tile's top bit.
template <typename T> __device__ __forceinline__ u32 group_start(u32 tb) {
    const u32 E_BITS = T::E_BITS;
    return min(E_BITS * (tb / E_BITS), TILE_BITS - E_BITS);
}

// Whether some tile bit's group starts at q0 (group_start's values): only those groups are
// compiled.
template <typename T, u32 Q0>
constexpr bool is_group_start = (Q0 % T::E_BITS == 0 && Q0 + T::E_BITS <= TILE_BITS) || Q0 == TILE_BITS - T::E_BITS;

// 16 bytes of keys from tile index i on (i a multiple of the vector's keys: a strided tile's
// rows hold at least 32 adjacent keys, so they are adjacent in the array too), mapped; keys
// past the end of the array read as +inf.
template <typename K> __device__ __forceinline__ void load_vector(const Pass<K> &p, u32 i, K *k) {
    const u32 V = Vector16<K>::KEYS, at = global_index(p, i);
    if (at + V <= p.layout.n) {
        Vector16<K>::load(p.src + at, k);
#pragma unroll
        for (u32 e = 0; e < V; ++e) k[e] = (p.map & MAP_ON_LOAD) ? to_sortable(k[e], p.map) : k[e];
    } else {
#pragma unroll
        for (u32 e = 0; e < V; ++e) k[e] = load_key(p, i + e);
    }
}

template <typename K> __device__ __forceinline__ void store_vector(const Pass<K> &p, u32 i, K *k) {
    const u32 V = Vector16<K>::KEYS, at = global_index(p, i);
    if (at + V <= p.layout.n) {
#pragma unroll
        for (u32 e = 0; e < V; ++e) k[e] = (p.map & MAP_ON_STORE) ? from_sortable(k[e], p.map) : k[e];
        Vector16<K>::store(p.keys + at, k);
    } else {
#pragma unroll
        for (u32 e = 0; e < V; ++e) store_key(p, i + e, k[e]);
    }
}

// The staging loops: consecutive threads take consecutive tile indices, in 16-byte vectors
// where slot g is key g (fewer instructions: the tile sort and the row sorts are
// instruction-bound). A strided tile's rows lie far apart in
// the array: there every thread issues all its E keys' loads before it stores any, so that
// they are in flight together (tile_len = blockDim.x * E). Contiguous tiles keep the rolled
// loops, faster for inputs that fit in L2 (docs/notes/tuned.md has the measurements).
template <typename T, typename K = typename T::K> __device__ __forceinline__ void stage_in(const Pass<K> &p, K *tile) {
    const u32 E = 1u << T::E_BITS, V = Vector16<K>::KEYS, tile_len = 1u << p.tile_bits;
    if constexpr (holds_pairs<K>) {
        if (p.packing.flags & PACK_ON_LOAD) { // the caller's keys, each with its index in its row
            const u32 row_mask = (1u << p.layout.row_bits) - 1;
            for (u32 i = threadIdx.x; i < tile_len; i += blockDim.x) {
                const u32 g = global_index(p, i), at = key_index(p.layout, g);
                K word = largest_key<K>();
                if (at != PADDING) pack_pair(word, p.packing, at, g & row_mask);
                tile[slot<T>(i)] = word;
            }
            __syncthreads();
            return;
        }
    }
    if (!p.layout.contiguous || !p.aligned) {
        for (u32 i = threadIdx.x; i < tile_len; i += blockDim.x) tile[slot<T>(i)] = load_key(p, i);
    } else if (p.contiguous) {
        for (u32 i = threadIdx.x * V; i < tile_len; i += blockDim.x * V) {
            K k[V];
            load_vector(p, i, k);
#pragma unroll
            for (u32 e = 0; e < V; ++e) tile[slot<T>(i + e)] = k[e];
        }
    } else {
        K k[E];
#pragma unroll
        for (u32 r = 0; r < E / V; ++r) load_vector(p, (r * blockDim.x + threadIdx.x) * V, k + r * V);
#pragma unroll
        for (u32 r = 0; r < E / V; ++r)
#pragma unroll
            for (u32 e = 0; e < V; ++e) tile[slot<T>((r * blockDim.x + threadIdx.x) * V + e)] = k[r * V + e];
    }
    __syncthreads();
}

template <typename T, typename K = typename T::K> __device__ __forceinline__ void stage_out(const Pass<K> &p, const K *tile) {
    const u32 V = Vector16<K>::KEYS, tile_len = 1u << p.tile_bits;
    if constexpr (holds_pairs<K>) {
        if (p.packing.flags & UNPACK_ON_STORE) { // the first k of each row, to the caller's outputs
            for (u32 i = threadIdx.x; i < tile_len; i += blockDim.x) {
                const u32 g = global_index(p, i);
                if (key_index(p.layout, g) != PADDING) unpack_pair(p.packing, p.layout, g, tile[slot<T>(i)]);
            }
            return;
        }
    }
    if (!p.layout.contiguous || !p.aligned) {
        for (u32 i = threadIdx.x; i < tile_len; i += blockDim.x) store_key(p, i, tile[slot<T>(i)]);
        return;
    }
    for (u32 i = threadIdx.x * V; i < tile_len; i += blockDim.x * V) {
        K k[V];
#pragma unroll
        for (u32 e = 0; e < V; ++e) k[e] = tile[slot<T>(i + e)];
        store_vector(p, i, k);
    }
}

// One pass, from `src` to `keys`: stages b_first .. b_last, stage b_first from global bit hi_first down, every stage
// down to bit 0 but the last, which stops at bit `stop`. A strided pass holds at most one
// stage start: its first step (hi_first == b_first), or stage b_last's in a window.
template <typename T, typename K = typename T::K>
__device__ void tuned_pass(const K *src, K *keys, const RowLayout &layout, u32 col_bits, u32 lo, u32 b_first,
                           u32 b_last, u32 hi_first, u32 stop, u32 map, const Packing &packing) {
    const u32 tile_bits = TILE_BITS;
    K *tile = shared_tile<K>();
    Pass<K> p;
    p.src = src;
    p.keys = keys;
    p.layout = layout;
    p.tile_bits = tile_bits;
    p.col_bits = col_bits;
    p.lo = lo;
    p.b_last = b_last;
    p.map = map;
    p.packing = packing;
    p.contiguous = lo == col_bits;
    p.aligned = ((reinterpret_cast<size_t>(src) | reinterpret_cast<size_t>(keys)) & 15) == 0;
    const u32 stage_start = hi_first == b_first ? b_first : b_last; // b_last > b_first: a window
    const bool starts_stage = hi_first == b_first || b_last > b_first;
    p.mirror_row_bit = (!p.contiguous && starts_stage) ? int(tile_bit(p, stage_start) - col_bits) : -1;

    // A first group that cannot read global memory directly (see direct_group), and a pass
    // whose first step is a cluster step, start from the tile staged in shared memory.
    const u32 first_group = group_start<T>(tile_bit(p, hi_first));
    const bool starts_in_cluster = p.contiguous && hi_first >= tile_bits;
    if (!direct_group(p, first_group) || starts_in_cluster) stage_in<T>(p, tile);
    bool first = true, stored = false;
    u32 b_next = b_first;
    // A tile sort's first E_BITS+5 stages lie whole in each warp's keys: one trip through
    // shared memory for all of them, in straight-line code (sort_warp_keys); then each later stage
    // inside the block's tile, straight-line too. A cluster's stages follow below.
    if (b_first == 0 && p.contiguous && b_last + 1 >= T::E_BITS) {
        for (b_next = sort_warp_keys<T>(tile, min(b_last, tile_bits - 1)); b_next <= b_last && b_next < tile_bits; ++b_next)
            tile_sort_stage<T>(tile, b_next);
        first = false;
    }
    for (u32 b = b_next; b <= b_last; ++b) {
        int g = int(b == b_first ? hi_first : b); // global bit of the next step
        const u32 stage_stop = b == b_last ? stop : 0;
        while (g >= int(stage_stop)) {
            if (p.contiguous && u32(g) >= tile_bits) { // a bit of the cluster's tile
                cluster_step<T>(tile, tile_bits, b, u32(g--));
                first = false;
                continue;
            }
            switch (group_start<T>(tile_bit(p, u32(g)))) {
#define REGISTER_GROUP(Q0)                                                                         \
    case Q0:                                                                                       \
        if constexpr (is_group_start<T, Q0>) {                                                     \
            g = register_group<T, Q0>(p, tile, b, g, stage_stop, first, &stored);                 \
            break;                                                                                 \
        }                                                                                          \
        __trap();
                REGISTER_GROUP(0) REGISTER_GROUP(4) REGISTER_GROUP(5) REGISTER_GROUP(6) REGISTER_GROUP(7)
                REGISTER_GROUP(8) REGISTER_GROUP(9) REGISTER_GROUP(10)
#undef REGISTER_GROUP
            default: __trap(); // the host never asks for another group
            }
            first = false;
        }
    }
    if (!stored) stage_out<T>(p, tile);
}
