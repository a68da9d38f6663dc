// Stable least-significant-digit radix sorts with indices: the argsorts of rows and the top-k of
// rows by sorting (which, with k the whole row, is the stable sort with indices), for keys of
// 2, 4 and 8 bytes (src/cuda/radix.rs; src/plan/mod.rs Strategy::RowRadix, Strategy::RadixSort).
// The passes also carry a key-value sort's 4-byte values where the indices would go.
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
//   memory. radix_histogram_W counts each tile's digits, laid out [row][digit][tile]; the
//   exclusive scan of that whole array (radix_scan_*) is where each tile's keys of each digit
//   go, since each row's counts add up to its length; radix_scatter_W reads its tile into
//   registers, orders it by the digit into shared memory (so that its stores run in order) and
//   stores each key there.
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

// Moves the m sortable words of `src` (and their indices) to dst in shared memory, stably
// ordered by their digit at `shift`, and writes to starts[d] (unless null) where digit d starts
// in dst. With `may_skip`, returns false, having moved nothing, where every key has the same
// digit; else moves them and returns true. `counts` holds warps × 256 u16 (a count, then a
// start, below 2^16); the block has at least 256 threads and at least m / (32 × RADIX_ROUNDS)
// warps. Every thread of the block calls it.
template <typename W, typename I, typename Source>
__device__ bool sort_by_digit(const Source &src, W *dst, I *dst_index, u32 m, u32 shift, u16 *counts, u32 *starts,
                              DigitSortShared &sh, bool may_skip) {
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
    // digits below it (a warp's scan, then the warps' totals).
    if (threadIdx.x < RADIX_DIGITS) {
        const u32 d = threadIdx.x;
        u32 total = 0;
        for (u32 w = 0; w < warps; ++w) total += counts[w * RADIX_DIGITS + d];
        if (total == m) sh.one_digit = 1;
        u32 inclusive = total;
        for (u32 step = 1; step < WARP_SIZE; step *= 2) {
            const u32 below = __shfl_up_sync(FULL_WARP_MASK, inclusive, step);
            if (lane >= step) inclusive += below;
        }
        if (lane == WARP_SIZE - 1) sh.digit_totals[warp] = inclusive;
        asm volatile("bar.sync 1, %0;" ::"r"(RADIX_DIGITS) : "memory");  // the 256 scanning threads only
        u32 start = inclusive - total;
        for (u32 w = 0; w < warp; ++w) start += sh.digit_totals[w];
        if (starts != nullptr) starts[d] = start;
        for (u32 w = 0; w < warps; ++w) {
            const u32 c = counts[w * RADIX_DIGITS + d];
            counts[w * RADIX_DIGITS + d] = u16(start);
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
        sorted_keys[out + j] = from_input && m.is_tied_word(word) ? in[i] : m.from(word);
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

    __device__ __forceinline__ RadixTiles(u32 row_len_, u32 tile_, u32 tiles_a_row_)
        : row_len(row_len_), tile(tile_), tiles_a_row(tiles_a_row_) {}

    __device__ __forceinline__ u64 row() const { return blockIdx.x / tiles_a_row; }
    __device__ __forceinline__ u32 in_row() const { return blockIdx.x % tiles_a_row; }
    __device__ __forceinline__ u32 first_col() const { return in_row() * tile; }
    __device__ __forceinline__ u32 len() const { return min(tile, row_len - first_col()); }
    // Where the tile's count of digit d lies: [row][digit][tile].
    __device__ __forceinline__ u64 count_at(u32 d) const { return (row() * RADIX_DIGITS + d) * tiles_a_row + in_row(); }
};

// Counts each tile's keys of each digit at `shift` into counts ([row][digit][tile]); `key_map`
// maps the keys as read (the call's map for the first digit's input; 0 for sortable words).
template <typename W>
__device__ void radix_histogram(const W *keys, u32 *counts, RadixTiles t, u32 shift, u32 key_map) {
    __shared__ u32 histogram[RADIX_DIGITS];
    for (u32 d = threadIdx.x; d < RADIX_DIGITS; d += blockDim.x) histogram[d] = 0;
    __syncthreads();
    const SortableMap<W> m(key_map);
    const W *in = keys + t.row() * t.row_len + t.first_col();
    // Four loads in flight a thread before their adds (one at a time, the loads' latency was
    // most of the kernel's time). Shared atomics: lanes that add to one digit together take
    // turns, which only rows of few distinct digits feel.
    const u32 len = t.len(), step = blockDim.x;
    u32 i = threadIdx.x;
    for (; i + 3 * step < len; i += 4 * step) {
        W four[4];
#pragma unroll
        for (u32 j = 0; j < 4; ++j) four[j] = in[i + j * step];
#pragma unroll
        for (u32 j = 0; j < 4; ++j) atomicAdd(&histogram[digit_of(m.to(four[j]), shift)], 1u);
    }
    for (; i < len; i += step) atomicAdd(&histogram[digit_of(m.to(in[i]), shift)], 1u);
    __syncthreads();
    for (u32 d = threadIdx.x; d < RADIX_DIGITS; d += blockDim.x) counts[t.count_at(d)] = histogram[d];
}

#define RADIX_HISTOGRAM_PARAMS(W) \
    (const W *keys, u32 *counts, u32 row_len, u32 tile, u32 tiles_a_row, u32 shift, u32 key_map)
#define RADIX_HISTOGRAM_ARGS (keys, counts, RadixTiles(row_len, tile, tiles_a_row), shift, key_map)

// Orders the tile by the digit at `shift` in shared memory and stores each key, and its index,
// at its place in the rows: `offsets` is the exclusive scan of the counts. The first digit
// (`first`) reads the input's keys and maps them, and with `index_from_columns` makes each
// index from its column (`index_in` is not read; without it, `index_in` holds a key-value
// sort's 4-byte values, which travel as the indices do); the others read sortable words and
// their u32 indices. The last digit
// (`last`) stores the first k keys of each row and their indices in rows of k (u64 indices where
// the map has MAP_INDEX64): the words unmapped, or, for a word that stands for several keys
// under a tied map and with `from_input` (outputs that are not the input), the input's own key,
// `input`, by index; the others store every word to `keys_out` and its u32 index to
// `index_out`, in rows of row_len. The keys go from global memory to registers and once through
// shared memory, in the digit's order.
// Shared memory: 256 u32 bases, then warps × 256 u16 counts, then `tile` keys and their u32
// indices (src/plan/radix.rs tile_shared_bytes); tile ≤ 512 × warps.
template <typename W>
__device__ void radix_scatter(const W *keys, const u32 *index_in, W *keys_out, u32 *index_out, const u32 *offsets,
                              const W *input, RadixTiles t, u32 shift, u32 map, u32 first, u32 last, u32 k,
                              u32 from_input, u32 index_from_columns) {
    extern __shared__ __align__(16) unsigned char radix_shared[];
    __shared__ DigitSortShared sh;
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
    sort_by_digit(src, ordered, ordered_index, len, shift, counts, starts, sh, false);
    for (u32 d = threadIdx.x; d < RADIX_DIGITS; d += blockDim.x) bases[d] = offsets[t.count_at(d)] - bases[d];
    __syncthreads();
    for (u32 j = threadIdx.x; j < len; j += blockDim.x) {
        const W word = ordered[j];
        const u64 to = bases[digit_of(word, shift)] + j;  // an index into every row's keys
        if (last) {
            const u32 to_col = u32(to - row_start);
            if (to_col < k) {
                const u64 out = t.row() * k + to_col;
                const u32 i = ordered_index[j];
                keys_out[out] = from_input && m.is_tied_word(word) ? input[row_start + i] : m.from(word);
                store_index(index_out, out, i, map);
            }
        } else {
            keys_out[to] = word;
            index_out[to] = ordered_index[j];
        }
    }
}

#define RADIX_SCATTER_PARAMS(W)                                                                         \
    (const W *keys, const u32 *index_in, W *keys_out, u32 *index_out, const u32 *offsets, const W *input,    \
     u32 row_len, u32 tile, u32 tiles_a_row, u32 shift, u32 map, u32 first, u32 last, u32 k, u32 from_input,     \
     u32 index_from_columns)
#define RADIX_SCATTER_ARGS                                                                                     \
    (keys, index_in, keys_out, index_out, offsets, input, RadixTiles(row_len, tile, tiles_a_row), shift, map, first, \
     last, k, from_input, index_from_columns)

// ---- The exclusive scan of the counts ---------------------------------------------------------
// Three launches over `len` u32 in chunks of RADIX_SCAN_CHUNK, a block of 256 threads a chunk:
// each chunk's sum, the exclusive scan of the sums (one block), then each chunk's exclusive scan
// from its sum's. The sum of everything is at most 2^31 (the keys of one call).
#define RADIX_SCAN_THREADS 256u
#define RADIX_SCAN_PER_THREAD 16u
#define RADIX_SCAN_CHUNK (RADIX_SCAN_THREADS * RADIX_SCAN_PER_THREAD)

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

extern "C" __global__ void __launch_bounds__(RADIX_SCAN_THREADS) radix_scan_sums(const u32 *data, u32 *sums, u32 len) {
    const u64 first = u64(blockIdx.x) * RADIX_SCAN_CHUNK;
    u32 sum = 0;
    for (u32 i = threadIdx.x; i < RADIX_SCAN_CHUNK; i += RADIX_SCAN_THREADS)
        sum += first + i < len ? data[first + i] : 0;
    u32 total;
    block_exclusive_scan(sum, total);
    if (threadIdx.x == 0) sums[blockIdx.x] = total;
}

// One block of 1024 threads: the exclusive scan of `count` sums, in place.
extern "C" __global__ void __launch_bounds__(1024) radix_scan_of_sums(u32 *sums, u32 count) {
    u32 carry = 0;
    for (u32 base = 0; base < count; base += blockDim.x) {
        const u32 i = base + threadIdx.x;
        const u32 value = i < count ? sums[i] : 0;
        u32 total;
        const u32 before = block_exclusive_scan(value, total);
        if (i < count) sums[i] = carry + before;
        carry += total;
    }
}

extern "C" __global__ void __launch_bounds__(RADIX_SCAN_THREADS) radix_scan_chunks(u32 *data, const u32 *sums, u32 len) {
    // Thread t scans its 16 consecutive values, then the threads' totals scan across the block.
    const u64 first = u64(blockIdx.x) * RADIX_SCAN_CHUNK + threadIdx.x * RADIX_SCAN_PER_THREAD;
    u32 values[RADIX_SCAN_PER_THREAD];
    u32 sum = 0;
#pragma unroll
    for (u32 j = 0; j < RADIX_SCAN_PER_THREAD; ++j) {
        values[j] = first + j < len ? data[first + j] : 0;
        sum += values[j];
    }
    u32 total;
    u32 running = sums[blockIdx.x] + block_exclusive_scan(sum, total);
#pragma unroll
    for (u32 j = 0; j < RADIX_SCAN_PER_THREAD; ++j) {
        if (first + j < len) data[first + j] = running;
        running += values[j];
    }
}

// ---- The kernels of each key width ------------------------------------------------------------

// 8-byte keys hold twice the registers a round: at most 512 threads a block of one row. The
// passes' blocks take at most 512 threads (src/policy/radix.rs) and hold their indices too; two
// of them an SM where the keys are 2 or 4 bytes (64 registers a thread: a third more registers
// would halve the blocks an SM), one where they are 8.
#define RADIX_KERNELS(W, MOST_THREADS, SCATTER_BLOCKS_AN_SM)                                              \
    extern "C" __global__ void __launch_bounds__(MOST_THREADS) row_radix_sort_##W ROW_RADIX_PARAMS(W) {     \
        row_radix_sort<W> ROW_RADIX_ARGS;                                                                  \
    }                                                                                                      \
    extern "C" __global__ void __launch_bounds__(1024) radix_histogram_##W RADIX_HISTOGRAM_PARAMS(W) {      \
        radix_histogram<W> RADIX_HISTOGRAM_ARGS;                                                           \
    }                                                                                                      \
    extern "C" __global__ void __launch_bounds__(512, SCATTER_BLOCKS_AN_SM)                               \
        radix_scatter_##W RADIX_SCATTER_PARAMS(W) {                                                        \
        radix_scatter<W> RADIX_SCATTER_ARGS;                                                               \
    }

RADIX_KERNELS(u16, 1024, 2)
RADIX_KERNELS(u32, 1024, 2)
RADIX_KERNELS(u64, 512, 1)
