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
// Parts: KERNEL_PART_U16 (f16 and bf16 keys, read as they are, u64 composites),
// KERNEL_PART_U32 (32-bit keys, u64 composites), KERNEL_PART_U64 (64-bit keys, KeyIndex
// composites).
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
#if defined(KERNEL_PART_U16)
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
    c.unused = 0;
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

// The composite of an element `In` at `index` in its row: a key is mapped and paired with its
// index; a composite (a reduction pass) is one already.
template <typename C, typename In> struct Candidate {
    __device__ static C of(In key, u32 index, u32 map) { return composite(to_sortable(key, map), index); }
};
template <typename C> struct Candidate<C, C> {
    __device__ static C of(const C &c, u32, u32) { return c; }
};

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
        out[0].unused = u32(v.y >> 32);
    }
};

// Appends `c` to the candidates when it beats the k-th best.
template <typename C>
__device__ __forceinline__ void offer(C *buf, u32 k, u32 *count, const C &threshold, const C &c) {
    if (better(c, threshold)) buf[k + atomicAdd(count, 1u)] = c;
}

// Sorts buf[0, slots) best first (slots a power of two): the network's all-ascending form,
// slots / 2 comparators a step spread over the block. Ends with a barrier.
template <typename C> __device__ void sort_best_first(C *buf, u32 slots) {
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

// The best k of chunk `chunk` of every row of `row_len` elements of `input` (keys `K`, or
// composites `C` in a reduction pass), for each of rows x chunks (row, chunk) items. With one
// chunk a row the results are final: `values` (unmapped keys) and `indices` (in the row),
// k a row; else `partials`, k composites an item, row-major.
template <typename K, typename C, typename In>
__device__ void topk_filter(const In *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len,
                            u32 k, u32 slots, u32 map, C *partials, K *values, u32 *indices) {
    C *buf = shared_tile<C>();
    __shared__ u32 count;
    const u32 VEC = Vector<In>::N;
    const u32 TILE = THREADS * VEC;
    const u32 capacity = slots - k;
    const bool vectors = reinterpret_cast<u64>(input) % 16 == 0;
    const u64 items = u64(rows) * chunks;
    for (u64 item = blockIdx.x; item < items; item += gridDim.x) {
        const u64 row = item / chunks, chunk = item % chunks;
        const u64 begin = chunk * chunk_len;
        const u64 end = min(begin + chunk_len, row_len);
        const In *row_input = input + row * row_len;
        __syncthreads(); // the previous item's results are written
        for (u32 i = threadIdx.x; i < slots; i += THREADS) buf[i] = padding<C>();
        if (threadIdx.x == 0) count = 0;
        __syncthreads();
        C threshold = padding<C>();
        // The elements before the first 16-byte boundary, one a thread (fewer than VEC, which
        // the candidate area holds: the host makes it at least min(2 tiles, chunk)).
        u64 head = vectors ? (VEC - (row * row_len + begin) % VEC) % VEC : 0;
        head = min(head, end - begin);
        if (threadIdx.x < head) {
            u64 at = begin + threadIdx.x;
            offer(buf, k, &count, threshold, Candidate<C, In>::of(row_input[at], u32(at), map));
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
                    offer(buf, k, &count, threshold, Candidate<C, In>::of(e[v], u32(at + v), map));
            } else {
#pragma unroll
                for (u32 v = 0; v < VEC; v++) {
                    u64 at = tile + v * THREADS + threadIdx.x;
                    if (at < end) offer(buf, k, &count, threshold, Candidate<C, In>::of(row_input[at], u32(at), map));
                }
            }
        }
        __syncthreads();
        if (count > 0) flush(buf, k, slots, &count); // block-uniform: no append since
        for (u32 i = threadIdx.x; i < k; i += THREADS) {
            C c = buf[i];
            if (chunks == 1) {
                values[row * k + i] = from_sortable(K(word_of(c)), map);
                indices[row * k + i] = index_of(c);
            } else {
                partials[item * k + i] = c;
            }
        }
    }
}

// The radix digits of a composite, 8 bits each, most significant first: the order of the
// digits is the order of the composites.
template <typename C> struct Digits;
template <> struct Digits<u64> {
    static const u32 COUNT = 8;
    __device__ static u32 at(u64 c, u32 d) { return u32(c >> (56 - 8 * d)) & 0xffu; }
};
template <> struct Digits<KeyIndex> {
    static const u32 COUNT = 12; // 8 of the word, then 4 of the complemented index
    __device__ static u32 at(const KeyIndex &c, u32 d) {
        return d < 8 ? u32(c.key >> (56 - 8 * d)) & 0xffu : (c.index >> (24 - 8 * (d - 8))) & 0xffu;
    }
};

// What one round of the radix select decided, broadcast through shared memory.
struct RadixRound {
    u32 digit;   // the digit of the best-k boundary
    u32 above;   // elements still in play whose digit is larger: all of them win
    u32 at;      // elements still in play with that digit
};

// Counts one element's digit in hist when `alive`; called by every lane of the warp. Lanes
// with the same digit add together (keys such as logits share their top digits, and
// same-address atomics would queue).
__device__ __forceinline__ void count_digit(u32 *hist, u32 digit, bool alive) {
    const u32 active = __ballot_sync(FULL_WARP_MASK, alive);
    if (!alive) return;
    const u32 same = __match_any_sync(active, digit);
    if (threadIdx.x % WARP_SIZE == u32(__ffs(same) - 1)) atomicAdd(&hist[digit], u32(__popc(same)));
}

// The bin of hist[256] where the `need`-th largest element falls, counting from the top:
// a suffix scan of the counts by the first 256 threads (8 warps). Ends with a barrier.
__device__ void find_boundary(const u32 *hist, u32 need, u32 *warp_totals, RadixRound *round) {
    const u32 t = threadIdx.x, lane = t % WARP_SIZE, warp = t / WARP_SIZE;
    u32 count = 0, inclusive = 0;
    if (t < 256) {
        count = hist[255 - t];
        inclusive = count;
#pragma unroll
        for (u32 d = 1; d < WARP_SIZE; d <<= 1) {
            u32 v = __shfl_up_sync(FULL_WARP_MASK, inclusive, d);
            if (lane >= d) inclusive += v;
        }
        if (lane == WARP_SIZE - 1) warp_totals[warp] = inclusive;
    }
    __syncthreads();
    if (t < 256) {
        for (u32 w = 0; w < warp; w++) inclusive += warp_totals[w];
        if (inclusive >= need && inclusive - count < need) {
            round->digit = 255 - t;
            round->above = inclusive - count;
            round->at = count;
        }
    }
    __syncthreads();
}

// A composite from lane `lane ^ mask` of the warp.
__device__ __forceinline__ u64 shuffle_xor(u64 c, u32 mask) { return __shfl_xor_sync(FULL_WARP_MASK, c, mask); }
__device__ __forceinline__ KeyIndex shuffle_xor(const KeyIndex &c, u32 mask) {
    KeyIndex o;
    o.key = __shfl_xor_sync(FULL_WARP_MASK, c.key, mask);
    o.index = __shfl_xor_sync(FULL_WARP_MASK, c.index, mask);
    o.unused = 0;
    return o;
}

// Sorts one composite a lane across the warp, best first (lane 0 the best): a bitonic
// network of shuffles, whose blocks of `size` alternate direction until the last.
template <typename C> __device__ __forceinline__ C warp_sort_best_first(C c) {
    const u32 lane = threadIdx.x % WARP_SIZE;
#pragma unroll
    for (u32 size = 2; size <= WARP_SIZE; size <<= 1) {
#pragma unroll
        for (u32 stride = size >> 1; stride > 0; stride >>= 1) {
            const C other = shuffle_xor(c, stride);
            const bool keep_better = ((lane & size) == 0) == ((lane & stride) == 0);
            if (keep_better == better(other, c)) c = other;
        }
    }
    return c;
}

// The radix select over the N elements a thread holds, `alive` marking those in play: the
// elements of the block's k best (`need` of those in play), as a mask. Each round counts one
// digit of the elements in play, finds the bin of the need-th best, and decides every element
// above or below it; the rounds stop once every element left in play wins. Composites are
// unique, so the winners are exactly `need`.
template <typename C, u32 N>
__device__ __forceinline__ u32 radix_rounds(const C (&e)[N], u32 alive, u32 need, u32 *hist,
                                            u32 *warp_totals, RadixRound *round) {
    u32 won = 0;
    for (u32 d = 0; d < Digits<C>::COUNT && need > 0; d++) { // need is block-uniform
        if (threadIdx.x < 256) hist[threadIdx.x] = 0;
        __syncthreads();
#pragma unroll
        for (u32 r = 0; r < N; r++) count_digit(hist, Digits<C>::at(e[r], d), alive >> r & 1);
        __syncthreads();
        find_boundary(hist, need, warp_totals, round);
        const RadixRound b = *round;
#pragma unroll
        for (u32 r = 0; r < N; r++) {
            const u32 digit = Digits<C>::at(e[r], d);
            if (digit > b.digit) won |= alive & (1u << r);
            if (digit != b.digit) alive &= ~(1u << r);
        }
        need -= b.above;
        if (b.at == need) won |= alive, need = 0; // every element left in play wins
    }
    return won;
}

// Appends the elements of `mask` to out[...], a slot each from the counter `*count`: a warp's
// elements of one register take consecutive slots, and slots past `capacity` are not written
// (the count still says how many wanted one).
template <typename C, u32 N>
__device__ __forceinline__ void append(const C (&e)[N], u32 mask, u32 *count, C *out, u32 capacity) {
    const u32 lane = threadIdx.x % WARP_SIZE, lanes_below = (1u << lane) - 1;
#pragma unroll
    for (u32 r = 0; r < N; r++) {
        const bool in = mask >> r & 1;
        const u32 members = __ballot_sync(FULL_WARP_MASK, in);
        if (members == 0) continue;
        u32 first = 0;
        if (lane == 0) first = atomicAdd(count, u32(__popc(members)));
        const u32 slot = __shfl_sync(FULL_WARP_MASK, first, 0) + __popc(members & lanes_below);
        if (in && slot < capacity) out[slot] = e[r];
    }
}

// Candidates a block gathers above a sampled threshold (the radix select then runs over them
// at CANDIDATES_PER_THREAD a thread instead of over the whole chunk).
#if !defined(KERNEL_TOPK_CANDIDATES_PER_THREAD) || !defined(KERNEL_TOPK_SAMPLES_FROM)
#error "the host passes KERNEL_TOPK_CANDIDATES_PER_THREAD and _SAMPLES_FROM (src/cuda/topk.rs)"
#endif
#define CANDIDATES_PER_THREAD KERNEL_TOPK_CANDIDATES_PER_THREAD
#define CANDIDATES (THREADS * CANDIDATES_PER_THREAD)

// The best k of chunk `chunk` of every row, as topk_filter, by a radix select in registers:
// the block holds the chunk (up to THREADS x R elements, R a thread) and keeps every element
// at or above the chunk's k-th best composite (composites are unique, so exactly k).
//
// When k is small beside the chunk, a sample first narrows the field: warp 0 sorts 32
// elements spread over the chunk, and its j-th best, with j chosen so that about twice k
// elements are expected above it (and at least 3 samples), is a threshold. The elements at or
// above it (if there are from k to CANDIDATES) are gathered in shared memory and the radix
// select runs over them; otherwise over the whole chunk.
//
// Only a row's final chunk is sorted (best first, in shared memory `buf[slots]`, slots =
// next_pow2(k)); partial results go out unsorted, since the next pass selects again. The
// dynamic shared memory holds max(slots, CANDIDATES) composites when R >= KERNEL_TOPK_SAMPLES_FROM
// (the kernels that sample), else slots.
template <typename K, typename C, typename In, u32 R>
__device__ void topk_radix(const In *input, u64 row_len, u32 rows, u32 chunks, u64 chunk_len,
                           u32 k, u32 slots, u32 map, C *partials, K *values, u32 *indices) {
    static_assert(R <= 32 && CANDIDATES_PER_THREAD <= 32, "32-bit masks of the elements a thread holds");
    static_assert(THREADS == 256, "one bin of a digit a thread");
    C *buf = shared_tile<C>();
    __shared__ u32 hist[256], warp_totals[8], in_play, taken, candidates;
    __shared__ RadixRound round;
    __shared__ C threshold;
    const u32 t = threadIdx.x;
    const u64 items = u64(rows) * chunks;
    for (u64 item = blockIdx.x; item < items; item += gridDim.x) {
        const u64 row = item / chunks, chunk = item % chunks;
        const u64 begin = chunk * chunk_len;
        const u64 end = min(begin + chunk_len, row_len);
        const In *row_input = input + row * row_len;
        __syncthreads(); // the previous item is written
        if (t == 0) in_play = 0, taken = 0, candidates = 0;
        C e[R];
        u32 alive = 0;
        bool loaded = false;
        if constexpr (R % Vector<In>::N == 0) {
            // A whole, aligned chunk: 16-byte loads, register r of thread t holding element
            // ((r / VEC) x THREADS + t) x VEC + r % VEC, and no bounds to check.
            const u32 VEC = Vector<In>::N;
            loaded = end - begin == u64(R) * THREADS && reinterpret_cast<u64>(row_input + begin) % 16 == 0;
            if (loaded) {
#pragma unroll
                for (u32 q = 0; q < R / VEC; q++) {
                    In v[VEC];
                    const u32 at = u32(begin) + (q * THREADS + t) * VEC;
                    Vector<In>::load(row_input + at, v);
#pragma unroll
                    for (u32 i = 0; i < VEC; i++) e[q * VEC + i] = Candidate<C, In>::of(v[i], at + i, map);
                }
            }
        }
        if (!loaded) {
#pragma unroll
            for (u32 r = 0; r < R; r++) {
                const u64 at = begin + u64(r) * THREADS + t;
                e[r] = padding<C>();
                if (at < end) e[r] = Candidate<C, In>::of(row_input[at], u32(at), map);
            }
        }
        // Padding (from a short chunk of the pass before) never wins: it is not in play.
#pragma unroll
        for (u32 r = 0; r < R; r++)
            if (better(e[r], padding<C>())) alive |= 1u << r;
        __syncthreads();
        const u32 warp_in_play = __reduce_add_sync(FULL_WARP_MASK, __popc(alive));
        if (t % WARP_SIZE == 0) atomicAdd(&in_play, warp_in_play);
        __syncthreads();
        const u32 need = min(k, in_play);
        const bool last = chunks == 1;
        C *out = last ? buf : partials + item * k;
        // The sample's rank j: about twice `need` expected at or above the j-th best of 32.
        const u32 j = 3 + 64 * need / max(in_play, 1u);
        bool sampled = false;
        C f[CANDIDATES_PER_THREAD];
        u32 f_alive = 0;
        if (R >= KERNEL_TOPK_SAMPLES_FROM && j <= 32 && u64(j) * in_play <= u64(WARP_SIZE) * CANDIDATES * 3 / 4) {
            if (t < WARP_SIZE) {
                // Lane t samples thread t's element of register t % R, 32 positions across the
                // chunk, read again (from cache) rather than picked from registers by a
                // lane-dependent index, which would put the registers in local memory.
                const u64 at = begin + u64(t % R) * THREADS + t;
                C sample = at < end ? Candidate<C, In>::of(row_input[at], u32(at), map) : padding<C>();
                sample = warp_sort_best_first(sample);
                if (t == j - 1) threshold = sample;
            }
            __syncthreads();
            const C at_least = threshold;
            u32 above = 0;
#pragma unroll
            for (u32 r = 0; r < R; r++)
                if (!better(at_least, e[r])) above |= 1u << r;
            append(e, alive & above, &candidates, buf, CANDIDATES);
            __syncthreads();
            const u32 gathered = candidates;
            sampled = gathered >= need && gathered <= CANDIDATES;
            if (sampled) {
#pragma unroll
                for (u32 i = 0; i < CANDIDATES_PER_THREAD; i++) {
                    const u32 at = i * THREADS + t;
                    f[i] = at < gathered ? buf[at] : padding<C>();
                    if (at < gathered) f_alive |= 1u << i;
                }
            }
            __syncthreads(); // buf is read before the winners overwrite it
        }
        if (sampled) {
            const u32 won = radix_rounds(f, f_alive, need, hist, warp_totals, &round);
            append(f, won, &taken, out, k);
        } else {
            const u32 won = radix_rounds(e, alive, need, hist, warp_totals, &round);
            append(e, won, &taken, out, k);
        }
        if (!last) {
            for (u32 i = need + t; i < k; i += THREADS) out[i] = padding<C>();
            continue;
        }
        __syncthreads();
        for (u32 i = need + t; i < slots; i += THREADS) buf[i] = padding<C>();
        __syncthreads();
        sort_best_first(buf, slots);
        for (u32 i = t; i < k; i += THREADS) {
            C c = buf[i];
            values[row * k + i] = from_sortable(K(word_of(c)), map);
            indices[row * k + i] = index_of(c);
        }
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

// The kernels of one key width W: the filter over keys and over partial results, the radix
// select over keys and over partial results at R = 4, 16 or 32 elements a thread
// (src/cuda/topk.rs RADIX_PER_THREAD), and the take of indices (u32) and of keys of the width.
// BOUNDS: the kernel's launch bounds, (THREADS) or (THREADS, blocks an SM), which caps the
// registers: u64 composites fit 3 blocks at 16 a thread and 2 at 32 without spilling.
#define EXPORT_TOPK_RADIX(W, C, R, BOUNDS)                                                       \
    extern "C" __global__ void __launch_bounds__ BOUNDS                                          \
        topk_radix_keys_##W##_##R TOPK_PARAMS(W, C, W) {                                         \
        topk_radix<W, C, W, R> TOPK_ARGS;                                                        \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__ BOUNDS                                          \
        topk_radix_partials_##W##_##R TOPK_PARAMS(C, C, W) {                                     \
        topk_radix<W, C, C, R> TOPK_ARGS;                                                        \
    }
#define EXPORT_TOPK(W, C)                                                                       \
    extern "C" __global__ void __launch_bounds__(THREADS) topk_keys_##W TOPK_PARAMS(W, C, W) {   \
        topk_filter<W, C, W> TOPK_ARGS;                                                         \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(THREADS) topk_partials_##W TOPK_PARAMS(C, C, W) { \
        topk_filter<W, C, C> TOPK_ARGS;                                                         \
    }                                                                                           \
    EXPORT_TOPK_RADIX(W, C, 4, (THREADS))                                                       \
    EXPORT_TOPK_RADIX(W, C, 16, (THREADS, sizeof(C) == 8 ? 3 : 1))                              \
    EXPORT_TOPK_RADIX(W, C, 32, (THREADS, sizeof(C) == 8 ? 2 : 1))                              \
    extern "C" __global__ void topk_take_##W TAKE_PARAMS(W) { topk_take<W> TAKE_ARGS; }

#if defined(KERNEL_PART_U16)
EXPORT_TOPK(u16, u64)
#elif defined(KERNEL_PART_U32)
EXPORT_TOPK(u32, u64)
#elif defined(KERNEL_PART_U64)
EXPORT_TOPK(u64, KeyIndex)
extern "C" __global__ void topk_take_u32 TAKE_PARAMS(u32) { topk_take<u32> TAKE_ARGS; }
#else
#error "topk.cu compiles one part a key width: KERNEL_PART_U16, _U32 or _U64"
#endif
