// The tuned sort: every launch is one *pass* that reads a tile of 2^tile_bits keys into shared
// memory, runs as many network steps on it as the tile's index bits allow, and writes it back.
// docs/notes/tuned.md explains the design and its measurements; src/cuda/plan.rs builds the
// list of passes. Four shapes of pass, all this one kernel:
//
//  * tile sort: a contiguous tile (tile bit i = global bit i) runs whole stages 0 .. b_last;
//  * strided pass: the tile is rows of 2^col_bits adjacent keys (tile bits 0 .. col_bits-1 are
//    global bits 0 .. col_bits-1; at least 5, so each warp still reads 32 adjacent keys), and
//    the rows lie 2^lo keys apart (tile bits col_bits.. are global bits lo..). It runs the
//    steps of one stage whose bits lie in lo .. hi_first;
//  * window: a strided pass that runs the last steps of stage b (bits hi_first .. 0, all in
//    its rows) and then the first steps of stage b+1 (bits b+1 .. stop, all in its row bits),
//    so that no pass is spent on a few leftover bits of a stage (src/cuda/plan.rs);
//  * tile merge: a contiguous tile runs the last steps (bits tile_bits-1 .. 0) of one stage.
//
// A strided pass in which a stage starts starts it with its *flip* step (i meets i ^
// (size-1)), which also flips global bits col_bits .. lo-1 outside the tile: so the rows of
// the tile's upper half are loaded with those bits complemented, which puts each key's flip
// partner in the same tile, at the tile's mirror index.
//
// On Hopper a contiguous pass can span a *cluster* of 2^c blocks: the cluster's tiles form one
// tile of 2^(tile_bits+c) keys, and a step on a bit above the block's tile runs between two
// blocks through distributed shared memory (`cluster_step`). A tile sort then covers c more
// stages and a tile merge c more steps, which saves whole passes over global memory.
//
// Inside the tile, a thread holds E = 2^E_BITS keys in registers whose tile indices differ in
// one aligned group of E_BITS bits; the steps on those bits run in registers (compile-time
// indices, branch-free min/max), then the keys go back to shared memory (XOR-swizzled against
// bank conflicts) and the next group of bits comes out. The key map (src/key.rs) is fused
// into the first pass's loads and the last pass's stores.
//
// The passes index slots, not keys: a RowLayout says where each slot's key lives, so the same
// passes sort one array, rows of a matrix (each padded to a power of two) or segments
// (src/cuda/pairs.rs). Keys are u32 or u64 words, or 16-byte key-index pairs.
#include "common.cuh"

// A tuning: the key word, E = 2^E_BITS keys a thread, the swizzle of the shared tile, and
// log2 of the most threads a block has.
template <typename Key, u32 E_BITS_, u32 SWIZZLE_BITS_, u32 THREAD_BITS_ = 10> struct Tuning {
    typedef Key K;
    static const u32 E_BITS = E_BITS_, SWIZZLE_BITS = SWIZZLE_BITS_;
    static const u32 MAX_TILE_BITS = E_BITS_ + THREAD_BITS_;
};
// u32: 32 keys a thread, 1024 threads -> up to 2^15 keys (128 KiB) per tile.
typedef Tuning<u32, 5, 5> WideU32;
// u32, 16 keys a thread: twice the threads for the same tile, for small inputs that one
// cluster sorts in one launch, where latency, not instruction count, sets the time.
typedef Tuning<u32, 4, 5> NarrowU32;
// u64: 16 keys a thread -> 2^14 keys (128 KiB) per tile with 1024 threads.
typedef Tuning<u64, 4, 4> WideU64;

// Options of the map argument, above the key-map flags of common.cuh.
#define MAP_ON_LOAD 8u
#define MAP_ON_STORE 16u

// Key-index pairs (common.cuh) sort by key, then index; 16 a thread, 256 threads.
typedef Tuning<KeyIndex, 4, 3, 8> PairTuning;

// Where the slots of the passes' index space live. The passes sort rows of 2^row_bits slots
// each; slot `col` of row `row` holds key start(row) + col while col < the row's length, and
// is padding (+inf, never moved) past it. A plain sort of n keys is one row.
struct RowLayout {
    const u32 *segment_start; // per row, or null: rows of row_len keys back to back
    const u32 *segment_len;
    u32 n;          // keys in all
    u32 row_bits;
    u32 row_len;
    u32 rows;
    u32 contiguous; // slot g is key g (one row, or rows of exactly 2^row_bits keys)
};

#define PADDING 0xffffffffu

// The key index of slot g, or PADDING.
__device__ __forceinline__ u32 key_index(const RowLayout &layout, u32 g) {
    if (layout.contiguous) return g < layout.n ? g : PADDING;
    u32 row = g >> layout.row_bits, col = g & ((1u << layout.row_bits) - 1);
    if (row >= layout.rows) return PADDING;
    if (layout.segment_start)
        return col < layout.segment_len[row] ? layout.segment_start[row] + col : PADDING;
    return col < layout.row_len ? row * layout.row_len + col : PADDING;
}

// Shared-memory slot of tile index i: the low SWIZZLE_BITS bits XORed with the next ones, so
// that a warp reading one key per lane at any power-of-two stride hits distinct banks.
template <typename T> __device__ __forceinline__ u32 slot(u32 i) {
    const u32 S = T::SWIZZLE_BITS;
    return i ^ ((i >> S) & ((1u << S) - 1));
}

// Register steps (order_pair: common.cuh).
// A half-cleaner step on register bit J: k[r] meets k[r | 2^J].
template <typename T, int J, typename K = typename T::K> __device__ __forceinline__ void register_step(K *k) {
    const int E = 1 << T::E_BITS;
#pragma unroll
    for (int r = 0; r < E; ++r)
        if (!(r & (1 << J))) order_pair(k[r], k[r | (1 << J)]);
}

// A flip step whose mirror covers register bits 0 .. JT: k[r] meets k[r ^ mask].
template <typename T, int JT, typename K = typename T::K> __device__ __forceinline__ void register_flip(K *k) {
    const int E = 1 << T::E_BITS;
    const int mask = (2 << JT) - 1;
#pragma unroll
    for (int r = 0; r < E; ++r)
        if (!(r & (1 << JT))) order_pair(k[r], k[r ^ mask]);
}

// Half-cleaner steps on register bits j, j-1, ... (count of them): straight-line code entered
// at bit j, so the keys stay in the same registers from one step to the next.
template <typename T, typename K = typename T::K> __device__ __forceinline__ void steps_down(K *k, u32 j, u32 count) {
    const int TOP = T::E_BITS > 4 ? 4 : 0; // 16-key groups have no bit 4
    switch (j) {
    case 4:
        register_step<T, TOP>(k);
        if (--count == 0) return;
        [[fallthrough]];
    case 3:
        register_step<T, 3>(k);
        if (--count == 0) return;
        [[fallthrough]];
    case 2:
        register_step<T, 2>(k);
        if (--count == 0) return;
        [[fallthrough]];
    case 1:
        register_step<T, 1>(k);
        if (--count == 0) return;
        [[fallthrough]];
    case 0:
        register_step<T, 0>(k);
    }
}

// A flip whose mirror covers register bits 0 .. jt.
template <typename T, typename K = typename T::K> __device__ __forceinline__ void flip_on_bits(K *k, u32 jt) {
    const int TOP = T::E_BITS > 4 ? 4 : 3; // the top register bit
    switch (jt) {
    case 0: register_flip<T, 0>(k); break;
    case 1: register_flip<T, 1>(k); break;
    case 2: register_flip<T, 2>(k); break;
    case 3: register_flip<T, 3>(k); break;
    case 4: register_flip<T, TOP>(k); break;
    }
}

// Half-cleaner steps on register bits J .. 0, straight-line.
template <typename T, int J, typename K = typename T::K> __device__ __forceinline__ void register_steps_down(K *k) {
    if constexpr (J >= 0) {
        register_step<T, J>(k);
        register_steps_down<T, J - 1>(k);
    }
}

// Lane steps. In a tile sort's first trip, thread t holds the E keys of tile indices
// t*E .. t*E+E-1, so tile bits E_BITS .. E_BITS+4 are the bits of its lane: a step on one of them
// runs between two lanes of a warp, with a shuffle, and the keys never leave the registers
// (docs/notes/tuned.md, step 23). A step on lane bit L keeps the smaller key in the lane whose
// bit L is 0: min or max by a per-thread choice, with no branch.
// Only 4-byte keys take lane steps (see sort_warp_keys).
template <typename K> constexpr bool has_lane_steps = sizeof(K) == 4;

// The first stage of a tile sort that runs group by group (tile_sort_stage): the stages below
// it run in sort_warp_keys.
template <typename T> constexpr u32 first_group_stage = has_lane_steps<typename T::K> ? T::E_BITS + 5 : T::E_BITS;

template <typename K> __device__ __forceinline__ K shuffle_xor(K v, u32 lane_mask) {
    return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}

template <typename K> __device__ __forceinline__ K keep(K mine, K theirs, bool upper) {
    return upper ? max(mine, theirs) : min(mine, theirs);
}

template <typename T, int L, typename K = typename T::K> __device__ __forceinline__ void lane_step(K *k) {
    const int E = 1 << T::E_BITS;
    const bool upper = threadIdx.x & (1u << L);
#pragma unroll
    for (int r = 0; r < E; ++r) k[r] = keep(k[r], shuffle_xor(k[r], 1u << L), upper);
}

// A flip whose mirror covers lane bits 0 .. L and every register bit: k[r] meets the partner
// lane's k[E-1-r]. Both of a mirrored pair are shuffled before either changes.
template <typename T, int L, typename K = typename T::K> __device__ __forceinline__ void lane_flip(K *k) {
    const int E = 1 << T::E_BITS;
    const u32 mirror = (2u << L) - 1;
    const bool upper = threadIdx.x & (1u << L);
#pragma unroll
    for (int r = 0; r < E / 2; ++r) {
        const K theirs_for_r = shuffle_xor(k[E - 1 - r], mirror), theirs_for_mirror = shuffle_xor(k[r], mirror);
        k[r] = keep(k[r], theirs_for_r, upper);
        k[E - 1 - r] = keep(k[E - 1 - r], theirs_for_mirror, upper);
    }
}

template <typename T, int L, typename K = typename T::K> __device__ __forceinline__ void lane_steps_down(K *k) {
    if constexpr (L >= 0) {
        lane_step<T, L>(k);
        lane_steps_down<T, L - 1>(k);
    }
}

// Stages E_BITS+L .. E_BITS+4 while they are at most `last`, in registers and lanes.
template <typename T, int L, typename K = typename T::K>
__device__ __forceinline__ void lane_stages_from(K *k, u32 last) {
    if constexpr (L <= 4 && has_lane_steps<K>) {
        if (T::E_BITS + L > last) return;
        lane_flip<T, L>(k);
        lane_steps_down<T, L - 1>(k);
        register_steps_down<T, T::E_BITS - 1>(k);
        lane_stages_from<T, L + 1>(k, last);
    }
}

// The first trip of a tile sort: stages 0 .. E_BITS-1 on each thread's E adjacent keys, then
// stages E_BITS .. up to `last` (at most E_BITS+4: a warp's keys) with lane steps, one trip
// through shared memory for all of them (the slot map is linear in XOR, so slot(t*E | r) =
// slot(t*E) ^ slot(r), and lanes hit distinct banks). Returns the next stage. Lane steps are
// for 4-byte keys only: an 8-byte key takes two shuffles a step, and u64 sorts measured slower
// with them (2^15: 0.056 → 0.088 ms, rows of pairs 8–13% slower); 8- and 16-byte keys stop at
// stage E_BITS-1 here.
template <typename T, typename K = typename T::K> __device__ __forceinline__ u32 sort_warp_keys(K *tile, u32 last) {
    const u32 E_BITS = T::E_BITS, E = 1u << E_BITS;
    const u32 base = slot<T>(threadIdx.x << E_BITS);
    K k[E];
#pragma unroll
    for (u32 r = 0; r < E; ++r) k[r] = tile[base ^ slot<T>(r)];
    register_flip<T, 0>(k);
    register_flip<T, 1>(k);
    register_step<T, 0>(k);
    register_flip<T, 2>(k);
    register_step<T, 1>(k);
    register_step<T, 0>(k);
    register_flip<T, 3>(k);
    register_step<T, 2>(k);
    register_step<T, 1>(k);
    register_step<T, 0>(k);
    if constexpr (T::E_BITS > 4) {
        register_flip<T, 4>(k);
        register_step<T, 3>(k);
        register_step<T, 2>(k);
        register_step<T, 1>(k);
        register_step<T, 0>(k);
    }
    lane_stages_from<T, 0>(k, last);
#pragma unroll
    for (u32 r = 0; r < E; ++r) tile[base ^ slot<T>(r)] = k[r];
    __syncthreads();
    return min(last + 1, first_group_stage<T>);
}

// Stage B of a tile sort from the register group whose top tile bit is TOP down: the group of
// tile bits TOP-E_BITS+1 .. TOP (or 0 .. E_BITS-1 at the bottom) comes out of shared memory,
// runs its steps and goes back, then the next group below. Every index, step and address is
// known at compile time, so the keys stay in the same registers from step to step (the run-time
// path through register_group moves them at every join; docs/notes/tuned.md, step 20).
template <typename T, u32 B, u32 TOP, typename K = typename T::K>
__device__ __forceinline__ void tile_sort_groups(K *tile) {
    const u32 E_BITS = T::E_BITS, E = 1u << E_BITS;
    const u32 Q0 = TOP + 1 >= E_BITS ? TOP + 1 - E_BITS : 0;
    const u32 t = threadIdx.x;
    const u32 thread_part = (t & ((1u << Q0) - 1)) | ((t >> Q0) << (Q0 + E_BITS));
    // The flip (the stage's first step) mirrors every tile bit up to B: the part below Q0
    // through the thread index, as in register_group.
    const bool flip = TOP == B;
    const u32 thread_mirror = flip ? (1u << Q0) - 1 : 0;
    const u32 half_bit = 1u << (TOP - Q0);
    const u32 slot_lo = slot<T>(thread_part), slot_hi = slot<T>(thread_part ^ thread_mirror);
    K k[E];
#pragma unroll
    for (u32 r = 0; r < E; ++r) k[r] = tile[((r & half_bit) && flip ? slot_hi : slot_lo) ^ slot<T>(r << Q0)];
    if constexpr (flip) {
        register_flip<T, int(TOP - Q0)>(k);
        register_steps_down<T, int(TOP - Q0) - 1>(k);
    } else {
        register_steps_down<T, int(TOP - Q0)>(k);
    }
#pragma unroll
    for (u32 r = 0; r < E; ++r) tile[((r & half_bit) && flip ? slot_hi : slot_lo) ^ slot<T>(r << Q0)] = k[r];
    __syncthreads();
    if constexpr (Q0 > 0) tile_sort_groups<T, B, Q0 - 1>(tile);
}

// Stage b (first_group_stage <= b < tile_bits) of a tile sort, the tile in shared memory.
template <typename T, typename K = typename T::K> __device__ __forceinline__ void tile_sort_stage(K *tile, u32 b) {
    switch (b) {
#define TILE_SORT_STAGE(B)                                                                                   \
    case B:                                                                                                  \
        if constexpr (B >= first_group_stage<T> && B < T::MAX_TILE_BITS) tile_sort_groups<T, B, B>(tile); \
        break;
        TILE_SORT_STAGE(4) TILE_SORT_STAGE(5) TILE_SORT_STAGE(6) TILE_SORT_STAGE(7) TILE_SORT_STAGE(8)
        TILE_SORT_STAGE(9) TILE_SORT_STAGE(10) TILE_SORT_STAGE(11) TILE_SORT_STAGE(12) TILE_SORT_STAGE(13)
        TILE_SORT_STAGE(14)
#undef TILE_SORT_STAGE
    default: __trap(); // the host never makes a larger tile
    }
}

// Thread-block clusters (sm_90): the block's rank in its cluster, a barrier over the whole
// cluster (release/acquire: shared-memory writes before it are visible to every block after
// it), and the generic address of the same shared variable in another block of the cluster.
#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ u32 cluster_rank() {
    u32 rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}
__device__ __forceinline__ void cluster_barrier() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
template <typename K> __device__ __forceinline__ const K *tile_of_rank(K *tile, u32 rank) {
    u64 remote;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(remote) : "l"(tile), "r"(rank));
    return reinterpret_cast<const K *>(remote);
}
#endif

// A step on global bit g at or above the block's tile (a cluster bit): key i of this block
// meets key i (or, in a flip, key tile_len-1-i) of the partner block, read from the partner's
// shared memory, and the block of lower index keeps the smaller keys. Every block of the
// cluster takes part, so that the barriers match.
template <typename T, typename K = typename T::K> __device__ void cluster_step(K *tile, u32 tile_bits, u32 b, u32 g) {
#if __CUDA_ARCH__ >= 900
    const u32 E = 1u << T::E_BITS; // = tile_len / blockDim.x
    const u32 bit = g - tile_bits, rank = cluster_rank();
    const bool flip = g == b;
    const u32 partner = rank ^ (flip ? (2u << bit) - 1 : 1u << bit);
    const u32 index_mirror = flip ? (1u << tile_bits) - 1 : 0;
    const bool keep_smaller = !((rank >> bit) & 1);
    cluster_barrier(); // the partner's last writes are visible
    const K *theirs = tile_of_rank(tile, partner);
    K k[E];
#pragma unroll
    for (u32 r = 0; r < E; ++r) {
        const u32 i = threadIdx.x + r * blockDim.x;
        K mine = tile[slot<T>(i)], other = theirs[slot<T>(i ^ index_mirror)];
        order_pair(mine, other);
        k[r] = keep_smaller ? mine : other;
    }
    cluster_barrier(); // every block has read its partner's keys: now overwrite them
#pragma unroll
    for (u32 r = 0; r < E; ++r) tile[slot<T>(threadIdx.x + r * blockDim.x)] = k[r];
    __syncthreads();
#else
    __trap(); // the host launches clusters only on sm_90 and later
#endif
}

// What every register group of one pass needs to know.
template <typename K> struct Pass {
    K *keys;
    RowLayout layout;
    u32 tile_bits, col_bits, lo, b_last, map;
    bool contiguous;    // lo == col_bits: the tile is one run of adjacent slots
    bool aligned;       // keys start on a 16-byte boundary (vector accesses allowed)
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
template <typename K> __device__ __forceinline__ bool direct_group(const Pass<K> &p, u32 Q0) {
    return Q0 >= 5 && p.layout.contiguous && (p.contiguous || Q0 >= p.col_bits);
}

// One key by tile index, for the staging loops.
template <typename K> __device__ __forceinline__ K load_key(const Pass<K> &p, u32 i) {
    u32 at = key_index(p.layout, global_index(p, i));
    if (at == PADDING) return largest_key<K>(); // acts as +inf and never moves
    K key = p.keys[at];
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
            K key = g_r < p.layout.n ? p.keys[g_r] : largest_key<K>();
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
template <typename T> __device__ __forceinline__ u32 group_start(u32 tb, u32 tile_bits) {
    const u32 E_BITS = T::E_BITS;
    return min(E_BITS * (tb / E_BITS), tile_bits - E_BITS);
}

// 16 bytes of keys from tile index i on (i a multiple of the vector's keys: a strided tile's
// rows hold at least 32 adjacent keys, so they are adjacent in the array too), mapped; keys
// past the end of the array read as +inf.
template <typename K> __device__ __forceinline__ void load_vector(const Pass<K> &p, u32 i, K *k) {
    const u32 V = Vector16<K>::KEYS, at = global_index(p, i);
    if (at + V <= p.layout.n) {
        Vector16<K>::load(p.keys + at, k);
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
// instruction-bound; docs/notes/tuned.md, step 11). A strided tile's rows lie far apart in
// the array: there every thread issues all its E keys' loads before it stores any, so that
// they are in flight together (step 19; tile_len = blockDim.x * E). Contiguous tiles keep the
// rolled loops, which measured faster for inputs that fit in L2.
template <typename T, typename K = typename T::K> __device__ __forceinline__ void stage_in(const Pass<K> &p, K *tile) {
    const u32 E = 1u << T::E_BITS, V = Vector16<K>::KEYS, tile_len = 1u << p.tile_bits;
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

// One pass: stages b_first .. b_last, stage b_first from global bit hi_first down, every stage
// down to bit 0 but the last, which stops at bit `stop`. A strided pass holds at most one
// stage start: its first step (hi_first == b_first), or stage b_last's in a window.
template <typename T, typename K = typename T::K>
__device__ void tuned_pass(K *keys, const RowLayout &layout, u32 tile_bits, u32 col_bits, u32 lo, u32 b_first,
                           u32 b_last, u32 hi_first, u32 stop, u32 map) {
    K *tile = shared_tile<K>();
    Pass<K> p;
    p.keys = keys;
    p.layout = layout;
    p.tile_bits = tile_bits;
    p.col_bits = col_bits;
    p.lo = lo;
    p.b_last = b_last;
    p.map = map;
    p.contiguous = lo == col_bits;
    p.aligned = (reinterpret_cast<size_t>(keys) & 15) == 0;
    const u32 stage_start = hi_first == b_first ? b_first : b_last; // b_last > b_first: a window
    const bool starts_stage = hi_first == b_first || b_last > b_first;
    p.mirror_row_bit = (!p.contiguous && starts_stage) ? int(tile_bit(p, stage_start) - col_bits) : -1;

    // A first group that cannot read global memory directly (see direct_group), and a pass
    // whose first step is a cluster step, start from the tile staged in shared memory.
    const u32 first_group = group_start<T>(tile_bit(p, hi_first), tile_bits);
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
            switch (group_start<T>(tile_bit(p, u32(g)), tile_bits)) {
            case 0: g = register_group<T, 0>(p, tile, b, g, stage_stop, first, &stored); break;
            case 4: g = register_group<T, 4>(p, tile, b, g, stage_stop, first, &stored); break;
            case 5: g = register_group<T, 5>(p, tile, b, g, stage_stop, first, &stored); break;
            case 6: g = register_group<T, 6>(p, tile, b, g, stage_stop, first, &stored); break;
            case 7: g = register_group<T, 7>(p, tile, b, g, stage_stop, first, &stored); break;
            case 8: g = register_group<T, 8>(p, tile, b, g, stage_stop, first, &stored); break;
            case 9: g = register_group<T, 9>(p, tile, b, g, stage_stop, first, &stored); break;
            case 10: g = register_group<T, 10>(p, tile, b, g, stage_stop, first, &stored); break;
            default: __trap(); // the host never asks for another group
            }
            first = false;
        }
    }
    if (!stored) stage_out<T>(p, tile);
}

// Capped at 64 registers a thread (the bound a 1024-thread block implies): a few values spill,
// but two 512-thread blocks of 64 KiB tiles then share an SM, and one block's loads and
// barriers overlap the other's register work. 128 spill-free registers with one block per SM
// measured slower, for the first pass too (docs/notes/tuned.md). Key-index pairs take three
// registers a key: 256 threads.
#define TUNED_PASS(T, NAME, MAX_THREADS)                                                         \
    extern "C" __global__ void __launch_bounds__(MAX_THREADS) tuned_pass_##NAME(                 \
        T::K *keys, RowLayout layout, u32 tile_bits, u32 col_bits, u32 lo, u32 b_first, u32 b_last,  \
        u32 hi_first, u32 stop, u32 map) {                                                       \
        tuned_pass<T>(keys, layout, tile_bits, col_bits, lo, b_first, b_last, hi_first, stop, map); \
    }
TUNED_PASS(WideU32, u32, 1024)
TUNED_PASS(NarrowU32, u32_narrow, 1024)
TUNED_PASS(WideU64, u64, 1024)
TUNED_PASS(PairTuning, kv64, 256)
