// The tuned sort: every launch is one *pass* that reads a tile of 2^tile_bits keys into shared
// memory, runs as many network steps on it as the tile's index bits allow, and writes it back.
// docs/notes/tuned.md explains the design and its measurements; src/plan/passes.rs plans the
// list of passes. Four shapes of pass, all this one kernel:
//
//  * tile sort: a contiguous tile (tile bit i = global bit i) runs whole stages 0 .. b_last;
//  * strided pass: the tile is rows of 2^col_bits adjacent keys (tile bits 0 .. col_bits-1 are
//    global bits 0 .. col_bits-1; at least 5, so each warp still reads 32 adjacent keys), and
//    the rows lie 2^lo keys apart (tile bits col_bits.. are global bits lo..). It runs the
//    steps of one stage whose bits lie in lo .. hi_first;
//  * window: a strided pass that runs the last steps of stage b (bits hi_first .. 0, all in
//    its rows) and then the first steps of stage b+1 (bits b+1 .. stop, all in its row bits),
//    so that no pass is spent on a few leftover bits of a stage (src/plan/passes.rs);
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
// (src/cuda/rows.rs). Keys are u32 or u64 words, or 16-byte key-index pairs.
//
// Layers: tuned/registers.cuh (a thread's keys), tuned/lanes.cuh (a warp's), tuned/tile_sort.cuh
// (a block's tile), tuned/cluster.cuh (a cluster's), tuned/pass.cuh (one launch); this file
// only exports the kernels.
#include "tuned/pass.cuh"

// Capped at 64 registers a thread (the bound a 1024-thread block implies): a few values spill,
// but two 512-thread blocks of 64 KiB tiles then share an SM, and one block's loads and
// barriers overlap the other's register work. 128 spill-free registers with one block per SM
// measured slower, for the first pass too (docs/notes/tuned.md). Key-index pairs take three
// registers a key: 256 threads. The kernel keeps `tile_bits` among its parameters: the host's
// word for the tile it sized the launch by, checked against the tile the module was compiled
// for. A pass reads its tile from `src` and writes it to `keys`: the same array but for a merge
// sort's tile sort, which sorts into the buffer its first merge level reads when the levels
// are odd, so that the last level ends in the caller's array (no copy back). `packing` lets
// the first pass over key-index pairs read the caller's keys, and the last write a row's first k
// (tuned/packing.cuh); its flags are 0 elsewhere, and always in the u32 kernels.
#define TUNED_PASS(T, NAME, MAX_THREADS)                                                         \
    static_assert(T::E_BITS + 5 <= TILE_BITS && TILE_BITS <= T::MAX_TILE_BITS, "one warp's keys to a whole block's"); \
    static_assert(1u << (T::MAX_TILE_BITS - T::E_BITS) == MAX_THREADS, "the block the host sizes tiles by");     \
    extern "C" __global__ void __launch_bounds__(MAX_THREADS) tuned_pass_##NAME(                 \
        const T::K *src, T::K *keys, RowLayout layout, u32 tile_bits, u32 col_bits, u32 lo,      \
        u32 b_first, u32 b_last, u32 hi_first, u32 stop, u32 map, Packing packing) {             \
        if (tile_bits != TILE_BITS) __trap();                                                    \
        tuned_pass<T>(src, keys, layout, col_bits, lo, b_first, b_last, hi_first, stop, map, packing); \
    }
// One compile a word type (src/kernels/mod.rs defines KERNEL_PART_*) and tile size
// (KERNEL_TUNED_TILE_BITS), so that a sort compiles only the kernel it runs.
#if defined(KERNEL_PART_U32)
TUNED_PASS(WideU32, u32, KERNEL_TUNED_THREADS)
#elif defined(KERNEL_PART_U32_NARROW)
TUNED_PASS(NarrowU32, u32_narrow, KERNEL_TUNED_THREADS)
#elif defined(KERNEL_PART_U64)
TUNED_PASS(WideU64, u64, KERNEL_TUNED_THREADS)
#elif defined(KERNEL_PART_KV64)
TUNED_PASS(PairTuning, kv64, KERNEL_TUNED_THREADS_PAIRS)
#else
#error "compile one part: KERNEL_PART_U32, _U32_NARROW, _U64 or _KV64 (src/kernels/mod.rs)"
#endif
