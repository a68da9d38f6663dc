// Shared memory as an array of words, and copies from global to shared memory that do not
// wait for the load.
#pragma once

#include "common/types.cuh"

// A copy of one word from global to shared memory that does not wait for the load (sm_80 and
// later: cp.async; before, a plain copy). wait_async_copies() waits for this thread's copies;
// a barrier after it makes them visible to the block.
template <typename T> __device__ __forceinline__ void copy_async(T *shared, const T *global) {
#if __CUDA_ARCH__ >= 800
    static_assert(sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16, "cp.async moves 4, 8 or 16 bytes");
    const u32 to = u32(__cvta_generic_to_shared(shared));
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(to), "l"(global), "n"(sizeof(T)) : "memory");
#else
    *shared = *global;
#endif
}

__device__ __forceinline__ void wait_async_copies() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// Shared memory as an array of K (extern __shared__ cannot be declared per template type).
template <typename K> __device__ __forceinline__ K *shared_tile() {
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    return reinterpret_cast<K *>(shared_bytes);
}
