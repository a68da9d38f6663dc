// Top-k selection (src/cuda/topk.rs): each row's k best keys, sorted, with their indices.
//
// Every key becomes a *composite* word that orders candidates totally, larger = better: a
// 32-bit key's sortable word and its complemented index in one u64, `(word << 32) | ~index`,
// a 64-bit key's the 16-byte KeyIndex `{word, ~index}` ordered lexicographically. The map
// complements the word when the smallest keys are selected (MAP_DESCENDING), and the
// complemented index lets the smaller index win among equal keys: the result is the first k
// of a stable sort. A real composite is never the all-zero word (indices stay below 2^31, so
// ~index is not 0): zero is the padding that loses to everything.
//
// One block selects from one chunk of one row, in shared memory `buf[slots]`: slots [0, k)
// hold the best k so far, sorted best first; [k, slots) take candidates, counted by `count`.
// Each round the block loads one tile (THREADS threads, one 16-byte vector a thread) and
// appends every key that beats the k-th best (read once a flush). Before a tile that could
// overflow the candidates, and at the end, the block *flushes*: pads the candidates with
// zero, sorts the whole buffer best first with a bitonic network, and restarts the count.
// The chunk's best k go to `partials` (a row's chunks' results, reduced by another launch of
// the `topk_partials_*` kernel over them), or, when a row is one chunk, unmapped to `values`
// and `indices`. The host (src/cuda/topk.rs) sizes `slots` >= k + min(2 tiles, chunk) so that
// a tile always fits after a flush, and rarely needs one.
//
// Parts, a key width each: KERNEL_PART_U16 (f16 and bf16 keys, read as they are, u64
// composites), KERNEL_PART_U32 (32-bit keys, u64 composites), KERNEL_PART_U64 (64-bit keys,
// KeyIndex composites), each with the filter and the take; KERNEL_PART_<W>_R<R>, the radix
// select at R elements a thread; KERNEL_PART_<W>_WARP, the warp sort of short rows, and
// KERNEL_PART_<W>_SAMPLED, the sampled select (both for 16- and 32-bit keys) (end of file).
#include "common/types.cuh"
#include "common/keys.cuh"
#include "common/network.cuh"

#ifndef KERNEL_TOPK_THREADS
#error "the host passes KERNEL_TOPK_THREADS (src/cuda/topk.rs)"
#endif
#define THREADS KERNEL_TOPK_THREADS

typedef unsigned short u16;

// Composites: made from a sortable word and an index, compared, taken apart. A u64 composite
// holds the word in its top bits and the complemented index below: bits 63..32 and 31..0 for
// 32-bit keys, 63..48 and 47..16 for 16-bit keys, so that a composite's radix digits begin
// with the word's.
#if defined(KERNEL_PART_U16) || defined(KERNEL_PART_U16_R4) || defined(KERNEL_PART_U16_R16) || \
    defined(KERNEL_PART_U16_R32) || defined(KERNEL_PART_U16_WARP) || defined(KERNEL_PART_U16_SAMPLED) // 16-bit keys
#define WORD_SHIFT 48
#define INDEX_SHIFT 16
#else
#define WORD_SHIFT 32
#define INDEX_SHIFT 0
#endif
__device__ __forceinline__ u64 composite(u32 word, u32 index) {
    return (u64(word) << WORD_SHIFT) | (u64(~index) << INDEX_SHIFT);
}
__device__ __forceinline__ u64 composite(u16 word, u32 index) { return composite(u32(word), index); }
__device__ __forceinline__ KeyIndex composite(u64 word, u32 index) {
    KeyIndex c;
    c.key = word;
    c.index = ~index;
    c.value = 0;
    return c;
}
__device__ __forceinline__ bool better(u64 a, u64 b) { return a > b; }
__device__ __forceinline__ bool better(const KeyIndex &a, const KeyIndex &b) { return b < a; }
__device__ __forceinline__ u32 word_of(u64 c) { return u32(c >> WORD_SHIFT); }
__device__ __forceinline__ u64 word_of(const KeyIndex &c) { return c.key; }
__device__ __forceinline__ u32 index_of(u64 c) { return ~u32(c >> INDEX_SHIFT); }
__device__ __forceinline__ u32 index_of(const KeyIndex &c) { return ~c.index; }

template <typename C> __device__ __forceinline__ C padding();
template <> __device__ __forceinline__ u64 padding<u64>() { return 0; }
template <> __device__ __forceinline__ KeyIndex padding<KeyIndex>() { return composite(u64(0), ~0u); }

// What a kernel holds of an element `In` of a row whose composites are `C` (the radix select
// holds it in a register): `of` reads it, `composite` makes the element's composite from it and
// its index in the row, `real` says whether it is an element at all (a reduction pass's
// input has padding, and is PADDED), and `of_word` holds a composite's word (word_of) as a key
// of that word would be held. A key of 32 or 64 bits is held as its sortable word;
// 16-bit words in the top half of a u32, so that their radix digits come first.
template <typename C, typename In> struct Held {
    typedef In T;
    __device__ static T of(In key, u32 map) { return to_sortable(key, map); }
    __device__ static C composite(T h, u32 index) { return ::composite(h, index); }
    __device__ static bool real(T) { return true; }
    __device__ static T of_word(T word) { return word; }
    static const bool PADDED = false;
};
template <> struct Held<u64, u16> {
    typedef u32 T;
    __device__ static T of(u16 key, u32 map) { return u32(to_sortable(key, map)) << 16; }
    __device__ static u64 composite(T h, u32 index) { return ::composite(u16(h >> 16), index); }
    __device__ static bool real(T) { return true; }
    __device__ static T of_word(u32 word) { return word << 16; }
    static const bool PADDED = false;
};
template <typename C> struct Held<C, C> {
    typedef C T;
    __device__ static T of(const C &c, u32) { return c; }
    __device__ static C composite(const T &h, u32) { return h; }
    __device__ static bool real(const T &h) { return better(h, padding<C>()); }
    static const bool PADDED = true;
};

// The composite of an element `In` at `index` in its row: a key is mapped and paired with its
// index; a composite (a reduction pass) is one already.
template <typename C, typename In> __device__ __forceinline__ C candidate(const In &e, u32 index, u32 map) {
    return Held<C, In>::composite(Held<C, In>::of(e, map), index);
}

// 16 bytes of elements, loaded at once from a 16-byte aligned address.
template <typename T> struct Vector;
template <> struct Vector<u16> {
    static const u32 N = 8;
    __device__ static void load(const u16 *p, u16 *out) {
        uint4 v = *reinterpret_cast<const uint4 *>(p);
        const u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (u32 i = 0; i < 4; i++) out[2 * i] = u16(w[i]), out[2 * i + 1] = u16(w[i] >> 16);
    }
};
template <> struct Vector<u32> {
    static const u32 N = 4;
    __device__ static void load(const u32 *p, u32 *out) {
        uint4 v = *reinterpret_cast<const uint4 *>(p);
        out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
    }
};
template <> struct Vector<u64> {
    static const u32 N = 2;
    __device__ static void load(const u64 *p, u64 *out) {
        ulonglong2 v = *reinterpret_cast<const ulonglong2 *>(p);
        out[0] = v.x, out[1] = v.y;
    }
};
template <> struct Vector<KeyIndex> {
    static const u32 N = 1;
    __device__ static void load(const KeyIndex *p, KeyIndex *out) {
        ulonglong2 v = *reinterpret_cast<const ulonglong2 *>(p);
        out[0].key = v.x;
        out[0].index = u32(v.y); // little-endian: index, then unused
        out[0].value = u32(v.y >> 32);
    }
};

// Appends `c` to the candidates when it beats the k-th best.
template <typename C>
__device__ __forceinline__ void offer(C *buf, u32 k, u32 *count, const C &threshold, const C &c) {
    if (better(c, threshold)) buf[k + atomicAdd(count, 1u)] = c;
}

// Sorts buf[0, slots) best first (slots a power of two): the network's all-ascending form,
// slots / 2 comparators a step spread over the block. Ends with a barrier.
template <typename C> __device__ __noinline__ void sort_best_first(C *buf, u32 slots) {
    for (u32 size = 2; size <= slots; size <<= 1) {
        for (u32 stride = size >> 1; stride > 0; stride >>= 1) {
            for (u32 t = threadIdx.x; t < slots / 2; t += THREADS) {
                u32 i = lower_index(t, stride);
                u32 j = stride * 2 == size ? i ^ (size - 1) : i + stride;
                C a = buf[i], b = buf[j];
                if (better(b, a)) {
                    buf[i] = b;
                    buf[j] = a;
                }
            }
            __syncthreads();
        }
    }
}

// Sorts the candidates in: every thread reads `count` (unchanged since the caller's barrier),
// the unused slots get padding, the buffer is sorted, the count restarts. Returns the new
// k-th best. Called by the whole block.
template <typename C> __device__ C flush(C *buf, u32 k, u32 slots, u32 *count) {
    u32 used = k + *count;
    for (u32 i = used + threadIdx.x; i < slots; i += THREADS) buf[i] = padding<C>();
    __syncthreads();
    sort_best_first(buf, slots);
    if (threadIdx.x == 0) *count = 0;
    __syncthreads();
    return buf[k - 1];
}

// The result's i-th best composite c of item `item` of a select: to `values` and `indices` of
// row `row` (`last`: a row's final chunk), else to the item's k partial results.
template <typename K, typename C> struct Put {
    K *values;
    u32 *indices;
    C *partials;
    u64 row, item;
    u32 k, map;
    bool last;
    __device__ void operator()(u32 i, const C &c) const {
        if (last) {
            values[row * k + i] = from_sortable(K(word_of(c)), map);
            indices[row * k + i] = index_of(c);
        } else {
            partials[item * k + i] = c;
        }
    }
};

// The best k of the elements [begin, end) of a row (`row_input`; keys `K`, or composites `C`
// in a reduction pass), to `put` (its k, map and row or item). The block's shared memory holds
// `slots` composites, at least k + one tile (THREADS 16-byte vectors). Called by the whole
// block.
template <typename K, typename C, typename In>
__device__ void filter_chunk(const In *row_input, u64 begin, u64 end, u32 slots, const Put<K, C> &put) {
    const u32 k = put.k, map = put.map;
    C *buf = shared_tile<C>();
    __shared__ u32 count;
    const u32 VEC = Vector<In>::N;
    const u32 TILE = THREADS * VEC;
    const u32 capacity = slots - k;
    __syncthreads(); // the previous item's results are written
    for (u32 i = threadIdx.x; i < slots; i += THREADS) buf[i] = padding<C>();
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    C threshold = padding<C>();
    // The elements before the first 16-byte boundary, one a thread (fewer than VEC, which the
    // candidate area holds); the tiles after it load in 16-byte vectors where that boundary
    // falls on an element (always, but for composites at an address of 8 mod 16).
    const u64 address = reinterpret_cast<u64>(row_input + begin);
    const u64 head = min(u64((16 - address % 16) % 16 / sizeof(In)), end - begin);
    const bool vectors = (address + head * sizeof(In)) % 16 == 0;
    if (threadIdx.x < head) {
        u64 at = begin + threadIdx.x;
        offer(buf, k, &count, threshold, candidate<C, In>(row_input[at], u32(at), map));
    }
    for (u64 tile = begin + head; tile < end; tile += TILE) {
        const u32 n = u32(min(u64(TILE), end - tile));
        __syncthreads(); // the previous tile's candidates are in
        // Every thread reads the count before any appends again: the barrier of the OR.
        if (__syncthreads_or(count + n > capacity)) threshold = flush(buf, k, slots, &count);
        if (vectors && n == TILE) {
            In e[VEC];
            u64 at = tile + u64(threadIdx.x) * VEC;
            Vector<In>::load(row_input + at, e);
#pragma unroll
            for (u32 v = 0; v < VEC; v++)
                offer(buf, k, &count, threshold, candidate<C, In>(e[v], u32(at + v), map));
        } else {
#pragma unroll
            for (u32 v = 0; v < VEC; v++) {
                u64 at = tile + v * THREADS + threadIdx.x;
                if (at < end) offer(buf, k, &count, threshold, candidate<C, In>(row_input[at], u32(at), map));
            }
        }
    }
    __syncthreads();
    if (count > 0) flush(buf, k, slots, &count); // block-uniform: no append since
    for (u32 i = threadIdx.x; i < k; i += THREADS) put(i, buf[i]);
}

// The best k of chunk `chunk` of every row of `row_len` elements of `input`, for each of
// rows x chunks (row, chunk) items, by filter_chunk.
template <typename K, typename C, typename In>
__device__ void topk_filter(const In *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len,
                            u32 k, u32 slots, u32 map, C *partials, K *values, u32 *indices) {
    const u64 items = u64(rows) * chunks;
    for (u64 item = blockIdx.x; item < items; item += gridDim.x) {
        const u64 row = item / chunks, chunk = item % chunks;
        const u64 begin = chunk * chunk_len;
        const u64 end = min(begin + chunk_len, row_len);
        const Put<K, C> put = {values, indices, partials, row, item, k, map, chunks == 1};
        filter_chunk(input + row * row_len, begin, end, slots, put);
    }
}

// ---------------------------------------------------------------------------------------------
// The radix select (src/cuda/topk.rs, Strategy::TopkRadix). One block holds one chunk of a row
// in registers, R elements a thread. What a register *holds* is a key's sortable word (its
// index follows from the register and the thread, and its composite is made only when needed)
// or, in a reduction pass, the composite the element already is. Three steps select the
// chunk's k best:
//  1. A threshold, when k is at most an eighth of the chunk's elements. The registers of each
//     thread are cut into G groups (G chosen by groups_for: about twice as many groups as the
//     k wanted, up to MAX_GROUPS), and the groups' best values give a value T that k of them
//     reach: with one group a thread, by a tournament of the warps' sorted lists; with more,
//     by a radix select over them. If T is above padding, each of those groups has an element
//     that reaches it, so at least k elements do; for keys in no particular order, only a
//     little more than k. If it is padding, every element reaches it.
//  2. The candidates: every element that reaches T goes, as a composite, to shared memory (as
//     many as it holds: CAPACITY).
//  3. The exact select among the candidates. Up to RANK_MAX of them, each one's rank (how many
//     beat it) is its place in the sorted output. Up to two a thread, for k up to
//     TOURNAMENT_MOST, a tournament (block_best) leaves the best sorted. More are selected by a
//     radix select over their composites, and the row's final chunk sorts its k best with a
//     bitonic network. Without a threshold, or with candidates past the shared memory (ties:
//     keys with few distinct values), the same runs over all the elements held (a tournament
//     at 4 a thread, else the radix select). The tournaments of step 3 run over u64
//     composites only (LARGE_TOURNAMENTS); 16-byte ones take the radix select.
// Composites are unique, so a radix select over them keeps exactly k; over words it may end
// on a bin of equal words, which a threshold does not mind.

// Radix digits, 8 bits each, most significant first, of the values a radix select orders:
// held words (u32, u64) and composites (u64, KeyIndex). The order of the digits is the order of
// the values; `set` writes a digit into a value whose digits from d on are zero.
//
// A threshold (step 1 below) needs only to be reached by enough values, so its select may stop
// after THRESHOLD_COUNT digits (the top 16 bits of a 32-bit word, 24 of a 64-bit word or of a
// composite's) once the boundary bin is small: the candidates this adds are the elements that
// share those digits with the threshold. Of a float key, they are its sign, exponent and top 7
// (f32) or 12 (f64) mantissa bits, a few elements for keys spread over their range; a 16-bit
// word held in the top half of a u32 is whole in them. Keys that crowd those digits (small
// integers, a narrow range) fill the bin and take the remaining digits.
template <typename T> struct Digits;
template <> struct Digits<u32> {
    static const u32 COUNT = 4;
    static const u32 THRESHOLD_COUNT = 2;
    __device__ static u32 at(u32 v, u32 d) { return (v >> (24 - 8 * d)) & 0xffu; }
    __device__ static void set(u32 &v, u32 d, u32 digit) { v |= digit << (24 - 8 * d); }
};
template <> struct Digits<u64> {
    static const u32 COUNT = 8;
    static const u32 THRESHOLD_COUNT = 3;
    __device__ static u32 at(u64 v, u32 d) { return u32(v >> (56 - 8 * d)) & 0xffu; }
    __device__ static void set(u64 &v, u32 d, u32 digit) { v |= u64(digit) << (56 - 8 * d); }
};
template <> struct Digits<KeyIndex> {
    static const u32 COUNT = 12; // 8 of the word, then 4 of the complemented index
    static const u32 THRESHOLD_COUNT = 3;
    __device__ static u32 at(const KeyIndex &c, u32 d) {
        return d < 8 ? u32(c.key >> (56 - 8 * d)) & 0xffu : (c.index >> (24 - 8 * (d - 8))) & 0xffu;
    }
    __device__ static void set(KeyIndex &c, u32 d, u32 digit) {
        if (d < 8) c.key |= u64(digit) << (56 - 8 * d);
        else c.index |= digit << (24 - 8 * (d - 8));
    }
};
template <> __device__ __forceinline__ u32 padding<u32>() { return 0; }
__device__ __forceinline__ bool better(u32 a, u32 b) { return a > b; }

// Only the 16-bit parts skip the index digits that all candidates in play have alike
// (topk_radix: SKIP_ALIKE): their candidates tie on the key as a rule, and a select over their
// composites (key in bits 63..48, complemented index in 47..16) then reaches the index, whose
// top bits are the same for every index of a chunk or a row: two of six digits (bf16
// 4,096 x 32,768 k = 1,024 -9%). Wider keys seldom reach their index digits, and the check's
// code cost them more than it saved (f32 k = 1,024 +3%); their parts do not compile it.
#define SKIPS_ALIKE_INDEX_DIGITS (WORD_SHIFT == 48)
#if SKIPS_ALIKE_INDEX_DIGITS
// The first digit of a composite's index.
#define INDEX_DIGIT ((64 - WORD_SHIFT) / 8)

// The mask of the index digits that the composites value(r) of `alive` (N a thread) all have
// alike (where the OR and the AND of their indices agree), and in `common` a composite with
// those digits. Called by the whole block; ends with a barrier.
template <u32 N, typename Value> __device__ u32 index_digits_alike(const Value &value, u32 alive, u64 &common) {
    const u32 WARPS = THREADS / WARP_SIZE, warp = threadIdx.x / WARP_SIZE;
    __shared__ u32 any_of[WARPS], all_of[WARPS];
    u32 any = 0, all = ~0u;
#pragma unroll
    for (u32 r = 0; r < N; r++) {
        if (alive >> r & 1) {
            const u32 index = index_of(value(r));
            any |= index, all &= index;
        }
    }
    any = __reduce_or_sync(FULL_WARP_MASK, any);
    all = __reduce_and_sync(FULL_WARP_MASK, all);
    if (threadIdx.x % WARP_SIZE == 0) any_of[warp] = any, all_of[warp] = all;
    __syncthreads();
    for (u32 w = 0; w < WARPS; w++) any |= any_of[w], all &= all_of[w];
    const u64 some = composite(0u, any), every = composite(0u, all);
    u32 mask = 0;
    for (u32 d = INDEX_DIGIT; d < Digits<u64>::COUNT; d++)
        if (Digits<u64>::at(some, d) == Digits<u64>::at(every, d)) mask |= 1u << d;
    common = every;
    return mask;
}
#endif

// What one round of a radix select decided, broadcast through shared memory.
struct RadixRound {
    u32 digit; // the digit of the boundary bin, where the need-th best falls
    u32 above; // values still in play whose digit is larger: all of them win
    u32 at;    // values still in play with that digit
};

// The shared memory of a radix select's rounds.
struct RadixShared {
    u32 hist[256];
    u32 warp_totals[8];
    RadixRound round;
};

// Counts one value's digit in hist when `alive`; called by every lane of the warp. Lanes with
// the same digit add together (keys such as logits share their top digits, and same-address
// atomics would queue).
__device__ __forceinline__ void count_digit(u32 *hist, u32 digit, bool alive) {
    const u32 active = __ballot_sync(FULL_WARP_MASK, alive);
    if (!alive) return;
    const u32 same = __match_any_sync(active, digit);
    if (threadIdx.x % WARP_SIZE == u32(__ffs(same) - 1)) atomicAdd(&hist[digit], u32(__popc(same)));
}

// The sum of `v` over the lanes of the warp up to this one (an inclusive prefix sum by
// shuffles). Called by every lane.
__device__ __forceinline__ u32 warp_inclusive_sum(u32 v) {
    const u32 lane = threadIdx.x % WARP_SIZE;
#pragma unroll
    for (u32 d = 1; d < WARP_SIZE; d <<= 1) {
        const u32 other = __shfl_up_sync(FULL_WARP_MASK, v, d);
        if (lane >= d) v += other;
    }
    return v;
}

// The bin of hist[256] where the `need`-th largest value falls, counting from the top: a suffix
// scan of the counts by the first 256 threads (8 warps). Ends with a barrier.
__device__ void find_boundary(RadixShared &s, u32 need) {
    const u32 t = threadIdx.x, lane = t % WARP_SIZE, warp = t / WARP_SIZE;
    u32 count = 0, inclusive = 0;
    if (t < 256) {
        count = s.hist[255 - t];
        inclusive = warp_inclusive_sum(count);
        if (lane == WARP_SIZE - 1) s.warp_totals[warp] = inclusive;
    }
    __syncthreads();
    if (t < 256) {
        for (u32 w = 0; w < warp; w++) inclusive += s.warp_totals[w];
        if (inclusive >= need && inclusive - count < need) {
            s.round.digit = 255 - t;
            s.round.above = inclusive - count;
            s.round.at = count;
        }
    }
    __syncthreads();
}

// The radix select over N values a thread, value(r) for r < N, `alive` marking those in play:
// returns the mask of the `need` best when the values are unique. Each round counts one digit of
// the values in play, finds the bin of the need-th best, and decides every value above or below
// it; the rounds stop once every value left in play wins. `reached` gets the boundary bins'
// digits (zeros below): at least `need` of the values in play reach it. With SHORT below the
// values' digit count, the rounds also stop after SHORT digits or more once the boundary bin
// holds at most a quarter of `need`; then only `reached` is meant (the mask leaves the boundary
// bin's values out). With SKIP_ALIKE (composites, in the parts that compile it), a select that
// reaches the index digits first finds those that all values in play have alike
// (index_digits_alike) and skips their rounds, which would decide nothing. With MOST below the
// digit count, the rounds stop after MOST digits: `reached` is then a prefix of the need-th
// best value, which at least `need` reach, and the mask leaves its bin out. Called by the whole
// block with a block-uniform `need`.
template <typename T, u32 N, u32 SHORT = Digits<T>::COUNT, bool SKIP_ALIKE = false, u32 MOST = Digits<T>::COUNT,
          typename Value>
__device__ __forceinline__ u32 radix_rounds(const Value &value, u32 alive, u32 need, RadixShared &s,
                                            T &reached) {
    u32 won = 0;
    reached = padding<T>();
    const u32 small_bin = need / 4;
#if SKIPS_ALIKE_INDEX_DIGITS
    u32 alike = 0;
    T common;
#endif
    for (u32 d = 0; d < MOST && need > 0; d++) {
#if SKIPS_ALIKE_INDEX_DIGITS
        if constexpr (SKIP_ALIKE) {
            if (d == INDEX_DIGIT) alike = index_digits_alike<N>(value, alive, common);
            if (alike >> d & 1) {
                Digits<T>::set(reached, d, Digits<T>::at(common, d));
                continue;
            }
        }
#endif
        if (threadIdx.x < 256) s.hist[threadIdx.x] = 0;
        __syncthreads();
#pragma unroll
        for (u32 r = 0; r < N; r++) count_digit(s.hist, Digits<T>::at(value(r), d), alive >> r & 1);
        __syncthreads();
        find_boundary(s, need);
        const RadixRound b = s.round;
        Digits<T>::set(reached, d, b.digit);
#pragma unroll
        for (u32 r = 0; r < N; r++) {
            const u32 digit = Digits<T>::at(value(r), d);
            if (digit > b.digit) won |= alive & (1u << r);
            if (digit != b.digit) alive &= ~(1u << r);
        }
        need -= b.above;
        if (b.at == need) won |= alive, need = 0; // every value left in play wins
        else if (d + 1 >= SHORT && b.at <= small_bin) break;
    }
    return won;
}

// Appends element(r) for the registers r of `mask` to out[...], a slot each from the counter
// `*count`: a warp's elements of one register take consecutive slots, and slots past
// `capacity` are not written (the count still says how many wanted one).
template <u32 N, typename C, typename Element>
__device__ __forceinline__ void append(const Element &element, u32 mask, u32 *count, C *out, u32 capacity) {
    const u32 lane = threadIdx.x % WARP_SIZE, lanes_below = (1u << lane) - 1;
#pragma unroll
    for (u32 r = 0; r < N; r++) {
        const bool in = mask >> r & 1;
        const u32 members = __ballot_sync(FULL_WARP_MASK, in);
        if (members == 0) continue;
        u32 first = 0;
        if (lane == 0) first = atomicAdd(count, u32(__popc(members)));
        const u32 slot = __shfl_sync(FULL_WARP_MASK, first, 0) + __popc(members & lanes_below);
        if (in && slot < capacity) out[slot] = element(r);
    }
}

// The groups of step 1 a thread has for `need` of `in_play` elements, R a thread, when in_play
// >= 8 need: the fewest (a power of two) that give twice `need` groups, up to MAX_GROUPS, and
// surely `need` groups with an element, each holding at most R / G (the most groups,
// min(MAX_GROUPS, R), always do: in_play x G >= 8 need x G >= need x R). Fewer groups with an
// element would only make the threshold padding, and every element a candidate.
#define MAX_GROUPS 8u
__device__ __forceinline__ u32 groups_for(u32 need, u32 in_play, u32 per_thread) {
    const u32 most = min(MAX_GROUPS, per_thread);
    u32 g = 1;
    while (g < most && (g * THREADS < 2 * need || u64(in_play) * g < u64(need) * per_thread)) g <<= 1;
    return g;
}

// The best value of each of G groups of R / G consecutive registers into best[g]. Registers
// without an element hold padding, which no element is below: a group's best beats padding
// only if it is an element.
template <u32 G, typename T, u32 R>
__device__ __forceinline__ void group_bests(const T (&e)[R], T (&best)[G]) {
    static_assert(R % G == 0, "G groups of whole registers");
#pragma unroll
    for (u32 g = 0; g < G; g++) {
        best[g] = e[g * (R / G)];
#pragma unroll
        for (u32 r = g * (R / G) + 1; r < (g + 1) * (R / G); r++)
            if (better(e[r], best[g])) best[g] = e[r];
    }
}

// Step 1 with G groups a thread: a value that the best values of `need` groups reach, by a
// radix select over their top digits (SHORT and MOST as radix_rounds's: by default it may stop
// after THRESHOLD_COUNT digits). If it is padding, every element reaches it.
template <u32 G, typename T, u32 R, u32 SHORT = Digits<T>::THRESHOLD_COUNT, u32 MOST = Digits<T>::COUNT>
__device__ __forceinline__ T group_threshold(const T (&e)[R], u32 need, RadixShared &s) {
    T best[G];
    group_bests<G>(e, best);
    T threshold;
    radix_rounds<T, G, SHORT, false, MOST>([&](u32 g) { return best[g]; }, (1u << G) - 1, need, s, threshold);
    return threshold;
}

// A value from lane `lane ^ mask` of the warp.
__device__ __forceinline__ u32 shuffle_xor(u32 v, u32 mask) { return __shfl_xor_sync(FULL_WARP_MASK, v, mask); }
__device__ __forceinline__ u64 shuffle_xor(u64 v, u32 mask) { return __shfl_xor_sync(FULL_WARP_MASK, v, mask); }
__device__ __forceinline__ KeyIndex shuffle_xor(const KeyIndex &c, u32 mask) {
    KeyIndex o;
    o.key = __shfl_xor_sync(FULL_WARP_MASK, c.key, mask);
    o.index = __shfl_xor_sync(FULL_WARP_MASK, c.index, mask);
    o.value = 0;
    return o;
}

// Sorts the 32 x P values of a warp best first: a bitonic network whose blocks of `size`
// alternate direction until the last. Slot i of the network is register p of lane L, i =
// p x 32 + L (LANE_MAJOR false: one load of the warp fills a register with consecutive
// elements) or i = L x P + p (true: a lane holds P consecutive slots). Strides between a lane's
// own registers compare them in place; the others take the partner lane's register by a
// shuffle, so the lane-major layout shuffles only at strides from P on (15 of the 55 stages of
// 1,024 values at P = 32, against 40).
template <u32 P, bool LANE_MAJOR = false, typename T> __device__ __forceinline__ void warp_sort_best_first(T (&x)[P]) {
    const u32 lane = threadIdx.x % WARP_SIZE, N = P * WARP_SIZE;
#pragma unroll
    for (u32 size = 2; size <= N; size <<= 1) {
#pragma unroll
        for (u32 stride = size >> 1; stride > 0; stride >>= 1) {
            const bool in_lane = LANE_MAJOR ? stride < P : stride >= WARP_SIZE;
            const u32 register_stride = LANE_MAJOR ? stride : stride / WARP_SIZE;
            const u32 lane_stride = LANE_MAJOR ? stride / P : stride;
#pragma unroll
            for (u32 p = 0; p < P; p++) {
                const u32 slot = LANE_MAJOR ? lane * P + p : p * WARP_SIZE + lane;
                const bool best_first = size == N || (slot & size) == 0;
                if (in_lane) {
                    const u32 q = p ^ register_stride;
                    if (q > p && best_first == better(x[q], x[p])) {
                        const T t = x[p];
                        x[p] = x[q];
                        x[q] = t;
                    }
                } else {
                    const T other = shuffle_xor(x[p], lane_stride);
                    if ((best_first == ((lane & lane_stride) == 0)) == better(other, x[p])) x[p] = other;
                }
            }
        }
    }
}

// Sorts a bitonic sequence of 32 x V values, laid out as warp_sort_best_first's default, best first:
// half-cleaners of strides 16 V down to 1.
template <u32 V, typename T> __device__ __forceinline__ void warp_clean_best_first(T (&x)[V]) {
    const u32 lane = threadIdx.x % WARP_SIZE;
#pragma unroll
    for (u32 s = V / 2; s > 0; s >>= 1) {
#pragma unroll
        for (u32 v = 0; v < V; v++) {
            if ((v & s) == 0 && better(x[v + s], x[v])) {
                const T t = x[v];
                x[v] = x[v + s];
                x[v + s] = t;
            }
        }
    }
#pragma unroll
    for (u32 stride = WARP_SIZE / 2; stride > 0; stride >>= 1) {
#pragma unroll
        for (u32 v = 0; v < V; v++) {
            const T other = shuffle_xor(x[v], stride);
            if (((lane & stride) == 0) == better(other, x[v])) x[v] = other;
        }
    }
}

// The most values a tournament keeps (the host's RADIX_TOURNAMENT_MOST). With u64 composites
// the dynamic shared memory holds at least TOURNAMENT_SLOTS of them (src/cuda/topk.rs), of
// which a tournament of M uses WARPS x M; 16-byte composites run only the threshold's
// tournaments of up to 128, which the candidates' space holds.
#ifndef KERNEL_TOPK_TOURNAMENT_MOST
#error "the host passes KERNEL_TOPK_TOURNAMENT_MOST (src/cuda/topk.rs)"
#endif
#define TOURNAMENT_MOST u32(KERNEL_TOPK_TOURNAMENT_MOST)
#define TOURNAMENT_SLOTS (THREADS / WARP_SIZE * TOURNAMENT_MOST)

// The block's best M = 32 x V of the values its threads hold (P a thread, P <= V), by a
// tournament: each warp sorts its 32 x P values into a list of M (padded), then pairs of
// warps' lists merge, level by level, each keeping the best M of the two: the better of each
// element of one list and the mirrored element of the other are those M, as a bitonic
// sequence, which warp_clean_best_first sorts. After three levels warp 0's `list` holds them,
// sorted best first (element v x 32 + lane in register v). A list goes through shared memory
// (`lists`, WARPS x M values, free from the call on) once a level, read by one warp; the slots
// written at one level are never those read at the level before, so one barrier a level
// suffices. Called by the whole block; `lists` may be overwritten once all threads pass a
// barrier after it.
template <u32 V, u32 P, typename T>
__device__ __forceinline__ void block_best(T (&x)[P], T (&list)[V], T *lists) {
    static_assert(P <= V && V * WARP_SIZE <= TOURNAMENT_MOST, "lists of at most TOURNAMENT_MOST");
    const u32 M = V * WARP_SIZE, WARPS = THREADS / WARP_SIZE;
    const u32 lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE;
    warp_sort_best_first(x);
#pragma unroll
    for (u32 v = 0; v < V; v++) list[v] = v < P ? x[v < P ? v : 0] : padding<T>();
#pragma unroll
    for (u32 level = 1; level < WARPS; level <<= 1) {
        if (warp % (2 * level) == level)
#pragma unroll
            for (u32 v = 0; v < V; v++) lists[warp * M + v * WARP_SIZE + lane] = list[v];
        __syncthreads();
        if (warp % (2 * level) == 0) {
            const T *other = lists + (warp + level) * M;
#pragma unroll
            for (u32 v = 0; v < V; v++) {
                const T o = other[M - 1 - (v * WARP_SIZE + lane)];
                if (better(o, list[v])) list[v] = o;
            }
            warp_clean_best_first(list);
        }
    }
}

// Element i of a list that block_best left in warp 0, from lane i % 32 of it: `at` gets it,
// read by any thread after a barrier.
template <u32 V, typename T> __device__ __forceinline__ void publish(const T (&list)[V], u32 i, T *at) {
    if (threadIdx.x == i % WARP_SIZE) {
#pragma unroll
        for (u32 v = 0; v < V; v++)
            if (v == i / WARP_SIZE) *at = list[v];
    }
}

// Step 1 with one group a thread, by a tournament: the need-th best of the threads' best
// values, for 1 <= need <= 32 x V. Called by the whole block; `lists` is free from its call.
template <u32 V, typename T, u32 R>
__device__ __forceinline__ T tournament_threshold(const T (&e)[R], u32 need, T *lists) {
    T best[1], list[V];
    group_bests<1>(e, best);
    block_best(best, list, lists);
    __shared__ T threshold; // apart from `lists`, which the caller overwrites next
    publish(list, need - 1, &threshold);
    __syncthreads();
    return threshold;
}

// put(i, list[v]) for the elements i = v x 32 + lane < need of a list that block_best left in
// warp 0.
template <u32 V, typename T, typename Put>
__device__ __forceinline__ void put_best(const T (&list)[V], u32 need, const Put &put) {
    const u32 lane = threadIdx.x % WARP_SIZE;
    if (threadIdx.x < WARP_SIZE) {
#pragma unroll
        for (u32 v = 0; v < V; v++)
            if (v * WARP_SIZE + lane < need) put(v * WARP_SIZE + lane, list[v]);
    }
}

// Step 3 by a tournament over the P (2 or 4) values a thread holds, padding where none: the
// block's best `need` (at most TOURNAMENT_MOST), sorted, to put(i, value) for i < need. (One
// size of list for every need: each more would add its network to the compile time.) Called
// by the whole block; `lists` is free from its call.
template <u32 P, typename T, typename Put>
__device__ __forceinline__ void select_by_tournament(T (&x)[P], u32 need, T *lists, const Put &put) {
    T list[TOURNAMENT_MOST / WARP_SIZE];
    block_best(x, list, lists);
    put_best(list, need, put);
}

// Claims `count` consecutive slots of the counter `*total` for each lane of the warp (a prefix
// sum over the lanes, one atomic a warp) and returns the lane's first. Called by every lane.
__device__ __forceinline__ u32 claim_slots(u32 count, u32 *total) {
    const u32 lane = threadIdx.x % WARP_SIZE, inclusive = warp_inclusive_sum(count);
    u32 first = 0;
    if (lane == WARP_SIZE - 1) first = atomicAdd(total, inclusive);
    return __shfl_sync(FULL_WARP_MASK, first, WARP_SIZE - 1) + inclusive - count;
}

// The candidates of step 3 a thread holds in registers for a radix select over them, and the
// most candidates that are ranked instead.
#if !defined(KERNEL_TOPK_CANDIDATES_PER_THREAD) || !defined(KERNEL_TOPK_RANK_MAX)
#error "the host passes KERNEL_TOPK_CANDIDATES_PER_THREAD and _RANK_MAX (src/cuda/topk.rs)"
#endif
#define CANDIDATES_PER_THREAD KERNEL_TOPK_CANDIDATES_PER_THREAD
#define RANK_MAX KERNEL_TOPK_RANK_MAX

// Loads elements [begin, end) of a row (at most R x THREADS) into a radix block's
// registers, R a thread, as held words, padding where none; `alive` gets those loaded. A chunk
// that begins 16-byte aligned is loaded in 16-byte vectors, register r of thread t holding
// element ((r / VEC) x THREADS + t) x VEC + r % VEC; another, element r x THREADS + t. A whole
// chunk has no bounds to check, so that every load is issued before the first is used; in a
// shorter one, the vectors past the end are read element by element. Returns whether the
// chunk came in vectors, which chunk_index needs.
template <typename C, typename In, u32 R>
__device__ __forceinline__ bool load_chunk(const In *row_input, u64 begin, u64 end, u32 map,
                                           typename Held<C, In>::T (&e)[R], u32 &alive) {
    typedef typename Held<C, In>::T T;
    const u32 VEC = Vector<In>::N, t = threadIdx.x, len = u32(end - begin);
    alive = 0;
    const bool vectors = R % VEC == 0 && reinterpret_cast<u64>(row_input + begin) % 16 == 0;
    if constexpr (R % Vector<In>::N == 0) {
        if (vectors && len == R * THREADS) {
#pragma unroll
            for (u32 q = 0; q < R / VEC; q++) {
                In v[VEC];
                Vector<In>::load(row_input + begin + (q * THREADS + t) * VEC, v);
#pragma unroll
                for (u32 i = 0; i < VEC; i++) e[q * VEC + i] = Held<C, In>::of(v[i], map);
            }
            alive = R == 32 ? ~0u : (1u << R) - 1;
        } else if (vectors) {
#pragma unroll
            for (u32 q = 0; q < R / VEC; q++) {
                const u32 at = (q * THREADS + t) * VEC;
                if (at + VEC <= len) {
                    In v[VEC];
                    Vector<In>::load(row_input + begin + at, v);
#pragma unroll
                    for (u32 i = 0; i < VEC; i++) e[q * VEC + i] = Held<C, In>::of(v[i], map);
                    alive |= (VEC == 32 ? ~0u : (1u << VEC) - 1) << (q * VEC);
                } else {
#pragma unroll
                    for (u32 i = 0; i < VEC; i++) {
                        e[q * VEC + i] = padding<T>();
                        if (at + i < len)
                            e[q * VEC + i] = Held<C, In>::of(row_input[begin + at + i], map), alive |= 1u << (q * VEC + i);
                    }
                }
            }
        }
    }
    if (!vectors) {
#pragma unroll
        for (u32 r = 0; r < R; r++) {
            const u64 at = begin + u64(r) * THREADS + t;
            e[r] = padding<T>();
            if (at < end) e[r] = Held<C, In>::of(row_input[at], map), alive |= 1u << r;
        }
    }
    return vectors;
}

// The index in its row of the element in register r of this thread, of a chunk from `begin`
// that load_chunk loaded (`vectors`: as it returned).
template <typename In, u32 R> __device__ __forceinline__ u32 chunk_index(u64 begin, bool vectors, u32 r) {
    const u32 VEC = Vector<In>::N;
    return u32(begin) + (vectors ? ((r / VEC) * THREADS + threadIdx.x) * VEC + r % VEC : r * THREADS + threadIdx.x);
}

// The mask of this thread's registers of `alive` whose elements reach `threshold` (`strict`:
// beat it).
template <typename T, u32 R>
__device__ __forceinline__ u32 reaching(const T (&e)[R], u32 alive, const T &threshold, bool strict = false) {
    u32 reach = 0;
#pragma unroll
    for (u32 r = 0; r < R; r++)
        if (strict ? better(e[r], threshold) : !better(threshold, e[r])) reach |= alive & (1u << r);
    return reach;
}

// Appends the composites of the elements of `reach` (this thread's registers; index(r) is
// register r's element's index in the row) to the candidates buf[*count, ...), slots from
// `capacity` on not written (the count still says how many wanted one). Each thread's few are
// read again (from cache) by their index, since picking registers by a varying index would put
// them in local memory. Called by every thread.
template <typename C, typename In, typename Index>
__device__ __forceinline__ void gather(u32 reach, const Index &index, const In *row_input, u32 map, u32 *count,
                                       C *buf, u32 capacity) {
    for (u32 slot = claim_slots(__popc(reach), count); reach != 0; reach &= reach - 1, slot++) {
        const u32 at = index(__ffs(reach) - 1);
        if (slot < capacity) buf[slot] = Held<C, In>::composite(Held<C, In>::of(row_input[at], map), at);
    }
}

// Selects the best `need` of the `count` candidates buf[0, count) (count <= THREADS x
// PER_THREAD) by a radix select over them, and appends them, unordered, to out[*counter, ...)
// (slots from `capacity` on not written); `out` may be `buf`. Returns a composite that those
// need reach (the need-th best, or a prefix of its digits where the select stopped early).
// Called by the whole block.
template <u32 PER_THREAD, bool SKIP_ALIKE, typename C>
__device__ __forceinline__ C select_candidates(const C *buf, u32 count, u32 need, RadixShared &s, u32 *counter,
                                               C *out, u32 capacity) {
    C f[PER_THREAD];
    u32 f_alive = 0;
#pragma unroll
    for (u32 i = 0; i < PER_THREAD; i++) {
        const u32 at = i * THREADS + threadIdx.x;
        f[i] = at < count ? buf[at] : padding<C>();
        if (at < count) f_alive |= 1u << i;
    }
    __syncthreads(); // buf is read before the winners overwrite it
    C reached;
    const auto value = [&](u32 i) { return f[i]; };
    const u32 won = radix_rounds<C, PER_THREAD, Digits<C>::COUNT, SKIP_ALIKE>(value, f_alive, need, s, reached);
    append<PER_THREAD>(value, won, counter, out, capacity);
    return reached;
}

// Step 3's end where a radix select left the best `need` in buf[0, need), unordered: pads the
// rest of buf[0, slots), sorts it best first and puts the first `count`. Called by the whole
// block.
template <typename C, typename Out>
__device__ __forceinline__ void sort_and_put(C *buf, u32 need, u32 slots, u32 count, const Out &put) {
    __syncthreads();
    for (u32 i = need + threadIdx.x; i < slots; i += THREADS) buf[i] = padding<C>();
    __syncthreads();
    sort_best_first(buf, slots);
    for (u32 i = threadIdx.x; i < count; i += THREADS) put(i, buf[i]);
}

// Step 3 where it takes few candidates, buf[0, gathered): up to RANK_MAX, each one's rank
// among them (how many beat it) is its place; up to two a thread and `need` at most
// TOURNAMENT_MOST, a tournament (u64 composites only). Puts the best `need`, sorted, and
// returns true; false (nothing done) for more candidates. Called by the whole block.
template <typename C, typename Out>
__device__ __forceinline__ bool select_few(C *buf, u32 gathered, u32 need, const Out &put) {
    const u32 t = threadIdx.x;
    if (gathered <= RANK_MAX) {
        for (u32 i = t; i < gathered; i += THREADS) {
            const C c = buf[i];
            u32 rank = 0;
            for (u32 j = 0; j < gathered; j++) rank += better(buf[j], c);
            if (rank < need) put(rank, c);
        }
        return true;
    }
    if constexpr (sizeof(C) == 8) {
        if (need <= TOURNAMENT_MOST && gathered <= 2 * THREADS) {
            C x[2];
#pragma unroll
            for (u32 p = 0; p < 2; p++) {
                const u32 at = (t / WARP_SIZE * 2 + p) * WARP_SIZE + t % WARP_SIZE;
                x[p] = at < gathered ? buf[at] : padding<C>();
            }
            __syncthreads(); // buf is read before the tournament's lists overwrite it
            select_by_tournament(x, need, buf, put);
            return true;
        }
    }
    return false;
}

// The best k of chunk `chunk` of every row, as topk_filter, by the radix select above, R
// elements a thread. A row's final chunk is sorted (by the candidates' ranks, a tournament, or a
// bitonic network over `slots` = next_pow2(k) composites); partial results go out unsorted when
// a radix select chose them (a next pass that selects again needs no order; topk_merge sorts
// such a run itself). The dynamic shared memory
// holds max(slots, THREADS x min(R, CANDIDATES_PER_THREAD), TOURNAMENT_SLOTS) composites.
//
// STREAM (keys, R = 32, k <= R x THREADS / 8): a chunk is a *segment* of several whole blocks
// of registers (only a row's last shorter), which the block takes one after the other against
// one running threshold. The first gets its threshold as above (steps 1 and 2); each later one
// only appends the elements that beat it. When they would overflow the shared memory, the
// block first keeps the best k of the candidates it has (keep_best; the threshold rises to a
// word those k all reach), then, if still too many, takes the threshold of this block of
// registers alone, and, failing that (ties), takes the block in slices of four registers a
// thread, keeping the best k after each; a first block whose candidates overflow goes to the
// slices at once. Step 3 then runs once a segment, over a few k candidates for keys in no
// particular order, and its output is sorted (a merge pass may take it).
template <typename K, typename C, typename In, u32 R, bool STREAM = false>
__device__ void topk_radix(const In *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len,
                           u32 k, u32 slots, u32 map, C *partials, K *values, u32 *indices) {
    static_assert(R <= 32, "32-bit masks of the registers a thread holds");
    static_assert(THREADS == 256, "one bin of a digit a thread");
    static_assert(!STREAM || (R == 32 && !Held<C, In>::PADDED), "segments of keys, 32 a thread");
    typedef typename Held<C, In>::T T;
    const u32 PER_THREAD = R < CANDIDATES_PER_THREAD ? R : CANDIDATES_PER_THREAD;
    const u32 CAPACITY = THREADS * PER_THREAD;
    // A segment keeps up to k <= R x THREADS / 8 candidates beside a slice of 4 a thread.
    static_assert(!STREAM || CAPACITY >= R * THREADS / 8 + 4 * THREADS, "room for the kept and a slice");
    // Tournaments of up to TOURNAMENT_MOST, for k up to 256, over u64 composites; 16-byte
    // composites take the radix selects (their networks would triple the module's compile time).
    const bool LARGE_TOURNAMENTS = sizeof(C) == 8;
    // The selects over composites skip the index digits all candidates have alike (16-bit
    // keys' parts only: SKIPS_ALIKE_INDEX_DIGITS).
    constexpr bool SKIP_ALIKE = SKIPS_ALIKE_INDEX_DIGITS;
    C *buf = shared_tile<C>();
    __shared__ RadixShared s;
    __shared__ u32 in_play, taken, candidates;
    const u32 t = threadIdx.x;
    const u64 items = u64(rows) * chunks;
    for (u64 item = blockIdx.x; item < items; item += gridDim.x) {
        const u64 row = item / chunks, chunk = item % chunks;
        const u64 begin = chunk * chunk_len;
        const u64 segment_end = min(begin + chunk_len, row_len);
        // A segment's first block of registers (STREAM); else the chunk.
        const u64 end = STREAM ? min(begin + R * THREADS, segment_end) : segment_end;
        const In *row_input = input + row * row_len;
        const bool last = chunks == 1;
        __syncthreads(); // the previous item is written
        if (t == 0) in_play = 0, taken = 0, candidates = 0;
        T e[R];
        u32 alive = 0;
        const u32 len = u32(end - begin);
        const bool vectors = load_chunk<C, In, R>(row_input, begin, end, map, e, alive);
        const auto index = [&](u32 r) -> u32 { return chunk_index<In, R>(begin, vectors, r); };
        const auto composite_of = [&](u32 r) -> C { return Held<C, In>::composite(e[r], index(r)); };
#pragma unroll
        for (u32 r = 0; r < R; r++)
            if (!Held<C, In>::real(e[r])) alive &= ~(1u << r); // a reduction pass's padding
        __syncthreads(); // the counters are reset
        u32 chunk_in_play = len; // every key is an element; a reduction pass counts its own
        if constexpr (Held<C, In>::PADDED) {
            const u32 warp_in_play = __reduce_add_sync(FULL_WARP_MASK, __popc(alive));
            if (t % WARP_SIZE == 0) atomicAdd(&in_play, warp_in_play);
            __syncthreads();
            chunk_in_play = in_play;
        }
        const u32 need = min(k, chunk_in_play);

        // Steps 1 and 2 pay when k is a small part of the chunk; else the radix select of step
        // 3 runs over every element held.
        u32 gathered = ~0u;
        T threshold = padding<T>();
        if (8 * need <= chunk_in_play) { // block-uniform
            // 1. The threshold.
            switch (groups_for(need, chunk_in_play, R)) {
            case 1: {
                T *lists = reinterpret_cast<T *>(buf);
                if (need == 0) threshold = padding<T>();
                else if (need <= WARP_SIZE) threshold = tournament_threshold<1>(e, need, lists);
                else if (need <= 2 * WARP_SIZE) threshold = tournament_threshold<2>(e, need, lists);
                else threshold = tournament_threshold<4>(e, need, lists); // groups_for: need <= THREADS / 2
                break;
            }
            case 2: threshold = group_threshold<2>(e, need, s); break;
            case 4: threshold = group_threshold<4>(e, need, s); break;
            default: if constexpr (R >= 8) threshold = group_threshold<8>(e, need, s); break;
            }
            // 2. The candidates: the elements that reach it.
            gather(reaching(e, alive, threshold), index, row_input, map, &candidates, buf, CAPACITY);
            __syncthreads();
            gathered = candidates;
        }
        if constexpr (STREAM) {
            // Keeps the best `need` of the `count` candidates in buf[0, need) and raises the
            // threshold to a word they all reach. Called by the whole block once every thread
            // has read the count; ends with a barrier.
            const auto keep_best = [&](u32 count) {
                __syncthreads(); // the count was read
                if (t == 0) candidates = 0;
                const C kept = select_candidates<PER_THREAD, false>(buf, count, need, s, &candidates, buf, need);
                const T word = Held<C, In>::of_word(word_of(kept));
                if (better(word, threshold)) threshold = word;
                __syncthreads();
            };
            // Takes this block of registers in slices of 4 a thread (at most 1,024 elements,
            // which fit beside the `need` <= 1,024 kept), keeping the best `need` after each:
            // when ties crowd a threshold. Called by the whole block.
            const auto take_in_slices = [&](u64 from, bool from_vectors, u32 kept) {
                const auto slice_index = [&](u32 r) -> u32 { return chunk_index<In, R>(from, from_vectors, r); };
                __syncthreads(); // the count was read
                if (t == 0) candidates = kept;
#pragma unroll 1
                for (u32 g = 0; g < R / 4; g++) {
                    __syncthreads(); // the count is set
                    const u32 slice = alive & (0xfu << (4 * g));
                    gather(reaching(e, slice, threshold, false), slice_index, row_input, map, &candidates, buf,
                           CAPACITY);
                    __syncthreads();
                    gathered = candidates;
                    if (gathered > need) { // block-uniform
                        keep_best(gathered);
                        gathered = need;
                    }
                }
            };
            if (gathered != ~0u && gathered > CAPACITY) take_in_slices(begin, vectors, 0);
            // 2b. The segment's later blocks of registers against the running threshold: an
            // element of a later block that only ties with it loses to the `need` earlier
            // elements that reach it (equal words go to the smaller index), so these must beat
            // it. When they overflow the candidates, the block keeps the best `need` of the
            // candidates (raising the threshold to a word those all reach), then takes this
            // block's own threshold (which `need` of its elements reach: it holds more than
            // CAPACITY - need >= need, having overflowed the room beside at most `need` kept; its
            // ties count), then takes it in slices.
            for (u64 sub = end; sub < segment_end; sub += R * THREADS) { // block-uniform
                const u64 sub_end = min(sub + R * THREADS, segment_end);
                const bool sub_vectors = load_chunk<C, In, R>(row_input, sub, sub_end, map, e, alive);
                const auto sub_index = [&](u32 r) -> u32 { return chunk_index<In, R>(sub, sub_vectors, r); };
                u32 before = gathered;
                bool strict = true, own = false;
                for (;;) {
                    __syncthreads(); // every thread has read the count
                    gather(reaching(e, alive, threshold, strict), sub_index, row_input, map, &candidates, buf,
                           CAPACITY);
                    __syncthreads();
                    gathered = candidates;
                    if (gathered <= CAPACITY) break;
                    gathered = before; // the slots past it are taken again
                    if (strict && before > need) {
                        keep_best(before);
                        gathered = before = need;
                    } else if (!own) {
                        __syncthreads(); // the count was read
                        if (t == 0) candidates = before;
                        const T own_threshold = group_threshold<8>(e, need, s);
                        if (better(own_threshold, threshold)) threshold = own_threshold;
                        strict = false, own = true;
                    } else {
                        take_in_slices(sub, sub_vectors, before);
                        break;
                    }
                }
            }
        }

        // 3. The exact select. put(i, c): c is the i-th best of the row (last) or of the chunk.
        const Put<K, C> put = {values, indices, partials, row, item, k, map, last};
        if (select_few(buf, gathered, need, put)) {
            // Placed by their ranks or a tournament.
        } else if (LARGE_TOURNAMENTS && R == 4 && need <= TOURNAMENT_MOST && gathered == ~0u) {
            // No threshold, and few elements a thread: the tournament over all of them.
            if constexpr (LARGE_TOURNAMENTS && R == 4) {
                C x[R];
#pragma unroll
                for (u32 r = 0; r < R; r++) x[r] = alive >> r & 1 ? composite_of(r) : padding<C>();
                select_by_tournament(x, need, buf, put);
            }
        } else {
            // A radix select, then for a row's final chunk a bitonic sort of the k best.
            const bool sorted = last || STREAM; // a segment's run may be merged
            C *out = sorted ? buf : partials + item * k;
            if (gathered <= CAPACITY) {
                select_candidates<PER_THREAD, SKIP_ALIKE>(buf, gathered, need, s, &taken, out, k);
            } else {
                C unused;
                // Over every key held, the keys kernels skip no index digits: the check cost them
                // spills (80 registers).
                const u32 won = radix_rounds<C, R, Digits<C>::COUNT, SKIP_ALIKE && Held<C, In>::PADDED>(
                    composite_of, alive, need, s, unused);
                append<R>(composite_of, won, &taken, out, k);
            }
            if (sorted) sort_and_put(buf, need, slots, k, put);
        }
        if (!last)
            for (u32 i = need + t; i < k; i += THREADS) partials[item * k + i] = padding<C>();
    }
}

// The pass after the first of a radix select whose chunks' results are mostly sorted (by
// their ranks or a tournament): rows of row_len partial results, runs of k composites best
// first, cut into chunks of chunk_len (whole runs; a row's last chunk may have fewer). A block
// writes the k best of a chunk, sorted, as the radix select would: to values and indices for a
// row's final chunk, else to partials. An element's place among the chunk's runs is its place
// in its own run plus, in each other run, the number of elements before it: better ones, or
// equal ones of an earlier run (equal composites are padding, all zero). Each count is a binary
// search in shared memory, skipped once the element is out of the first k. The runs lie in
// shared memory `slots` = next_pow2(k) composites apart, so that a run out of order (a radix
// select's: on ties, or a row's short last chunk) is sorted there first.
template <typename K, typename C>
__device__ void topk_merge(const C *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len, u32 k, u32 slots,
                           u32 map, C *partials, K *values, u32 *indices) {
    C *runs = shared_tile<C>(); // chunk_len / k runs of `slots`
    const u32 t = threadIdx.x;
    const u64 items = u64(rows) * chunks;
    for (u64 item = blockIdx.x; item < items; item += gridDim.x) {
        const u64 row = item / chunks, chunk = item % chunks;
        const u64 begin = chunk * chunk_len;
        const u32 count = u32(min(begin + chunk_len, row_len) - begin) / k;
        const C *in = input + row * row_len + begin;
        const Put<K, C> put = {values, indices, partials, row, item, k, map, chunks == 1};
        __syncthreads(); // the previous item's runs are read
        for (u32 i = t; i < count * slots; i += THREADS) {
            const u32 at = i % slots;
            runs[i] = at < k ? in[i / slots * k + at] : padding<C>();
        }
        __syncthreads();
        for (u32 r = 0; r < count; r++) { // block-uniform
            bool unsorted = false;
            for (u32 at = t + 1; at < k; at += THREADS) unsorted |= better(runs[r * slots + at], runs[r * slots + at - 1]);
            if (__syncthreads_or(unsorted)) sort_best_first(runs + r * slots, slots);
        }
        __syncthreads();
        for (u32 i = t; i < count * k; i += THREADS) {
            const u32 own = i / k;
            const C c = runs[own * slots + i % k];
            u32 place = i % k;
            for (u32 other = 0; other < count && place < k; other++) {
                if (other == own) continue;
                const C *run = runs + other * slots;
                u32 before = 0, after = k; // the count lies in [before, after]
                while (before < after) {
                    const u32 mid = (before + after) / 2;
                    const bool ahead = other < own ? !better(c, run[mid]) : better(run[mid], c);
                    if (ahead) before = mid + 1;
                    else after = mid;
                }
                place += before;
            }
            if (place < k) put(place, c);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The sampled select (src/cuda/topk.rs, the radix select's Sampled first pass): one block
// takes one chunk of a row, however long, in three steps, and the chunk's keys are read once:
//  1. A threshold from a sample: SAMPLES keys (load_samples), SAMPLES_PER_THREAD a thread. The
//     threshold is a word that `rank` of them reach (sample_rank; a radix select over their top
//     16 bits). A chunk shorter than SAMPLED_MIN_LEN takes no sample: every key is a candidate.
//  2. The candidates: every key of the chunk that reaches it, 32 a thread at a time, goes to
//     shared memory as a composite (the radix select's step 2).
//  3. The exact select among them, or the threshold filter over the chunk where they are too
//     few or too many (select_gathered): the sample decides only the time, never the result.
// The dynamic shared memory holds max(CAPACITY, next_pow2(k + THREADS x VEC) (the filter's
// slots), slots, TOURNAMENT_SLOTS) composites (src/cuda/topk.rs `sampled_held`).
#if !defined(KERNEL_TOPK_SAMPLES_PER_THREAD) || !defined(KERNEL_TOPK_MERGE_RUNS_MOST)
#error "the host passes KERNEL_TOPK_SAMPLES_PER_THREAD and _MERGE_RUNS_MOST (src/cuda/topk.rs)"
#endif
#define SAMPLES_PER_THREAD u32(KERNEL_TOPK_SAMPLES_PER_THREAD)
#define SAMPLES (SAMPLES_PER_THREAD * THREADS)
#define SAMPLED_MIN_LEN (2 * SAMPLES)
#define MERGE_RUNS_MOST KERNEL_TOPK_MERGE_RUNS_MOST

// How many of `samples` keys spread evenly over `len` keys the threshold of `need` of them is
// reached by: the sample's share of need, plus four standard deviations of it, so that a
// stretch of keys in no particular order holds at least `need` keys that reach it but for about
// one in 30,000, and about need (1 + 4 / sqrt(rank)) do (src/cuda/topk.rs `sample_rank`).
__device__ __forceinline__ u32 sample_rank(u32 need, u32 samples, u32 len) {
    const u32 expected = u32((u64(need) * samples + len - 1) / len);
    return min(samples, expected + u32(4.0f * sqrtf(float(expected))) + 1);
}

// A held word as it is, whatever its index (load_samples' default `word`).
struct AsHeld {
    template <typename T> __device__ T operator()(T held, u64) const { return held; }
};

// N sample keys a thread of the `len` keys of a row from `begin` (len >= 2 x N x THREADS, so
// that the runs do not overlap), as words: word(held word, index in the row). Runs of 32
// consecutive keys spread evenly over them, register i of thread t holding key t % 32 of run
// i x warps + t / 32, so that a warp's load reads one run.
template <typename C, typename In, u32 N, typename Word = AsHeld>
__device__ __forceinline__ void load_samples(const In *row_input, u64 begin, u32 len, u32 map,
                                             typename Held<C, In>::T (&x)[N], const Word &word = Word()) {
    const u32 t = threadIdx.x, warps = THREADS / WARP_SIZE, runs = N * THREADS / WARP_SIZE;
#pragma unroll
    for (u32 i = 0; i < N; i++) {
        const u64 run = i * warps + t / WARP_SIZE;
        const u64 at = begin + (len - WARP_SIZE) * run / (runs - 1) + t % WARP_SIZE;
        x[i] = word(Held<C, In>::of(row_input[at], map), at);
    }
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
                             u32 slots, u32 map, C *partials, K *values, u32 *indices) {
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
        const Put<K, C> put = {values, indices, partials, row, item, k, map, last};
        const bool sorted = last || chunks <= MERGE_RUNS_MOST; // the next pass merges the runs
        select_gathered<CANDIDATES_PER_THREAD, K, C, In>(gathered, need, slots, sorted, s, &taken, row_input, begin,
                                                         end, put);
        if (!last)
            for (u32 i = need + t; i < k; i += THREADS) partials[item * k + i] = padding<C>();
    }
}

// ---------------------------------------------------------------------------------------------
// The spread select (src/cuda/topk.rs `SpreadPlan`): the sampled select's three steps for rows
// that are few and long, each a launch over all rows, so that many blocks read a row:
//  1. topk_spread_sample, a block a row: the row's threshold, a word (SpreadWord: 16-bit keys
//     with their index's bits) that at least `rank` (sample_rank) of SPREAD_SAMPLES keys reach
//     (runs of 32 spread evenly over the row), into spread[row].threshold, whose count and
//     ties it zeroes. A row too long for one block's sample
//     takes sample_blocks blocks' (SPREAD_SAMPLES each, from a slice of the row), and
//     topk_spread_threshold, a block a row, reduces their lists of best words to the row's.
//  2. topk_spread_gather, rows x chunks blocks: every key of a chunk whose word beats its
//     row's threshold to the row's SPREAD_CAPACITY candidates (global memory), counted by the
//     row's count, and every key whose word equals it to as many ties, counted by its ties
//     and, a chunk at a time, chunk_ties (slots past the capacity are not written).
//  3. topk_spread_select, a block a row: the exact select over the row's candidates and ties,
//     sorted, where they fit together (select_gathered, 16 a thread); over the candidates
//     alone where they are enough; where they are not and the ties overflow (an f32 row of a
//     few distinct values; a 16-bit row that repeats one value through a slice of 8,192
//     indices), the candidates sorted and then the first ties by index
//     (put_ties_in_order); otherwise (too few, or too many better ones) the threshold filter
//     over the whole row. Its dynamic shared memory holds max(SPREAD_CAPACITY, the filter's
//     slots, slots, TOURNAMENT_SLOTS) composites (src/cuda/topk.rs `spread_held`), in which the
//     ties' placement keeps a u32 a chunk.
#if !defined(KERNEL_TOPK_SPREAD_SAMPLES_PER_THREAD) || !defined(KERNEL_TOPK_SPREAD_CANDIDATES_PER_THREAD)
#error "the host passes KERNEL_TOPK_SPREAD_SAMPLES_PER_THREAD and _CANDIDATES_PER_THREAD (src/cuda/topk.rs)"
#endif
#define SPREAD_SAMPLES_PER_THREAD u32(KERNEL_TOPK_SPREAD_SAMPLES_PER_THREAD)
#define SPREAD_SAMPLES (SPREAD_SAMPLES_PER_THREAD * THREADS)
#define SPREAD_CANDIDATES_PER_THREAD u32(KERNEL_TOPK_SPREAD_CANDIDATES_PER_THREAD)
#define SPREAD_CAPACITY (THREADS * SPREAD_CANDIDATES_PER_THREAD)

// A row's threshold, how many of its keys' words are better than it (`count`) and how many
// equal it (`ties`), each gathered apart.
struct SpreadRow {
    u32 threshold, count, ties;
};

// The word the spread select compares for a key held as `held` at `index` in its row. A 32-bit
// key's is its held word. A 16-bit key's held word leaves its low half free, and there go the
// index's bits: 0xffff minus index >> shift, so that equal keys order as their composites do,
// the earlier the better. A threshold then cuts a run of repeated values at an index (a bf16
// row of 2^24 in [-1, 1) repeats each value near 1 about 32,000 times), and about as many keys
// reach it as would if every key differed; keys tie only within 2^shift consecutive indices.
// `shift` is at least SPREAD_TILE_SHIFT, so that the keys of one of the gather's tiles share
// their index's bits (tile_bits): one OR a key. Rows of up to 2^29 keys have 2^16 tiles or
// fewer, and shift = 13.
#ifndef KERNEL_TOPK_SPREAD_TILE_SHIFT
#error "the host passes KERNEL_TOPK_SPREAD_TILE_SHIFT (src/policy/topk.rs)"
#endif
#define SPREAD_TILE_SHIFT KERNEL_TOPK_SPREAD_TILE_SHIFT
static_assert(SPREAD_TILE_SHIFT == 13, "a gather tile is 32 keys a thread of 256");
template <typename In> struct SpreadWord {
    __device__ explicit SpreadWord(u64) {}
    __device__ u32 operator()(u32 held, u64) const { return held; }
    __device__ u32 tile_bits(u64) const { return 0; }
};
template <> struct SpreadWord<u16> {
    u32 shift;
    __device__ explicit SpreadWord(u64 row_len)
        : shift(max(SPREAD_TILE_SHIFT, row_len > 0x10000 ? 48 - __clzll(row_len - 1) : 0)) {}
    __device__ u32 operator()(u32 held, u64 index) const { return held | tile_bits(index); }
    // The bits of every index of the tile (2^SPREAD_TILE_SHIFT keys) from `begin`.
    __device__ u32 tile_bits(u64 begin) const { return 0xffffu - u32(begin >> shift); }
};

// The group bests of a thread's R registers (G groups) that are better than `threshold`, to
// list[0, most) in any order, counted by *listed (which may pass `most`: those are dropped).
template <u32 G, typename T, u32 R>
__device__ __forceinline__ void list_above(const T (&x)[R], T threshold, u32 *list, u32 most, u32 *listed) {
    T best[G];
    group_bests<G>(x, best);
#pragma unroll
    for (u32 g = 0; g < G; g++)
        if (better(best[g], threshold)) {
            const u32 at = atomicAdd(listed, 1u);
            if (at < most) list[at] = best[g];
        }
}

// Step 1 over `sample_blocks` blocks a row: block b of a row samples SPREAD_SAMPLES keys of the
// b-th of sample_blocks equal slices of it and takes the word (SpreadWord) that the best
// samples of `rank` groups of a thread's registers reach (the radix select's step 1, over all
// four digits of the word), `rank` (sample_rank) counted over the whole row's sample (the
// host's). One block a row writes it as the row's threshold, zeroing its count and
// ties. Several write `rank` words each to lists[item x rank, …), their best group bests:
// those above their threshold (at most rank of them), then copies of it;
// topk_spread_threshold takes the row's threshold from those lists. (Whatever word lists hold,
// their rank-th best is reached by at least `rank` samples of the row: the lists' words that
// reach it are real samples unless it is a copy of some block's threshold, which `rank` of
// that block's samples reach.)
template <typename C, typename In>
__device__ void topk_spread_sample(const In *input, u64 row_len, u32 rows, u32 rank, u32 map, u32 sample_blocks,
                                   SpreadRow *spread, u32 *lists) {
    static_assert(THREADS == 256 && !Held<C, In>::PADDED, "keys");
    typedef typename Held<C, In>::T T; // u32: 16-bit keys in the top half
    constexpr u32 R = SPREAD_SAMPLES_PER_THREAD, ALL = Digits<T>::COUNT;
    __shared__ RadixShared s;
    __shared__ u32 listed;
    const SpreadWord<In> word(row_len);
    const u64 items = u64(rows) * sample_blocks;
    for (u64 item = blockIdx.x; item < items; item += gridDim.x) {
        const u64 row = item / sample_blocks, slice = item % sample_blocks;
        const u64 begin = row_len * slice / sample_blocks, end = row_len * (slice + 1) / sample_blocks;
        T x[R];
        load_samples<C, In>(input + row * row_len, begin, u32(end - begin), map, x, word);
        const u32 groups = groups_for(rank, SPREAD_SAMPLES, R);
        T threshold;
        switch (groups) { // block-uniform
        case 1: threshold = group_threshold<1, T, R, ALL, ALL>(x, rank, s); break;
        case 2: threshold = group_threshold<2, T, R, ALL, ALL>(x, rank, s); break;
        case 4: threshold = group_threshold<4, T, R, ALL, ALL>(x, rank, s); break;
        default: threshold = group_threshold<8, T, R, ALL, ALL>(x, rank, s); break;
        }
        if (sample_blocks == 1) { // block-uniform
            if (threadIdx.x == 0) spread[row] = SpreadRow{threshold, 0, 0};
            __syncthreads(); // s is read before the next row's select
            continue;
        }
        if (threadIdx.x == 0) listed = 0;
        __syncthreads();
        u32 *list = lists + item * rank;
        switch (groups) { // block-uniform
        case 1: list_above<1>(x, threshold, list, rank, &listed); break;
        case 2: list_above<2>(x, threshold, list, rank, &listed); break;
        case 4: list_above<4>(x, threshold, list, rank, &listed); break;
        default: list_above<8>(x, threshold, list, rank, &listed); break;
        }
        __syncthreads();
        for (u32 i = min(listed, rank) + threadIdx.x; i < rank; i += THREADS) list[i] = threshold;
        __syncthreads(); // s and listed are read before the next item's
    }
}

// Step 1's second launch where several blocks sampled a row: a block a row takes the word that
// `rank` of the row's sample_blocks x rank listed words reach (at most SPREAD_LISTED, 16 a
// thread; an exact radix select over all four digits) as the row's threshold, zeroing its
// count and ties.
#ifndef KERNEL_TOPK_SPREAD_LISTED_PER_THREAD
#error "the host passes KERNEL_TOPK_SPREAD_LISTED_PER_THREAD (src/cuda/topk.rs)"
#endif
#define SPREAD_LISTED (KERNEL_TOPK_SPREAD_LISTED_PER_THREAD * THREADS)
template <typename C, typename In>
__device__ void topk_spread_threshold(u32 rows, u32 rank, u32 sample_blocks, const u32 *lists, SpreadRow *spread) {
    typedef typename Held<C, In>::T T;
    constexpr u32 R = SPREAD_LISTED / THREADS, ALL = Digits<T>::COUNT;
    __shared__ RadixShared s;
    const u32 listed = sample_blocks * rank;
    for (u32 row = blockIdx.x; row < rows; row += gridDim.x) {
        T x[R];
#pragma unroll
        for (u32 r = 0; r < R; r++) {
            const u32 i = r * THREADS + threadIdx.x;
            x[r] = i < listed ? lists[u64(row) * listed + i] : padding<T>();
        }
        const T threshold = group_threshold<R, T, R, ALL, ALL>(x, rank, s);
        if (threadIdx.x == 0) spread[row] = SpreadRow{threshold, 0, 0};
        __syncthreads(); // s is read before the next row's select
    }
}

template <typename C, typename In, u32 R>
__device__ void topk_spread_gather(const In *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len, u32 map,
                                   SpreadRow *spread, C *candidates, u32 *chunk_ties) {
    static_assert(R * THREADS == 1u << SPREAD_TILE_SHIFT, "a tile's keys share their index's bits (SpreadWord)");
    typedef typename Held<C, In>::T T;
    __shared__ u32 ties_here;
    const SpreadWord<In> word(row_len);
    const u64 items = u64(rows) * chunks;
    for (u64 item = blockIdx.x; item < items; item += gridDim.x) {
        const u64 row = item / chunks, begin = item % chunks * chunk_len;
        const u64 end = min(begin + chunk_len, row_len);
        const In *row_input = input + row * row_len;
        const T threshold = spread[row].threshold;
        C *better_ones = candidates + row * 2 * SPREAD_CAPACITY, *tied = better_ones + SPREAD_CAPACITY;
        if (threadIdx.x == 0) ties_here = 0;
        __syncthreads();
        for (u64 sub = begin; sub < end; sub += R * THREADS) { // block-uniform
            T e[R];
            u32 alive = 0;
            const bool vectors = load_chunk<C, In, R>(row_input, sub, min(sub + R * THREADS, end), map, e, alive);
            const auto index = [&](u32 r) -> u32 { return chunk_index<In, R>(sub, vectors, r); };
            const u32 bits = word.tile_bits(sub);
#pragma unroll
            for (u32 r = 0; r < R; r++) e[r] |= bits;
            const u32 above = reaching(e, alive, threshold, true);
            gather(above, index, row_input, map, &spread[row].count, better_ones, SPREAD_CAPACITY);
            const u32 tie = reaching(e, alive, threshold) & ~above;
            if (__any_sync(FULL_WARP_MASK, tie != 0)) { // ties are few but for repeated values
                gather(tie, index, row_input, map, &spread[row].ties, tied, SPREAD_CAPACITY);
                const u32 warp_ties = __reduce_add_sync(FULL_WARP_MASK, __popc(tie));
                if (threadIdx.x % WARP_SIZE == 0) atomicAdd(&ties_here, warp_ties);
            }
        }
        __syncthreads();
        if (threadIdx.x == 0) chunk_ties[item] = ties_here;
        __syncthreads(); // read before the next item's reset
    }
}

// The spread select's ties, where more keys tie with a row's threshold than its candidates
// hold and fewer than `need` are better: the first need - better ties by index are the
// result's last places, [better, need). chunk_ties (each chunk's ties) place each chunk's
// ties: a prefix sum over the chunks, a u32 a chunk in the shared tile, then a warp a chunk
// scans its keys in order (V consecutive keys a lane, a warp scan of the lanes'
// ties) and puts those before `need`. Called by the whole block.
template <typename K, typename C, typename In>
__device__ void put_ties_in_order(const In *row_input, u64 row_len, u32 chunks, u64 chunk_len, u32 map,
                                  typename Held<C, In>::T threshold, const u32 *chunk_ties, u32 better, u32 need,
                                  const Put<K, C> &put) {
    constexpr u32 V = 8;
    const SpreadWord<In> word(row_len);
    u32 *first = reinterpret_cast<u32 *>(shared_tile<C>()); // first[c]: chunk c's first place
    __syncthreads(); // the shared tile is free
    if (threadIdx.x == 0) {
        u32 sum = better;
        for (u32 c = 0; c < chunks; c++) {
            first[c] = sum;
            sum = min(sum + chunk_ties[c], need); // at most need: later chunks put nothing
        }
    }
    __syncthreads();
    const u32 lane = threadIdx.x % WARP_SIZE, warps = THREADS / WARP_SIZE;
    for (u32 c = threadIdx.x / WARP_SIZE; c < chunks && first[c] < need; c += warps) { // warp-uniform
        if (chunk_ties[c] == 0) continue;
        u32 place = first[c];
        const u64 end = min(u64(c + 1) * chunk_len, row_len);
        for (u64 at = u64(c) * chunk_len; at < end && place < need; at += V * WARP_SIZE) { // warp-uniform
            u32 mine = 0;
#pragma unroll
            for (u32 v = 0; v < V; v++) {
                const u64 i = at + lane * V + v;
                if (i < end && word(Held<C, In>::of(row_input[i], map), i) == threshold) mine |= 1u << v;
            }
            const u32 count = __popc(mine), inclusive = warp_inclusive_sum(count);
            for (u32 slot = place + inclusive - count; mine != 0; mine &= mine - 1, slot++)
                if (slot < need) put(slot, Held<C, In>::composite(threshold, u32(at + lane * V + __ffs(mine) - 1)));
            place += __shfl_sync(FULL_WARP_MASK, inclusive, WARP_SIZE - 1);
        }
    }
}

template <typename K, typename C, typename In>
__device__ void topk_spread_select(const In *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len, u32 k,
                                   u32 slots, u32 map, const SpreadRow *spread, const C *candidates,
                                   const u32 *chunk_ties, K *values, u32 *indices) {
    C *buf = shared_tile<C>();
    __shared__ RadixShared s;
    __shared__ u32 taken;
    for (u32 row = blockIdx.x; row < rows; row += gridDim.x) {
        const SpreadRow r = spread[row];
        const u32 need = u32(min(u64(k), row_len));
        const C *better_ones = candidates + u64(row) * 2 * SPREAD_CAPACITY, *tied = better_ones + SPREAD_CAPACITY;
        const In *row_input = input + u64(row) * row_len;
        const Put<K, C> put = {values, indices, nullptr, row, row, k, map, true};
        // The ties to place in order: too many to hold beside the better ones, and needed.
        const bool in_order = r.count < need && r.count + r.ties > SPREAD_CAPACITY;
        // The candidates: better ones and ties where they fit together; else the better ones.
        const u32 held = r.count + r.ties <= SPREAD_CAPACITY ? r.count + r.ties : r.count;
        __syncthreads(); // the previous row is written
        if (threadIdx.x == 0) taken = 0;
        if (held <= SPREAD_CAPACITY)
            for (u32 i = threadIdx.x; i < held; i += THREADS)
                buf[i] = i < r.count ? better_ones[i] : tied[i - r.count];
        __syncthreads();
        if (in_order) { // block-uniform: the better ones sorted, then the first ties by index
            if (r.count > 0)
                select_gathered<SPREAD_CANDIDATES_PER_THREAD, K, C, In>(r.count, r.count, slots, true, s, &taken,
                                                                        row_input, 0, row_len, put);
            put_ties_in_order<K, C, In>(row_input, row_len, chunks, chunk_len, map, r.threshold,
                                        chunk_ties + u64(row) * chunks, r.count, need, put);
        } else {
            select_gathered<SPREAD_CANDIDATES_PER_THREAD, K, C, In>(held, need, slots, true, s, &taken, row_input, 0,
                                                                    row_len, put);
        }
    }
}

// The composites of the warp sort: u64 for 32-bit keys, as everywhere; for 16-bit keys u32,
// the word in the top half and the complemented index below (rows of at most 2^16 keys; real
// ones are never 0, the padding), which halves the network's compares and shuffles.
template <typename In> struct WarpComposite {
    typedef u64 C;
    __device__ static C of(In key, u32 index, u32 map) { return candidate<C, In>(key, index, map); }
    __device__ static u32 word(C c) { return word_of(c); }
    __device__ static u32 index(C c) { return index_of(c); }
};
template <> struct WarpComposite<u16> {
    typedef u32 C;
    __device__ static C of(u16 key, u32 index, u32 map) { return u32(to_sortable(key, map)) << 16 | (~index & 0xffffu); }
    __device__ static u32 word(C c) { return c >> 16; }
    __device__ static u32 index(C c) { return ~c & 0xffffu; }
};

// Writes the first k of a warp's 32 x P composites, sorted best first in the lane-major layout,
// as row `row`'s values and indices, through the warp's `WARP_SIZE x (P + 1)` composites of
// shared memory, so that the stores are coalesced: slot i sits at i + i / P (a gap after each
// lane's P), so that the lanes' writes of one register meet in no bank, nor their reads of
// consecutive slots at P = 32 (at 2 and 8, two at most).
template <typename K, typename In, u32 P>
__device__ __forceinline__ void warp_put(const typename WarpComposite<In>::C (&x)[P], typename WarpComposite<In>::C *staged,
                                         u64 row, u32 k, u32 map, K *values, u32 *indices) {
    typedef WarpComposite<In> W;
    const u32 lane = threadIdx.x % WARP_SIZE;
#pragma unroll
    for (u32 p = 0; p < P; p++) staged[lane * (P + 1) + p] = x[p];
    __syncwarp();
    for (u32 i = lane; i < k; i += WARP_SIZE) {
        const auto c = staged[i + i / P];
        values[row * k + i] = from_sortable(K(W::word(c)), map);
        indices[row * k + i] = W::index(c);
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
__device__ __forceinline__ void warp_sort_candidates(typename WarpComposite<In>::C *staged, u32 total, u64 row,
                                                     u32 k, u32 map, K *values, u32 *indices) {
    typedef typename WarpComposite<In>::C C;
    const u32 lane = threadIdx.x % WARP_SIZE;
    C y[Q];
#pragma unroll
    for (u32 q = 0; q < Q; q++) y[q] = q * WARP_SIZE + lane < total ? staged[q * WARP_SIZE + lane] : padding<C>();
    __syncwarp(); // read before warp_put writes
    warp_sort_best_first<Q, true>(y);
    warp_put<K, In, Q>(y, staged, row, k, map, values, indices);
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
                                                   u64 row, u32 k, u32 map, K *values, u32 *indices) {
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
    if (total <= 2 * WARP_SIZE) warp_sort_candidates<2, K, In>(staged, total, row, k, map, values, indices);
    else if (total <= 8 * WARP_SIZE) warp_sort_candidates<8, K, In>(staged, total, row, k, map, values, indices);
    else warp_sort_candidates<16, K, In>(staged, total, row, k, map, values, indices);
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
                                            typename WarpComposite<In>::C *staged, u64 row, u32 k, u32 map,
                                            K *values, u32 *indices) {
    typedef typename WarpComposite<In>::C C;
    if constexpr (FILTER == TOP_BITS) {
        if (k > WARP_FILTER_MOST) return false;
        const u32 enough = k <= 8 * WARP_SIZE ? 8 * WARP_SIZE : WARP_FILTER_MOST;
        const u32 threshold = warp_search_threshold(x, k, enough);
        return warp_sort_reaching<K, In>(x, staged, [=](const C &c) { return top_bits(c) >= threshold; }, row, k, map,
                                         values, indices);
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
        return warp_sort_reaching<K, In>(x, staged, [=](const C &c) { return !better(threshold, c); }, row, k, map,
                                         values, indices);
    }
}

// Rows of at most 32 x P keys of 16 or 32 bits, one warp a row: the warp holds the row's
// composites in registers, P a lane (padding past the row's end), sorts them best first
// (warp_sort_best_first, lane-major) and puts the first k (warp_put). No barrier, and no shared
// memory but each warp's own `WARP_SIZE x (P + 1)` composites. The grid's warps take rows
// `gridDim.x x warps` apart. (`partials`, in the shared parameter list, is unused: null.)
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
#pragma unroll
        for (u32 p = 0; p < P; p++) {
            const u32 at = p * WARP_SIZE + lane;
            x[p] = at < row_len ? W::of(key[p], at, map) : padding<C>();
        }
        if constexpr (FILTER != WHOLE_ROW) {
            if (warp_filter<FILTER, K, In>(x, staged, row, k, map, values, indices)) continue; // warp-uniform
        }
        warp_sort_best_first<P, true>(x);
        warp_put<K, In, P>(x, staged, row, k, map, values, indices);
    }
}

// dst[r * k + i] = src[r * row_len + i] for the first k elements of each row: the first k of
// rows sorted stably (a top-k larger than the filter keeps).
template <typename W> __device__ void topk_take(const W *src, u64 row_len, W *dst, u64 k, u64 count) {
    for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += u64(gridDim.x) * blockDim.x)
        dst[i] = src[(i / k) * row_len + i % k];
}

#define TOPK_PARAMS(In, C, K)                                                                   \
    (const In *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len, u32 k, u32 slots, u32 map, \
     C *partials, K *values, u32 *indices)
#define TOPK_ARGS (input, row_len, rows, chunks, chunk_len, k, slots, map, partials, values, indices)
#define TAKE_PARAMS(W) (const W *src, u64 row_len, W *dst, u64 k, u64 count)
#define TAKE_ARGS (src, row_len, dst, k, count)

// The kernels of one key width W, in parts (src/cuda/kernels.rs), so that a selection compiles
// only what it runs: part <W> has the filter over keys and over partial results and the take of
// indices (u32) and of keys of the width; part <W>_R<R> the radix select over keys and over
// partial results at R = 4, 16 or 32 elements a thread (src/cuda/topk.rs RADIX_PER_THREAD),
// and the merge of the first pass's sorted runs; at 32, also the segments' (STREAM).
// Their launch bounds, (THREADS, blocks an SM), cap the registers: where composites are u64,
// the keys kernels hold 32-bit words, 4 blocks an SM at 4 a thread and 3 at 16 and 32 (80
// registers); the partials kernels hold composites, 4 blocks at 4 a thread, 3 at 16, 2 at 32;
// the segments' kernel 2 (128 registers: at 80 its overflow paths spilled kilobytes).
#define KEYS_BOUNDS_4(C) __launch_bounds__(THREADS, sizeof(C) == 8 ? 4 : 1)
#define KEYS_BOUNDS_16(C) __launch_bounds__(THREADS, sizeof(C) == 8 ? 3 : 1)
#define KEYS_BOUNDS_32(C) __launch_bounds__(THREADS, sizeof(C) == 8 ? 3 : 1)
#define PARTIALS_BOUNDS_4(C) __launch_bounds__(THREADS, sizeof(C) == 8 ? 4 : 1)
#define PARTIALS_BOUNDS_16(C) __launch_bounds__(THREADS, sizeof(C) == 8 ? 3 : 1)
#define PARTIALS_BOUNDS_32(C) __launch_bounds__(THREADS, sizeof(C) == 8 ? 2 : 1)
#define EXPORT_TOPK_RADIX(W, C, R)                                                               \
    extern "C" __global__ void KEYS_BOUNDS_##R(C)                                                \
        topk_radix_keys_##W##_##R TOPK_PARAMS(W, C, W) {                                         \
        topk_radix<W, C, W, R> TOPK_ARGS;                                                        \
    }                                                                                            \
    extern "C" __global__ void PARTIALS_BOUNDS_##R(C)                                            \
        topk_radix_partials_##W##_##R TOPK_PARAMS(C, C, W) {                                     \
        topk_radix<W, C, C, R> TOPK_ARGS;                                                        \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(THREADS) topk_merge_##W TOPK_PARAMS(C, C, W) {  \
        topk_merge<W, C> TOPK_ARGS;                                                              \
    }
// The segments of STREAM (32 a thread): a kernel of the R = 32 parts.
#define EXPORT_TOPK_STREAM(W, C)                                                                 \
    extern "C" __global__ void __launch_bounds__(THREADS, sizeof(C) == 8 ? 2 : 1) topk_radix_stream_##W TOPK_PARAMS(W, C, W) {     \
        topk_radix<W, C, W, 32, true> TOPK_ARGS;                                                 \
    }
// The sampled select, 32 keys a thread at a time, and the spread select's three kernels, a part
// per key width (16 and 32 bits).
#define EXPORT_TOPK_SAMPLED(W, C)                                                                \
    extern "C" __global__ void __launch_bounds__(THREADS, 3) topk_sampled_##W TOPK_PARAMS(W, C, W) { \
        topk_sampled<W, C, W, 32> TOPK_ARGS;                                                     \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(THREADS) topk_spread_sample_##W(                \
        const W *input, u64 row_len, u32 rows, u32 rank, u32 map, u32 sample_blocks, SpreadRow *spread, \
        u32 *lists) {                                                                            \
        topk_spread_sample<C, W>(input, row_len, rows, rank, map, sample_blocks, spread, lists); \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(THREADS) topk_spread_threshold_##W(             \
        u32 rows, u32 rank, u32 sample_blocks, const u32 *lists, SpreadRow *spread) {            \
        topk_spread_threshold<C, W>(rows, rank, sample_blocks, lists, spread);                   \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(THREADS, 4) topk_spread_gather_##W(             \
        const W *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len, u32 map, SpreadRow *spread, \
        C *candidates, u32 *chunk_ties) {                                                        \
        topk_spread_gather<C, W, 32>(input, row_len, rows, chunks, chunk_len, map, spread, candidates, chunk_ties); \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(THREADS) topk_spread_select_##W(                \
        const W *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len, u32 k, u32 slots, u32 map, \
        const SpreadRow *spread, const C *candidates, const u32 *chunk_ties, W *values, u32 *indices) { \
        topk_spread_select<W, C, W>(input, row_len, rows, chunks, chunk_len, k, slots, map, spread, candidates, \
                                    chunk_ties, values, indices);                                \
    }
// The warp sort of short rows (rows of up to 64, 256 and 1,024 keys), and the warp filters of
// rows of up to 1,024 (by the groups' bests and by a search of top bits), a part per key width.
// Blocks an SM: 2 for u64 composites (128 registers; 32 a lane: 4 bytes spill), 3 for u32 (80;
// at 4, 64 registers spilled 52 bytes).
#define WARP_SORT_BLOCKS(W) (sizeof(W) == 2 ? 3 : 2)
#define WARP_SORT_KERNEL(W, P, NAME, FILTER)                                                     \
    extern "C" __global__ void __launch_bounds__(THREADS, WARP_SORT_BLOCKS(W)) NAME TOPK_PARAMS(W, typename WarpComposite<W>::C, W) { \
        topk_warp_sort<W, W, P, FILTER>(input, row_len, rows, k, map, values, indices);         \
    }
#define EXPORT_TOPK_WARP_SORT(W)                                                                 \
    WARP_SORT_KERNEL(W, 2, topk_warp_sort_##W##_2, WHOLE_ROW)                                    \
    WARP_SORT_KERNEL(W, 8, topk_warp_sort_##W##_8, WHOLE_ROW)                                    \
    WARP_SORT_KERNEL(W, 32, topk_warp_sort_##W##_32, WHOLE_ROW)                                  \
    WARP_SORT_KERNEL(W, 32, topk_warp_filter_##W, GROUP_BESTS)                                   \
    WARP_SORT_KERNEL(W, 32, topk_warp_search_##W, TOP_BITS)
#define EXPORT_TOPK(W, C)                                                                       \
    extern "C" __global__ void __launch_bounds__(THREADS) topk_keys_##W TOPK_PARAMS(W, C, W) {   \
        topk_filter<W, C, W> TOPK_ARGS;                                                         \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(THREADS) topk_partials_##W TOPK_PARAMS(C, C, W) { \
        topk_filter<W, C, C> TOPK_ARGS;                                                         \
    }                                                                                           \
    extern "C" __global__ void topk_take_##W TAKE_PARAMS(W) { topk_take<W> TAKE_ARGS; }

#if defined(KERNEL_PART_U16)
EXPORT_TOPK(u16, u64)
#elif defined(KERNEL_PART_U16_R4)
EXPORT_TOPK_RADIX(u16, u64, 4)
#elif defined(KERNEL_PART_U16_R16)
EXPORT_TOPK_RADIX(u16, u64, 16)
#elif defined(KERNEL_PART_U16_R32)
EXPORT_TOPK_RADIX(u16, u64, 32)
EXPORT_TOPK_STREAM(u16, u64)
#elif defined(KERNEL_PART_U16_WARP)
EXPORT_TOPK_WARP_SORT(u16)
#elif defined(KERNEL_PART_U16_SAMPLED)
EXPORT_TOPK_SAMPLED(u16, u64)
#elif defined(KERNEL_PART_U32)
EXPORT_TOPK(u32, u64)
#elif defined(KERNEL_PART_U32_R4)
EXPORT_TOPK_RADIX(u32, u64, 4)
#elif defined(KERNEL_PART_U32_R16)
EXPORT_TOPK_RADIX(u32, u64, 16)
#elif defined(KERNEL_PART_U32_R32)
EXPORT_TOPK_RADIX(u32, u64, 32)
EXPORT_TOPK_STREAM(u32, u64)
#elif defined(KERNEL_PART_U32_WARP)
EXPORT_TOPK_WARP_SORT(u32)
#elif defined(KERNEL_PART_U32_SAMPLED)
EXPORT_TOPK_SAMPLED(u32, u64)
#elif defined(KERNEL_PART_U64)
EXPORT_TOPK(u64, KeyIndex)
extern "C" __global__ void topk_take_u32 TAKE_PARAMS(u32) { topk_take<u32> TAKE_ARGS; }
#elif defined(KERNEL_PART_U64_R4)
EXPORT_TOPK_RADIX(u64, KeyIndex, 4)
#elif defined(KERNEL_PART_U64_R16)
EXPORT_TOPK_RADIX(u64, KeyIndex, 16)
#elif defined(KERNEL_PART_U64_R32)
EXPORT_TOPK_RADIX(u64, KeyIndex, 32)
EXPORT_TOPK_STREAM(u64, KeyIndex)
#else
#error "topk.cu compiles one part: KERNEL_PART_<W>, _<W>_R<R>, _<W>_WARP or _<W>_SAMPLED, W one of U16, U32, U64"
#endif
