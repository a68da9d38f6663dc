// The order-preserving key maps of src/key.rs: key bits to the unsigned word the networks
// sort ascending, and back. The flags come from the host as -D defines.
//
// A map argument may also carry a flag that is no part of the key map, which to_sortable and
// from_sortable ignore (they read MAP_KIND_MASK and single flags): MAP_INDEX64 tells a kernel
// that writes indices (the top-k kernels, tuned/packing.cuh's unpack_pair, radix.cu's last stores) to write
// each as a u64 instead of a u32 (store_index); its `indices` parameter keeps its type, u32 *,
// and then points to u64s. Kernels that write no indices ignore it.
#pragma once

#include "common/types.cuh"

// Flags of a key-map argument: src/key.rs's MapKind in the low bits, then options.
#if !defined(KERNEL_MAP_SIGNED) || !defined(KERNEL_MAP_FLOAT) || !defined(KERNEL_MAP_DESCENDING) || \
    !defined(KERNEL_MAP_NUMERIC) || !defined(KERNEL_MAP_TIED) || !defined(KERNEL_MAP_BFLOAT16) || \
    !defined(KERNEL_MAP_INDEX64)
#error "the host passes the key-map flags (src/kernels/abi.rs)"
#endif
#define MAP_KIND_MASK 3u
#define MAP_SIGNED KERNEL_MAP_SIGNED
#define MAP_FLOAT KERNEL_MAP_FLOAT
#define MAP_DESCENDING KERNEL_MAP_DESCENDING
#define MAP_NUMERIC KERNEL_MAP_NUMERIC
#define MAP_TIED KERNEL_MAP_TIED
#define MAP_BFLOAT16 KERNEL_MAP_BFLOAT16
#define MAP_INDEX64 KERNEL_MAP_INDEX64

// Writes `index` as element i of `indices`: a u64 where the map has MAP_INDEX64 (`indices` then
// points to u64s), else a u32.
__device__ __forceinline__ void store_index(u32 *indices, u64 i, u32 index, u32 map) {
    if (map & MAP_INDEX64) reinterpret_cast<u64 *>(indices)[i] = index;
    else indices[i] = index;
}

// The order-preserving map of src/key.rs: key bits to the unsigned word the networks sort
// ascending (descending order sorts the complement), and back.
//
// Both are straight-line code: every choice the map makes is a mask or a constant worked out
// from `map` alone, which a kernel hoists out of its loops, so that each key costs a few
// instructions and no branch. (Branches on the map flags between the keys of an unrolled
// loop kept the compiler from issuing a thread's loads together, and top-k over f32 rows took
// up to 1.6x as long: docs/notes/plan-layer.md.)
//
// The words, ascending, of a float of K's width (16-bit floats are f16 unless MAP_BFLOAT16):
// - total order (src/key.rs SortKey::to_bits_ordered): a positive key with its sign bit set,
//   a negative key complemented, so that -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN;
// - numeric order (MAP_NUMERIC, src/options.rs FloatOrder::Numeric): the total-order word
//   rotated down by the word of -inf, so that -inf becomes 0 and the NaNs with the sign bit
//   wrap around to above +NaN: every NaN sorts last, and the map stays a bijection (a
//   key-only sort loses no bit);
// - tied (MAP_TIED, always with MAP_NUMERIC: src/key.rs SortKey::canonical): keys equal by
//   value get one word, so that they tie in a stable sort: every NaN the quiet NaN's, -0.0
//   the word of +0.0. from_sortable then gives the canonical key.
template <typename K> struct SortableMap {
    K negative_flip;  // xored into a key with its sign bit set: all ones for floats
    K flip;           // xored into every key: the sign bit for signed integers and floats
    K rotation;       // subtracted after the flips: numeric order's, else 0
    K complement;     // xored last: all ones for descending order
    K nan_above;      // tied: the words above it are NaNs (numeric, ascending); else all ones
    K nan_word;       // tied: the quiet NaN's word
    K negative_zero;  // tied: -0.0's word, one below +0.0's
    K zero_span;      // tied: 1, so that -0.0's word alone is raised to +0.0's; else 0 (none is)

    __device__ __forceinline__ explicit SortableMap(u32 map) {
        const K sign = K(1) << (sizeof(K) * 8 - 1);
        const u32 kind = map & MAP_KIND_MASK;
        const bool is_float = kind == MAP_FLOAT;
        negative_flip = is_float ? K(~K(0)) : K(0);
        flip = kind == MAP_SIGNED || is_float ? sign : K(0);
        const K inf = sizeof(K) == 8   ? K(0x7ff0000000000000ull)
                      : sizeof(K) == 4 ? K(0x7f800000u)
                                       : K((map & MAP_BFLOAT16) ? 0x7f80u : 0x7c00u);
        const K minus_inf_word = K(~(sign | inf));
        const bool numeric = is_float && (map & MAP_NUMERIC);
        rotation = numeric ? minus_inf_word : K(0);
        complement = (map & MAP_DESCENDING) ? K(~K(0)) : K(0);
        const bool tied = numeric && (map & MAP_TIED);
        const K quiet_nan = inf | (inf >> 1 & ~inf);  // the exponent's ones and the top mantissa bit
        nan_above = tied ? K((inf ^ sign) - minus_inf_word) : K(~K(0));
        nan_word = K((quiet_nan ^ sign) - minus_inf_word);
        negative_zero = K(K(~sign) - minus_inf_word);
        zero_span = tied ? K(1) : K(0);
    }

    // All ones where w's top bit is set, else 0.
    __device__ __forceinline__ static K top_bit_mask(K w) { return K(K(0) - K(w >> (sizeof(K) * 8 - 1))); }

    // `numeric` false leaves out numeric order's rotation and the tests of tied keys, for a map
    // known to have neither (no MAP_NUMERIC: the rotation is 0 and nothing ties).
    __device__ __forceinline__ K to(K w, bool numeric = true) const {
        K x = K(w ^ ((top_bit_mask(w) & negative_flip) | flip));
        if (numeric) {
            x = K(x - rotation);
            // Untied, neither test can hold. Tests against constants rather than a flag, so that
            // the compiler has no flag to branch on between keys.
            x = x > nan_above ? nan_word : x;
            x = K(x + K(K(x - negative_zero) < zero_span));
        }
        return K(x ^ complement);
    }

    __device__ __forceinline__ K from(K x) const {
        x = K((x ^ complement) + rotation);
        // A word with its top bit clear was a negative float: complement it whole.
        return K(x ^ ((K(~top_bit_mask(x)) & negative_flip) | flip));
    }

    // Whether `word` (one of `to`'s) stands for several keys, so that `from` cannot give back
    // the key it was made from: under a tied map, the quiet NaN's word and +0.0's. Sorts that
    // must return the input's own bits read those keys again from the input.
    __device__ __forceinline__ bool is_tied_word(K word) const {
        const K x = K(word ^ complement);
        return ties() && (x == nan_word || x == K(negative_zero + K(1)));
    }

    // Whether any word stands for several keys (a tied map).
    __device__ __forceinline__ bool ties() const { return zero_span != K(0); }

    // The key that `word` stands for, bit for bit, given the keys it was made from and its
    // `index` there: `from(word)`, except for a word that stands for several keys
    // (is_tied_word), whose key is read again from `keys` (so that -0.0 stays -0.0 and a NaN
    // keeps its payload and sign) where `may_read` (false where the outputs overwrote the keys:
    // then the canonical key). Every other word reads nothing: reading every result back by its
    // index scattered the top-k write-outs' loads over the row (half the spread select's
    // sectors; docs/notes/plan-layer.md).
    template <typename Index>
    __device__ __forceinline__ K key_of(K word, const K *keys, Index index, bool may_read = true) const {
        return may_read && is_tied_word(word) ? keys[index] : from(word);
    }
};

template <typename K> __device__ __forceinline__ K to_sortable(K w, u32 map) { return SortableMap<K>(map).to(w); }
template <typename K> __device__ __forceinline__ K from_sortable(K w, u32 map) { return SortableMap<K>(map).from(w); }

// Whether numeric order's work is compiled into a key's map: its rotation and the tests of tied
// keys. The hot loops that map every key of a row (the top-k loads: load_chunk,
// load_chunk_unpadded, filter_tiles, warp_composites, map_samples) come in two copies, one with
// that work and one without, chosen by one branch on MAP_NUMERIC outside the loop, so that a map
// in the default total order pays four instructions a key (a shift, a select and two logic
// operations, in the spread gather's SASS) and no more; elsewhere the whole map runs
// (RuntimeOrder), its rotation 0 and its tests no-ops for such a map. (The copies once split
// on ties alone; splitting on numeric order took the rotation out too and gave back about 1% on
// the top-k cells it was meant for: docs/notes/plan-layer.md.)
template <bool NUMERIC> struct KnownOrder {};
struct RuntimeOrder {};

template <typename K> __device__ __forceinline__ K to_sortable(K w, u32 map, RuntimeOrder) { return to_sortable(w, map); }
template <typename K, bool NUMERIC> __device__ __forceinline__ K to_sortable(K w, u32 map, KnownOrder<NUMERIC>) {
    return SortableMap<K>(map).to(w, NUMERIC);
}

// `map` as the compiler cannot see through. The constants of a SortableMap made from it are
// then worked out where they are used, and not kept in registers from an earlier use across
// the code between: a warp sort's network needs every register it has (without this, the
// key map's constants from the loads stayed live until the stores and the network spilled).
__device__ __forceinline__ u32 map_here(u32 map) {
    u32 here;
    asm volatile("mov.b32 %0, %1;" : "=r"(here) : "r"(map));
    return here;
}

// A key-index pair maps its key (kernels that map words map pairs alike).
__device__ __forceinline__ KeyIndex to_sortable(KeyIndex w, u32 map) {
    w.key = to_sortable(w.key, map);
    return w;
}
__device__ __forceinline__ KeyIndex from_sortable(KeyIndex w, u32 map) {
    w.key = from_sortable(w.key, map);
    return w;
}
