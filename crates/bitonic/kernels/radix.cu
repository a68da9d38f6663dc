// Stable least-significant-digit radix sorts with indices: the argsorts of rows and the top-k of
// rows by sorting (which, with k the whole row, is the stable sort with indices), for keys of
// 2, 4 and 8 bytes (src/cuda/radix.rs; src/plan/mod.rs Strategy::RowRadix, Strategy::RadixSort).
// The passes also carry a key-value sort's 4-byte values where the indices would go, and sort
// long rows of keys alone with no index at all (src/plan/choose.rs: their network's stages
// grow as the square of a row's bits, the passes' as its bytes).
//
// Why radix: the network sorts (key, index) pairs, 64-bit words, and compares them in every one
// of its log2(n)^2/2 steps, so indices cost it 4-5x the keys-only sort. A radix sort is stable
// by construction and moves each key once a digit: an index costs only the bytes it takes.
//
// The first load maps each key to its sortable word (common/keys.cuh: descending order, the
// float orders, ties), and the digits are the words' bytes. The last store writes the words
// unmapped, which gives each key back bit for bit unless the map ties keys (-0.0 with +0.0,
// every NaN) and the word stands for several keys; then the input's own key by index, unless
// the outputs are the input.
//
// Both sorts move keys by one 8-bit digit at a time, lowest first, with `sort_by_digit`, which
// orders a block's keys in shared memory stably by one digit:
//   1. count: warp w owns one contiguous segment of the keys and counts its digits, 32 keys a
//      round (eight ballots find the lanes of each digit: one add a distinct digit a round, no
//      atomics);
//   2. offsets: one exclusive scan over (digit, warp) in digit-major order turns the counts into
//      where each warp's keys of each digit start;
//   3. scatter: each warp walks its segment again in the same order, and a key goes to its
//      (digit, warp) start plus the keys of its digit before it in its round.
// Keys of one digit keep (warp, round, lane) order, which is their order in the block: the move
// is stable.
//
// * row_radix_sort_W: one block a row, a warp each 32 × RADIX_ROUNDS keys (so at most 2^14 keys
//   of 2 or 4 bytes in 1,024 threads, 2^13 of 8 bytes in 512), which stay in shared memory with
//   16-bit indices for every digit; one launch.
// * Longer rows (one row of 2^24 keys too): a pass a digit over tiles of the rows in global
//   memory, one launch each, after one launch that counts every digit of every key
//   (radix_digit_counts_W: each row's count of each value of each digit). radix_scatter_W
//   takes the next tile (tiles go in the order blocks start), reads it into registers, orders
//   it by the digit into shared memory (so that its stores run in order), learns where its
//   keys of each digit go, and stores each key there. Where they go: after the row's keys of
//   smaller digits (the exclusive scan of the row's counts), and after the keys of the same
//   digit in the row's earlier tiles, which it learns by decoupled look-back: each tile
//   publishes its count of each digit at once, and its running total once it knows it; a tile
//   adds up its predecessors' counts, from the nearest back, until it meets a running total.
//   (Merrill and Garland's single-pass scan, as in CUB's onesweep radix sort.)
//
// The last digit's store writes each row's first k keys and their indices (u32, or u64 where
// the map has MAP_INDEX64) in rows of k.
#include "common/types.cuh"
#include "common/keys.cuh"

#define RADIX_DIGITS 256u

// The block's shared scalars of sort_by_digit.
struct DigitSortShared {
    u32 digit_totals[RADIX_DIGITS / WARP_SIZE];  // the scan's total of each warp of digits
    u32 one_digit;                               // every key has the same digit
};

// The digit at `shift` of a sortable word.
template <typename W> __device__ __forceinline__ u32 digit_of(W word, u32 shift) { return u32(word >> shift) & 0xffu; }

// The lanes of `real_lanes` whose 8-bit digit is this lane's `d`: one ballot a bit of the digit
// (__match_any_sync does the same in one instruction, but at a fraction of a ballot's
// throughput: the first version, with it, took twice the network's time; docs/notes/radix.md).
__device__ __forceinline__ u32 lanes_with_digit(u32 d, u32 real_lanes) {
    u32 peers = real_lanes;
#pragma unroll
    for (u32 b = 0; b < 8; ++b) {
        const bool bit = (d >> b) & 1u;
        const u32 set = __ballot_sync(FULL_WARP_MASK, bit);
        peers &= bit ? set : ~set;
    }
    return peers;
}

// The lanes below this one.
__device__ __forceinline__ u32 lanes_below() {
    u32 mask;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(mask));
    return mask;
}

// Rounds of 32 keys a warp walks in sort_by_digit: a warp's segment holds at most this many, and
// each lane keeps its key and peers of every round in registers between the two walks.
#ifndef KERNEL_RADIX_ROUNDS
#error "the host passes KERNEL_RADIX_ROUNDS (src/policy/radix.rs)"
#endif
#define RADIX_ROUNDS KERNEL_RADIX_ROUNDS

// Where sort_by_digit reads a block's keys and indices (i from 0 to m):
// * SharedKeys: arrays in shared memory (one block a row, between digits);
// * TileKeys: a tile of a row in global memory (the passes), the first digit's keys mapped as
//   they are read and its indices made from their columns (or read: a key-value sort's 4-byte
//   values travel in their place). Its indices are read in the count walk with the keys, so
//   that every global load of a warp is in flight at once.
template <typename W, typename I> struct SharedKeys {
    static constexpr bool HOLD_INDEX = false;  // read again in the scatter walk, from shared memory
    const W *keys;
    const I *index;
    __device__ __forceinline__ W key(u32 i) const { return keys[i]; }
    __device__ __forceinline__ I index_of(u32 i) const { return index[i]; }
};

template <typename W> struct TileKeys {
    static constexpr bool HOLD_INDEX = true;
    const W *keys;           // the tile's first key
    const u32 *index;        // the tile's first index (not read where made from columns)
    u32 first_col;           // the tile's first column in its row
    SortableMap<W> map;      // the first digit's map of the input's keys
    bool first;              // keys mapped as read
    bool index_from_columns; // indices made, not read
    __device__ __forceinline__ W key(u32 i) const { return first ? map.to(keys[i]) : keys[i]; }
    __device__ __forceinline__ u32 index_of(u32 i) const { return index_from_columns ? first_col + i : index[i]; }
};

// What a block does with its count of each digit as soon as it has them (sort_by_digit's
// `on_counts(d, count)`, thread d): nothing, or radix_scatter's publishing for the look-back.
struct IgnoreCounts {
    __device__ __forceinline__ void operator()(u32, u32) const {}
};

// Moves the m sortable words of `src` (and their indices) to dst in shared memory, stably
// ordered by their digit at `shift`, and writes to starts[d] (unless null) where digit d starts
// in dst. With `may_skip`, returns false, having moved nothing, where every key has the same
// digit; else moves them and returns true. Thread d < 256 calls `on_counts(d, count)` with the
// block's count of digit d once the keys are counted, before any moves. `counts` holds
// warps × 256 u16 (a count, then a start, below 2^16); the block has at least 256 threads and
// at least m / (32 × RADIX_ROUNDS) warps. Every thread of the block calls it.
template <typename W, typename I, typename Source, typename OnCounts = IgnoreCounts>
__device__ bool sort_by_digit(const Source &src, W *dst, I *dst_index, u32 m, u32 shift, u16 *counts, u32 *starts,
                              DigitSortShared &sh, bool may_skip, OnCounts on_counts = OnCounts()) {
    const u32 warps = blockDim.x / WARP_SIZE, warp = threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
    // Warp w's segment: whole rounds of 32 keys, the last one cut at the end.
    const u32 segment = ((m + warps - 1) / warps + WARP_SIZE - 1) / WARP_SIZE * WARP_SIZE;
    const u32 begin = min(warp * segment, m), end = min(begin + segment, m);
    u16 *my_counts = counts + warp * RADIX_DIGITS;
    W key[RADIX_ROUNDS];  // (a key's digit is two instructions away)
    u32 peers[RADIX_ROUNDS];
    I index[Source::HOLD_INDEX ? RADIX_ROUNDS : 1];

    // 1. Count this warp's digits, keeping each lane's keys and peers. From global memory
    // (HOLD_INDEX), every load of the warp goes first, before the first ballot; from shared
    // memory, each round loads its own (fewer registers live: one block a row has 1,024
    // threads).
    for (u32 d = lane; d < RADIX_DIGITS; d += WARP_SIZE) my_counts[d] = 0;
    if (threadIdx.x == 0) sh.one_digit = 0;
    if (Source::HOLD_INDEX) {
#pragma unroll
        for (u32 r = 0; r < RADIX_ROUNDS; ++r) {
            const u32 i = begin + r * WARP_SIZE + lane;
            key[r] = i < end ? src.key(i) : W(0);
            index[r] = i < end ? src.index_of(i) : I(0);
        }
    }
    __syncwarp();
#pragma unroll
    for (u32 r = 0; r < RADIX_ROUNDS; ++r) {
        const u32 at = begin + r * WARP_SIZE;
        if (at >= end) break;  // the same for the whole warp
        const bool real = at + lane < end;
        if (!Source::HOLD_INDEX) key[r] = real ? src.key(at + lane) : W(0);
        const u32 d = digit_of(key[r], shift);
        peers[r] = lanes_with_digit(d, __ballot_sync(FULL_WARP_MASK, real));
        if (real && lane == 31 - __clz(peers[r])) my_counts[d] += u16(__popc(peers[r]));
        __syncwarp();
    }
    __syncthreads();

    // 2. Offsets: thread t < 256 scans digit t's counts over the warps, after the totals of the
    // digits below it (a warp's scan, then the warps' totals). The whole block waits between
    // the two, at __syncthreads: a named barrier of the 256 scanning threads alone saved the
    // others nothing (they wait at the next barrier anyway), and with it compute-sanitizer's
    // racecheck reported hazards between these offsets' writes and the scatter's reads, across
    // the block barrier between them (docs/notes/plan-layer.md).
    const u32 digit = threadIdx.x;
    u32 total = 0, inclusive = 0;
    if (digit < RADIX_DIGITS) { // whole warps
        for (u32 w = 0; w < warps; ++w) total += counts[w * RADIX_DIGITS + digit];
        if (total == m) sh.one_digit = 1;
        on_counts(digit, total);
        inclusive = total;
        for (u32 step = 1; step < WARP_SIZE; step *= 2) {
            const u32 below = __shfl_up_sync(FULL_WARP_MASK, inclusive, step);
            if (lane >= step) inclusive += below;
        }
        if (lane == WARP_SIZE - 1) sh.digit_totals[warp] = inclusive;
    }
    __syncthreads();
    if (digit < RADIX_DIGITS) {
        u32 start = inclusive - total;
        for (u32 w = 0; w < warp; ++w) start += sh.digit_totals[w];
        if (starts != nullptr) starts[digit] = start;
        for (u32 w = 0; w < warps; ++w) {
            const u32 c = counts[w * RADIX_DIGITS + digit];
            counts[w * RADIX_DIGITS + digit] = u16(start);
            start += c;
        }
    }
    __syncthreads();
    if (may_skip && sh.one_digit) {
        __syncthreads();  // every thread has read the flag before the next call resets it
        return false;
    }

    // 3. Scatter, in the counting's order, from the registers.
#pragma unroll
    for (u32 r = 0; r < RADIX_ROUNDS; ++r) {
        const u32 at = begin + r * WARP_SIZE;
        if (at >= end) break;
        const u32 i = at + lane;
        const bool real = i < end;
        const u32 d = digit_of(key[r], shift);
        const u32 start = real ? my_counts[d] : 0;
        __syncwarp();
        if (real) {
            const u32 to = start + __popc(peers[r] & lanes_below());
            dst[to] = key[r];
            dst_index[to] = Source::HOLD_INDEX ? index[r] : src.index_of(i);
            if (lane == 31 - __clz(peers[r])) my_counts[d] = u16(start + __popc(peers[r]));
        }
        __syncwarp();
    }
    __syncthreads();
    return true;
}

// ---- One block a row ------------------------------------------------------------------------

// Shared memory (the host's src/plan/radix.rs one_block_shared_bytes): warps × 256 u16 counts,
// two arrays of the row's keys, two of its u16 indices; at least row_len / 512 warps.
template <typename W>
__device__ void row_radix_sort(const W *keys, W *sorted_keys, u32 *indices, u32 row_len, u32 k, u32 map) {
    extern __shared__ __align__(16) unsigned char radix_shared[];
    __shared__ DigitSortShared sh;
    const u32 n = row_len, warps = blockDim.x / WARP_SIZE;
    u16 *counts = reinterpret_cast<u16 *>(radix_shared);
    // Array `from` of each pair starts `from * n` elements in.
    W *const words = reinterpret_cast<W *>(radix_shared + warps * RADIX_DIGITS * sizeof(u16));
    u16 *const index = reinterpret_cast<u16 *>(words + 2 * n);

    const u64 row = blockIdx.x;
    const W *in = keys + row * n;
    const SortableMap<W> m(map);
    for (u32 i = threadIdx.x; i < n; i += blockDim.x) {
        words[i] = m.to(in[i]);
        index[i] = u16(i);
    }
    __syncthreads();
    u32 from = 0;
    for (u32 shift = 0; shift < 8 * sizeof(W); shift += 8) {
        const u32 to = from ^ 1;
        const SharedKeys<W, u16> src{words + from * n, index + from * n};
        if (sort_by_digit(src, words + to * n, index + to * n, n, shift, counts, nullptr, sh, true)) from = to;
    }
    // The words unmapped are the keys, but for a word that stands for several (under a tied map,
    // -0.0 with +0.0, every NaN): then the input's own key by index, unless the outputs are the
    // input.
    const bool from_input = (map & MAP_TIED) && keys != sorted_keys;
    const u64 out = row * k;
    for (u32 j = threadIdx.x; j < k; j += blockDim.x) {
        const u32 i = index[from * n + j];
        const W word = words[from * n + j];
        sorted_keys[out + j] = m.key_of(word, in, i, from_input);
        store_index(indices, out + j, i, map);
    }
}

#define ROW_RADIX_PARAMS(W) (const W *keys, W *sorted_keys, u32 *indices, u32 row_len, u32 k, u32 map)
#define ROW_RADIX_ARGS (keys, sorted_keys, indices, row_len, k, map)

// ---- A pass a digit over tiles --------------------------------------------------------------

// The tiles of rows of `row_len`, `tile` keys each (the last of a row shorter): tile b is tile
// `b % tiles_a_row` of row `b / tiles_a_row`.
struct RadixTiles {
    u32 row_len;
    u32 tile;
    u32 tiles_a_row;
    u32 number;  // the tile's, over every row's

    __device__ __forceinline__ RadixTiles(u32 row_len_, u32 tile_, u32 tiles_a_row_, u32 number_)
        : row_len(row_len_), tile(tile_), tiles_a_row(tiles_a_row_), number(number_) {}

    __device__ __forceinline__ u64 row() const { return number / tiles_a_row; }
    __device__ __forceinline__ u32 in_row() const { return number % tiles_a_row; }
    __device__ __forceinline__ u32 first_col() const { return in_row() * tile; }
    __device__ __forceinline__ u32 len() const { return min(tile, row_len - first_col()); }
};

// The row counts of keys of W bytes: every row's count of each value (256) of each digit (W),
// [row][digit][value].
template <typename W> constexpr u32 ROW_COUNTS = sizeof(W) * RADIX_DIGITS;

// Adds the tile's (block b's) count of each value of each digit of its keys, mapped by
// `key_map` (the call's map), to its row's counts in `row_counts` (zeroed before the launch).
template <typename W>
__device__ void radix_digit_counts(const W *keys, u32 *row_counts, RadixTiles t, u32 key_map) {
    constexpr u32 DIGITS = sizeof(W);
    __shared__ u32 histogram[ROW_COUNTS<W>];
    for (u32 i = threadIdx.x; i < ROW_COUNTS<W>; i += blockDim.x) histogram[i] = 0;
    __syncthreads();
    const SortableMap<W> m(key_map);
    const W *in = keys + t.row() * t.row_len + t.first_col();
    // Four loads in flight a thread before their adds (one at a time, the loads' latency was
    // most of a count's time). Shared atomics: lanes that add to one value together take turns,
    // which digits of few distinct values (a float's highest) feel.
    const u32 len = t.len(), step = blockDim.x;
    u32 i = threadIdx.x;
    for (; i + 3 * step < len; i += 4 * step) {
        W four[4];
#pragma unroll
        for (u32 j = 0; j < 4; ++j) four[j] = m.to(in[i + j * step]);
#pragma unroll
        for (u32 j = 0; j < 4; ++j)
#pragma unroll
            for (u32 d = 0; d < DIGITS; ++d) atomicAdd(&histogram[d * RADIX_DIGITS + digit_of(four[j], 8 * d)], 1u);
    }
    for (; i < len; i += step) {
        const W word = m.to(in[i]);
#pragma unroll
        for (u32 d = 0; d < DIGITS; ++d) atomicAdd(&histogram[d * RADIX_DIGITS + digit_of(word, 8 * d)], 1u);
    }
    __syncthreads();
    u32 *row = row_counts + t.row() * ROW_COUNTS<W>;
    for (u32 i = threadIdx.x; i < ROW_COUNTS<W>; i += blockDim.x)
        if (histogram[i] != 0) atomicAdd(&row[i], histogram[i]);
}

#define RADIX_DIGIT_COUNTS_PARAMS(W) (const W *keys, u32 *row_counts, u32 row_len, u32 tile, u32 tiles_a_row, u32 key_map)
#define RADIX_DIGIT_COUNTS_ARGS (keys, row_counts, RadixTiles(row_len, tile, tiles_a_row, blockIdx.x), key_map)

// The exclusive scan of `value` over the block's threads (blockDim.x a multiple of 32, at most
// 1024), and the block's total in `total`.
__device__ u32 block_exclusive_scan(u32 value, u32 &total) {
    __shared__ u32 warp_sums[32];
    const u32 lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE;
    u32 inclusive = value;
    for (u32 step = 1; step < WARP_SIZE; step *= 2) {
        const u32 below = __shfl_up_sync(FULL_WARP_MASK, inclusive, step);
        if (lane >= step) inclusive += below;
    }
    if (lane == WARP_SIZE - 1) warp_sums[warp] = inclusive;
    __syncthreads();
    u32 before = 0;
    total = 0;
    for (u32 w = 0; w < blockDim.x / WARP_SIZE; ++w) {
        before += w < warp ? warp_sums[w] : 0;
        total += warp_sums[w];
    }
    __syncthreads();  // warp_sums is free for the next call
    return before + inclusive - value;
}

// The look-back's status word of one tile and digit value: 0 until published, then the tile's
// count of the value (AGGREGATE) or the count of its row's tiles up to it (INCLUSIVE), in the
// low 32 bits. One 64-bit word, so that the flag and its count are read together.
#define RADIX_AGGREGATE (1ull << 32)
#define RADIX_INCLUSIVE (2ull << 32)

__device__ __forceinline__ void publish(u64 *status, u64 word) { *reinterpret_cast<volatile u64 *>(status) = word; }

// sort_by_digit's `on_counts` in radix_scatter over rows of several tiles: publishes the tile's
// count of each value, as the row's running total for its first tile.
struct PublishCounts {
    u64 *tile_status;  // the tile's words, one a value
    bool looks_back;   // rows of several tiles (else nothing to publish)
    bool first_tile;   // of its row
    __device__ __forceinline__ void operator()(u32 d, u32 count) const {
        if (looks_back) publish(tile_status + d, (first_tile ? RADIX_INCLUSIVE : RADIX_AGGREGATE) | count);
    }
};

// How many keys of value `d` the row's tiles before tile `b` hold: their published words from
// b - 1 back, waited for, added up until a running total. `row_status` is the row's words,
// [tile][value]. Only earlier tiles are waited for, and every earlier tile has started (tiles
// go in the order blocks start): no wait is for a block that cannot run.
__device__ __forceinline__ u32 look_back(const u64 *row_status, u32 b, u32 d) {
    u32 before = 0;
    for (u32 j = b; j-- > 0;) {
        const volatile u64 *at = row_status + u64(j) * RADIX_DIGITS + d;
        u64 word;
        do {
            word = *at;
        } while ((word >> 32) == 0);
        before += u32(word);
        if (word & RADIX_INCLUSIVE) break;
    }
    return before;
}

// Takes the next tile (`next_tile`, zeroed before the launch), orders it by the digit at
// `shift` in shared memory and stores each key, and its index, at its place in the rows: after
// the row's keys of smaller values of the digit (`row_counts`, radix_digit_counts') and the
// row's earlier tiles' keys of the same value (the look-back through `status`, this digit's
// words, zeroed before the launch). The first digit
// (`first`) reads the input's keys and maps them, and with `index_from_columns` makes each
// index from its column (`index_in` is not read; without it, `index_in` holds a key-value
// sort's 4-byte values, which travel as the indices do); the others read sortable words and
// their u32 indices (keys alone: no index, below). The last digit
// (`last`) stores the first k keys of each row and their indices in rows of k (u64 indices where
// the map has MAP_INDEX64): the words unmapped, or, for a word that stands for several keys
// under a tied map and with `from_input` (outputs that are not the input), the input's own key,
// `input`, by index; the others store every word to `keys_out` and its u32 index to
// `index_out`, in rows of row_len. A sort of keys alone passes a null `index_out` (and
// `index_from_columns` on every digit): it reads and stores no index, only its keys. The keys go
// from global memory to registers and once through shared memory, in the digit's order.
// Shared memory: 256 u32 bases, then warps × 256 u16 counts, then `tile` keys and their u32
// indices (src/plan/radix.rs tile_shared_bytes); tile ≤ 512 × warps.
template <typename W>
__device__ __forceinline__ void scatter_ordered(const W *ordered, const u32 *ordered_index, u32 *bases, W *keys_out,
                                                u32 *index_out, const u32 *row_counts, u64 *status, const W *input,
                                                const RadixTiles t, u32 shift, u32 map, u32 last, u32 k,
                                                u32 from_input);

template <typename W>
__device__ void radix_scatter(const W *keys, const u32 *index_in, W *keys_out, u32 *index_out, const u32 *row_counts,
                              u64 *status, u32 *next_tile, const W *input, u32 row_len, u32 tile, u32 tiles_a_row,
                              u32 shift, u32 map, u32 first, u32 last, u32 k, u32 from_input,
                              u32 index_from_columns) {
    extern __shared__ __align__(16) unsigned char radix_shared[];
    __shared__ DigitSortShared sh;
    __shared__ u32 number;
    // Rows of one tile have nothing to look back at: their tiles go by block.
    const bool looks_back = tiles_a_row > 1;
    if (threadIdx.x == 0) number = looks_back ? atomicAdd(next_tile, 1u) : blockIdx.x;
    __syncthreads();
    const RadixTiles t(row_len, tile, tiles_a_row, number);
    const u32 warps = blockDim.x / WARP_SIZE;
    // Where the tile's keys of each digit go, less where they start in the ordered tile.
    u32 *bases = reinterpret_cast<u32 *>(radix_shared);
    u16 *counts = reinterpret_cast<u16 *>(bases + RADIX_DIGITS);
    W *const ordered = reinterpret_cast<W *>(counts + warps * RADIX_DIGITS);
    u32 *const ordered_index = reinterpret_cast<u32 *>(ordered + t.tile);
    const u32 len = t.len(), col = t.first_col();
    const u64 row_start = t.row() * t.row_len;
    const SortableMap<W> m(map);
    const TileKeys<W> src{keys + row_start + col, index_in + (index_from_columns ? 0 : row_start + col), col, m,
                          first != 0, index_from_columns != 0};
    u32 *starts = bases;
    // Each tile publishes its counts as soon as it has them, before it orders its keys, so
    // that the tiles after it rarely wait for them.
    const PublishCounts publish_counts{status + u64(number) * RADIX_DIGITS, looks_back, t.in_row() == 0};
    sort_by_digit(src, ordered, ordered_index, len, shift, counts, starts, sh, false, publish_counts);
    scatter_ordered<W>(ordered, ordered_index, bases, keys_out, index_out, row_counts, status, input,
                       RadixTiles(row_len, tile, tiles_a_row, *reinterpret_cast<volatile u32 *>(&number)), shift,
                       map, last, k, from_input);
}

// The rest of radix_scatter once its tile is ordered: where its keys go, and the stores. A
// function of the tile's number read again from shared memory, so that no tile state is held
// in registers across the ordering, which holds keys in every register it can.
template <typename W>
__device__ __forceinline__ void scatter_ordered(const W *ordered, const u32 *ordered_index, u32 *bases, W *keys_out,
                                                u32 *index_out, const u32 *row_counts, u64 *status, const W *input,
                                                const RadixTiles t, u32 shift, u32 map, u32 last, u32 k,
                                                u32 from_input) {
    const bool looks_back = t.tiles_a_row > 1;
    const u32 len = t.len();
    const u64 row_start = t.row() * t.row_len;
    const SortableMap<W> m(map);
    u64 *const row_status = status + t.row() * t.tiles_a_row * RADIX_DIGITS;
    u64 *const tile_status = row_status + u64(t.in_row()) * RADIX_DIGITS;
    // Thread d < 256: where the tile's keys of value d start in the ordered tile, and how many.
    const u32 d = threadIdx.x, digit = shift / 8;
    u32 start_in_tile = 0, own = 0, row_count = 0;
    if (d < RADIX_DIGITS) {
        start_in_tile = bases[d];
        own = (d + 1 < RADIX_DIGITS ? bases[d + 1] : len) - start_in_tile;
        if (looks_back) row_count = row_counts[t.row() * ROW_COUNTS<W> + digit * RADIX_DIGITS + d];
    }
    u32 row_total;
    // (its barriers order the reads of bases above before the writes below)
    const u32 smaller = block_exclusive_scan(row_count, row_total);
    if (d < RADIX_DIGITS && !looks_back) {
        bases[d] = u32(row_start);  // the row is the ordered tile
    } else if (d < RADIX_DIGITS) {
        u32 before = 0;
        if (t.in_row() != 0) {  // (the first tile published its total with its counts)
            before = look_back(row_status, t.in_row(), d);
            publish(tile_status + d, RADIX_INCLUSIVE | (before + own));
        }
        bases[d] = u32(row_start) + smaller + before - start_in_tile;
    }
    __syncthreads();
    for (u32 j = threadIdx.x; j < len; j += blockDim.x) {
        const W word = ordered[j];
        const u64 to = bases[digit_of(word, shift)] + j;  // an index into every row's keys
        if (last) {
            const u32 to_col = u32(to - row_start);
            if (to_col < k) {
                const u64 out = t.row() * k + to_col;
                const u32 i = ordered_index[j];
                keys_out[out] = m.key_of(word, input, row_start + i, from_input);
                if (index_out != nullptr) store_index(index_out, out, i, map);
            }
        } else {
            keys_out[to] = word;
            if (index_out != nullptr) index_out[to] = ordered_index[j];
        }
    }
}

#define RADIX_SCATTER_PARAMS(W)                                                                                  \
    (const W *keys, const u32 *index_in, W *keys_out, u32 *index_out, const u32 *row_counts, u64 *status,           \
     u32 *next_tile, const W *input, u32 row_len, u32 tile, u32 tiles_a_row, u32 shift, u32 map, u32 first,        \
     u32 last, u32 k, u32 from_input, u32 index_from_columns)
#define RADIX_SCATTER_ARGS                                                                                       \
    (keys, index_in, keys_out, index_out, row_counts, status, next_tile, input, row_len, tile, tiles_a_row, shift, \
     map, first, last, k, from_input, index_from_columns)

// ---- The kernels of each key width ------------------------------------------------------------

// 8-byte keys hold twice the registers a round: at most 512 threads a block of one row. The
// passes' blocks take at most 512 threads (src/policy/radix.rs) and hold their indices too; two
// of them an SM where the keys are 2 or 4 bytes (64 registers a thread: a third more registers
// would halve the blocks an SM), one where they are 8.
#define RADIX_KERNELS(W, MOST_THREADS, SCATTER_BLOCKS_AN_SM)                                              \
    extern "C" __global__ void __launch_bounds__(MOST_THREADS) row_radix_sort_##W ROW_RADIX_PARAMS(W) {     \
        row_radix_sort<W> ROW_RADIX_ARGS;                                                                  \
    }                                                                                                      \
    extern "C" __global__ void __launch_bounds__(1024) radix_digit_counts_##W RADIX_DIGIT_COUNTS_PARAMS(W) { \
        radix_digit_counts<W> RADIX_DIGIT_COUNTS_ARGS;                                                     \
    }                                                                                                      \
    extern "C" __global__ void __launch_bounds__(512, SCATTER_BLOCKS_AN_SM)                               \
        radix_scatter_##W RADIX_SCATTER_PARAMS(W) {                                                        \
        radix_scatter<W> RADIX_SCATTER_ARGS;                                                               \
    }

RADIX_KERNELS(u16, 1024, 2)
RADIX_KERNELS(u32, 1024, 2)
RADIX_KERNELS(u64, 512, 1)
