// The rounds of a radix select over values held in registers, N a thread (radix_rounds): the
// radix digits of held words and composites, a round's histogram and boundary bin, the append
// of the winners, and step 1's threshold from the best of groups of registers
// (group_threshold). The steps are topk/radix.cuh's; the sampled and the spread select use
// these too. Relies on topk/common.cuh; the block has 256 threads (a bin of a digit each).
#pragma once

#include "topk/common.cuh"

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
