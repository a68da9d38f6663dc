// Steps 2 and 3 of the radix select (topk/radix.cuh), which the sampled and the spread select
// share: a chunk loaded into registers (load_chunk, load_chunk_unpadded), the elements that
// reach a threshold gathered into shared memory as candidates (gather), and the exact select
// among them, by their ranks, a tournament, or a radix select and a bitonic sort (select_few,
// select_candidates, sort_and_put). Relies on topk/radix_rounds.cuh, topk/tournament.cuh, topk/sorts.cuh and the
// host's KERNEL_TOPK_CANDIDATES_PER_THREAD and KERNEL_TOPK_RANK_MAX.
#pragma once

#include "topk/radix_rounds.cuh"
#include "topk/sorts.cuh"
#include "topk/tournament.cuh"

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
#error "the host passes KERNEL_TOPK_CANDIDATES_PER_THREAD and _RANK_MAX (src/policy/topk.rs)"
#endif
#define CANDIDATES_PER_THREAD KERNEL_TOPK_CANDIDATES_PER_THREAD
#define RANK_MAX KERNEL_TOPK_RANK_MAX

// Loads elements [begin, end) of a row (at most R x THREADS) into a radix block's
// registers, R a thread, as held words, padding where none; `alive` gets those loaded. A chunk
// that begins 16-byte aligned is loaded in 16-byte vectors, register r of thread t holding
// element ((r / VEC) x THREADS + t) x VEC + r % VEC; another, element r x THREADS + t. A whole
// chunk has no bounds to check, so that every load is issued before the first is used; in a
// shorter one, the vectors past the end are read element by element. By `order`, the map of
// every key does numeric order's work or not (the overload below picks). Returns whether the chunk came
// in vectors, which chunk_index needs.
template <typename C, typename In, u32 R, typename Order>
__device__ __forceinline__ bool load_chunk(const In *row_input, u64 begin, u64 end, u32 map,
                                           typename Held<C, In>::T (&e)[R], u32 &alive, Order order) {
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
                for (u32 i = 0; i < VEC; i++) e[q * VEC + i] = Held<C, In>::of(v[i], map, order);
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
                    for (u32 i = 0; i < VEC; i++) e[q * VEC + i] = Held<C, In>::of(v[i], map, order);
                    alive |= (VEC == 32 ? ~0u : (1u << VEC) - 1) << (q * VEC);
                } else {
#pragma unroll
                    for (u32 i = 0; i < VEC; i++) {
                        e[q * VEC + i] = padding<T>();
                        if (at + i < len)
                            e[q * VEC + i] = Held<C, In>::of(row_input[begin + at + i], map, order),
                                        alive |= 1u << (q * VEC + i);
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
            if (at < end) e[r] = Held<C, In>::of(row_input[at], map, order), alive |= 1u << r;
        }
    }
    return vectors;
}

// load_chunk in two copies, with and without numeric order's work, picked once (keys.cuh
// KnownOrder).
template <typename C, typename In, u32 R>
__device__ __forceinline__ bool load_chunk(const In *row_input, u64 begin, u64 end, u32 map,
                                           typename Held<C, In>::T (&e)[R], u32 &alive) {
    if (map & MAP_NUMERIC) return load_chunk<C, In, R>(row_input, begin, end, map, e, alive, KnownOrder<true>());
    return load_chunk<C, In, R>(row_input, begin, end, map, e, alive, KnownOrder<false>());
}

// load_chunk as the spread gather needs it, in less code (load_chunk_unpadded): the same
// registers from the same elements, but a register outside `alive` holds no padding: some key's
// word, or nothing written in a chunk shorter than one vector. Every use of such a register must
// be masked by `alive` (the gather's are: reaching, gather). So every register is loaded and
// mapped by the same code, with no branch in its loop, whether the chunk is whole or not: a
// vector past the end loads the chunk's first vector, and the one vector that the end cuts, if
// any, is read key by key after the others and put in its registers by selects. The vectors'
// loads and the misaligned rows' each come in two copies by order.
//
// Why: the gather's blocks each run it once, so that every SM fetches its code cold, and
// load_chunk's copies (whole, partial and misaligned chunks, each by order, and each kind of key
// as the compiler unswitched the map) made the gather wait for instructions. With the map hidden
// (map_here, at the call) the gather is 3,304 SASS instructions (u32) against 8,656, near the
// base's 2,864 (docs/notes/plan-layer.md). Branches are kept out on purpose: a padding select
// around each map became a branch a key, and the cut vector put by a branch made the compiler
// index the registers at run time (local memory); either way a vector's load no longer issued
// before the last one's map, and the gather took up to 1.8x as long. The radix kernels and the
// sampled select loop over chunks, so their code is fetched once; they keep load_chunk (compiled
// with this load instead, the radix kernels spilled more).
template <typename C, typename In, u32 R, typename Order>
__device__ __forceinline__ void load_vectors_unpadded(const In *chunk, u32 len, u32 map,
                                                     typename Held<C, In>::T (&e)[R], u32 &alive, Order order) {
    typedef typename Held<C, In>::T T;
    const u32 VEC = Vector<In>::N, t = threadIdx.x;
    static_assert(R % VEC == 0, "whole vectors a thread");
    if (len >= VEC) { // block-uniform: a whole vector, the first, for the loads past the end
#pragma unroll
        for (u32 q = 0; q < R / VEC; q++) {
            const u32 at = (q * THREADS + t) * VEC;
            const bool whole = at + VEC <= len;
            In v[VEC];
            Vector<In>::load(chunk + (whole ? at : 0), v);
#pragma unroll
            for (u32 i = 0; i < VEC; i++) e[q * VEC + i] = Held<C, In>::of(v[i], map, order);
            alive |= (whole ? (1u << VEC) - 1 : 0u) << (q * VEC);
        }
    } // else shorter than a vector: no vector load may read past the end, and only the cut one is alive
    if (len % VEC != 0) { // block-uniform: the vector that the end cuts, key by key
        const u32 cut = len / VEC * VEC, rest = len % VEC;
        T part[VEC];
#pragma unroll
        for (u32 i = 0; i < VEC; i++) {
            const In key = chunk[cut + (i < rest ? i : 0)];
            part[i] = Held<C, In>::of(key, map, order);
        }
#pragma unroll
        for (u32 q = 0; q < R / VEC; q++) {
            const bool mine = (q * THREADS + t) * VEC == cut;
#pragma unroll
            for (u32 i = 0; i < VEC; i++) e[q * VEC + i] = mine ? part[i] : e[q * VEC + i];
            alive |= (mine ? (1u << rest) - 1 : 0u) << (q * VEC);
        }
    }
}

// A misaligned chunk's keys, one by one (element r x THREADS + t in register r): the thread's
// first `mine` registers are alive, and the others are loaded as 0. Each load is a predicated
// one at a constant offset from the thread's first key (a clamped index instead cost a 64-bit
// address a key, and the misaligned rows' gather a fifth more time).
template <typename C, typename In, u32 R, typename Order>
__device__ __forceinline__ void load_keys_unpadded(const In *chunk, u32 len, u32 map, typename Held<C, In>::T (&e)[R],
                                                  u32 &alive, Order order) {
    const u32 t = threadIdx.x, mine = t < len ? min(R, (len - t - 1) / THREADS + 1) : 0;
    const In *first = chunk + t;
#pragma unroll
    for (u32 r = 0; r < R; r++) {
        In key = In(0);
        if (r < mine) key = first[r * THREADS];
        e[r] = Held<C, In>::of(key, map, order);
    }
    alive = mine == 32 ? ~0u : (1u << mine) - 1;
}

// Loads elements [begin, end) of a row (1 to R x THREADS of them) as load_chunk does, but with
// no padding outside `alive` (above); returns whether they came in vectors.
template <typename C, typename In, u32 R>
__device__ __forceinline__ bool load_chunk_unpadded(const In *row_input, u64 begin, u64 end, u32 map,
                                                   typename Held<C, In>::T (&e)[R], u32 &alive) {
    const In *chunk = row_input + begin;
    const u32 len = u32(end - begin);
    const bool numeric = map & MAP_NUMERIC;
    alive = 0;
    if constexpr (R % Vector<In>::N == 0) {
        if (reinterpret_cast<u64>(chunk) % 16 == 0) {
            if (numeric) load_vectors_unpadded<C, In, R>(chunk, len, map, e, alive, KnownOrder<true>());
            else load_vectors_unpadded<C, In, R>(chunk, len, map, e, alive, KnownOrder<false>());
            return true;
        }
    }
    if (numeric) load_keys_unpadded<C, In, R>(chunk, len, map, e, alive, KnownOrder<true>());
    else load_keys_unpadded<C, In, R>(chunk, len, map, e, alive, KnownOrder<false>());
    return false;
}

// The index in its row of the element in register r of this thread, of a chunk from `begin`
// that load_chunk or load_chunk_unpadded loaded (`vectors`: as it returned).
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
