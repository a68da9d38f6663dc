// Compare-exchanges: on registers (branch-free) and on an array by index.
#pragma once

#include "common/types.cuh"

// A comparator on registers: the smaller word to `lo`. min/max on unsigned words compile to
// branch-free instructions; a key-index pair selects both halves on one comparison.
template <typename K> __device__ __forceinline__ void order_pair(K &lo, K &hi) {
    K a = lo, b = hi;
    lo = min(a, b);
    hi = max(a, b);
}

// 64-bit words: one comparison (two instructions on 32-bit halves) selects both. Written in
// PTX because the compiler turns the selects back into min and max, which compare twice.
__device__ __forceinline__ void order_pair(u64 &lo, u64 &hi) {
    asm("{\n\t.reg .pred swap;\n\t"
        "setp.lt.u64 swap, %3, %2;\n\t"
        "selp.b64 %0, %3, %2, swap;\n\t"
        "selp.b64 %1, %2, %3, swap;\n\t}"
        : "=&l"(lo), "=&l"(hi)
        : "l"(lo), "l"(hi));
}

__device__ __forceinline__ void order_pair(KeyIndex &lo, KeyIndex &hi) {
    KeyIndex a = lo, b = hi;
    bool swap = b < a;
    lo = swap ? b : a;
    hi = swap ? a : b;
}
