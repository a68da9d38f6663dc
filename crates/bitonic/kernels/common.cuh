// Shared pieces of every bitonic kernel.
//
// The network is in its all-ascending form (see src/network.rs): the first step of the stage
// with merge size `size` pairs i with its mirror i ^ (size - 1), later steps pair i with
// i ^ stride, and every comparator leaves the smaller key at the lower index. A length n that
// is not a power of two is padded, virtually, with +inf keys; such keys never move, so any
// comparator whose upper index is >= n is skipped (or, in shared memory, the tile is padded
// with the largest key). Keys are unsigned words: src/key.rs maps every key type to them.
//
// The seed versions include this file; the tuned and merge kernels include the parts they use.
#pragma once

#include "common/types.cuh"
#include "common/keys.cuh"
#include "common/compare.cuh"
#include "common/memory.cuh"
#include "common/network.cuh"
