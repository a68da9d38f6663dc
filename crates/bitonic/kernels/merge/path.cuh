// The merge path (co-rank) of two sorted runs at an output position: where a tile's words
// come from.
#pragma once

#include "common/types.cuh"

// The merge path at output o of sorted a and b: how many of the first o merged words are a's.
template <typename W> __device__ u64 co_rank(const W *a, u64 a_len, const W *b, u64 b_len, u64 o) {
    u64 lo = o > b_len ? o - b_len : 0, hi = o < a_len ? o : a_len;
    while (lo < hi) {
        u64 mid = lo + (hi - lo) / 2;
        if (!(b[o - mid - 1] < a[mid])) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}
