// The tuned kernels' shapes (keys a thread, swizzle, threads) and the shared tile's slots.
#pragma once

#include "common/types.cuh"
#include "common/keys.cuh"
#include "common/layout.cuh"
#include "common/memory.cuh"

// A tuning: the key word, E = 2^E_BITS keys a thread, the swizzle of the shared tile, and
// log2 of the most threads a block has.
template <typename Key, u32 E_BITS_, u32 SWIZZLE_BITS_, u32 THREAD_BITS_ = 10> struct Tuning {
    typedef Key K;
    static const u32 E_BITS = E_BITS_, SWIZZLE_BITS = SWIZZLE_BITS_;
    static const u32 MAX_TILE_BITS = E_BITS_ + THREAD_BITS_;
};
// Keys a thread, as log2 (E_BITS), come from the host (src/policy/sort.rs; src/plan/passes.rs sizes the
// blocks by them).
#if !defined(KERNEL_E_BITS_U32) || !defined(KERNEL_E_BITS_U32_NARROW) || !defined(KERNEL_E_BITS_U64) || \
    !defined(KERNEL_E_BITS_PAIRS)
#error "the host passes the tuned kernels' KERNEL_E_BITS_* (src/policy/sort.rs)"
#endif
#if !defined(KERNEL_TUNED_THREADS) || !defined(KERNEL_TUNED_THREADS_PAIRS)
#error "the host passes the tuned kernels' most threads, KERNEL_TUNED_THREADS(_PAIRS) (src/policy/sort.rs)"
#endif
// u32: 32 keys a thread, 1024 threads -> up to 2^15 keys (128 KiB) per tile.
typedef Tuning<u32, KERNEL_E_BITS_U32, 5> WideU32;
// u32, 16 keys a thread: twice the threads for the same tile, for small inputs that one
// cluster sorts in one launch, where latency, not instruction count, sets the time.
typedef Tuning<u32, KERNEL_E_BITS_U32_NARROW, 5> NarrowU32;
// u64: 16 keys a thread -> 2^14 keys (128 KiB) per tile with 1024 threads.
typedef Tuning<u64, KERNEL_E_BITS_U64, 4> WideU64;

// Options of the map argument, above the key-map flags (src/kernels/abi.rs).
#if !defined(KERNEL_MAP_ON_LOAD) || !defined(KERNEL_MAP_ON_STORE)
#error "the host passes KERNEL_MAP_ON_LOAD and KERNEL_MAP_ON_STORE (src/kernels/abi.rs)"
#endif
#define MAP_ON_LOAD KERNEL_MAP_ON_LOAD
#define MAP_ON_STORE KERNEL_MAP_ON_STORE

// Key-index pairs (common/types.cuh) sort by key, then index; 16 a thread, 256 threads.
typedef Tuning<KeyIndex, KERNEL_E_BITS_PAIRS, 3, 8> PairTuning;

// log2 of the keys of one block's tile. A module is compiled for one tile size
// (src/kernels/mod.rs): it then holds only the register groups that tile has, which takes
// NVRTC a third of the time of every size at once (a first use waits for it).
#if !defined(KERNEL_TUNED_TILE_BITS)
#error "the host compiles the tuned kernels for one tile size, KERNEL_TUNED_TILE_BITS (src/kernels/mod.rs)"
#endif
constexpr u32 TILE_BITS = KERNEL_TUNED_TILE_BITS;

// Shared-memory slot of tile index i: the low SWIZZLE_BITS bits XORed with the next ones, so
// that a warp reading one key per lane at any power-of-two stride hits distinct banks.
template <typename T> __device__ __forceinline__ u32 slot(u32 i) {
    const u32 S = T::SWIZZLE_BITS;
    return i ^ ((i >> S) & ((1u << S) - 1));
}
