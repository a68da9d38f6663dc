// Shared pieces of every bitonic kernel.
//
// The network is in its all-ascending form (see src/network.rs): the first step of the stage
// with merge size `size` pairs i with its mirror i ^ (size - 1), later steps pair i with
// i ^ stride, and every comparator leaves the smaller key at the lower index. A length n that
// is not a power of two is padded, virtually, with +inf keys; such keys never move, so any
// comparator whose upper index is >= n is skipped (or, in shared memory, the tile is padded
// with the largest key). Keys are unsigned words: src/key.rs maps every key type to them.
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

#define FULL_WARP_MASK 0xffffffffu
#define WARP_SIZE 32

template <typename K> __device__ __forceinline__ K largest_key();
template <> __device__ __forceinline__ u32 largest_key<u32>() { return 0xffffffffu; }
template <> __device__ __forceinline__ u64 largest_key<u64>() { return 0xffffffffffffffffull; }

// Flags of a key-map argument: src/key.rs's MapKind in the low bits, then options.
#define MAP_KIND_MASK 3u
#define MAP_SIGNED 1u
#define MAP_FLOAT 2u
#define MAP_DESCENDING 4u

// The order-preserving map of src/key.rs: key bits to the unsigned word the networks sort
// ascending (descending order sorts the complement), and back.
template <typename K> __device__ __forceinline__ K to_sortable(K w, u32 map) {
    const K sign = K(1) << (sizeof(K) * 8 - 1);
    u32 kind = map & MAP_KIND_MASK;
    if (kind == MAP_SIGNED) w ^= sign;
    if (kind == MAP_FLOAT) w = (w & sign) ? ~w : w ^ sign;
    return (map & MAP_DESCENDING) ? ~w : w;
}

template <typename K> __device__ __forceinline__ K from_sortable(K w, u32 map) {
    const K sign = K(1) << (sizeof(K) * 8 - 1);
    if (map & MAP_DESCENDING) w = ~w;
    u32 kind = map & MAP_KIND_MASK;
    if (kind == MAP_SIGNED) w ^= sign;
    if (kind == MAP_FLOAT) w = (w & sign) ? w ^ sign : ~w;
    return w;
}

// A 64-bit sortable key with the index that makes it unique (key-value sorts and argsort of
// 64-bit keys; 32-bit keys pack both into one u64 instead). Ordered by key, then index.
struct KeyIndex {
    u64 key;
    u32 index;
    u32 unused; // 16 bytes: one vector load or store
};

__device__ __forceinline__ bool operator<(const KeyIndex &a, const KeyIndex &b) {
    return a.key < b.key || (a.key == b.key && a.index < b.index);
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

template <> __device__ __forceinline__ KeyIndex largest_key<KeyIndex>() {
    KeyIndex k;
    k.key = largest_key<u64>();
    k.index = largest_key<u32>(); // above every real index: padding stays last
    k.unused = 0;
    return k;
}

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

// The partner of index i in the step (size, stride).
__device__ __forceinline__ u32 partner(u32 i, u32 size, u32 stride) {
    bool first_step_of_stage = stride * 2 == size;
    return first_step_of_stage ? i ^ (size - 1) : i ^ stride;
}

// The lower index of comparator t: a zero bit inserted at the stride's position.
// This is the report's get_lower_partner (V4).
__device__ __forceinline__ u32 lower_index(u32 t, u32 stride) {
    u32 low = stride - 1;
    return ((t & ~low) << 1) | (t & low);
}

// Smaller key to keys[i], larger to keys[j] (i < j).
template <typename K> __device__ __forceinline__ void compare_exchange(K *keys, u32 i, u32 j) {
    K a = keys[i], b = keys[j];
    if (b < a) {
        keys[i] = b;
        keys[j] = a;
    }
}

// One network step over global memory, one thread per key (V0, and V1-V3's steps that span
// blocks). Half the threads find their partner below them and do nothing.
template <typename K>
__device__ __forceinline__ void global_step_per_key(K *keys, u32 n, u32 size, u32 stride) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 j = partner(i, size, stride);
    if (j > i && j < n) compare_exchange(keys, i, j);
}

// One network step over global memory, one thread per comparator (V4, V5). The grid covers
// padded_n / 2 comparators.
template <typename K>
__device__ __forceinline__ void global_step_per_pair(K *keys, u32 n, u32 size, u32 stride) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    u32 i = lower_index(t, stride);
    u32 j = stride * 2 == size ? i ^ (size - 1) : i + stride;
    if (j < n) compare_exchange(keys, i, j);
}

// Shared memory as an array of K (extern __shared__ cannot be declared per template type).
template <typename K> __device__ __forceinline__ K *shared_tile() {
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    return reinterpret_cast<K *>(shared_bytes);
}

// Declares name_u32 and name_u64 kernels that call the template name<K>.
#define EXPORT_FOR_BOTH_WIDTHS(name, PARAMS, ARGS)                                           \
    extern "C" __global__ void name##_u32 PARAMS(u32) { name<u32> ARGS; }                   \
    extern "C" __global__ void name##_u64 PARAMS(u64) { name<u64> ARGS; }

// The same for u32, u64 and 16-byte KeyIndex words (name_kv64).
#define EXPORT_FOR_ALL_WORDS(name, PARAMS, ARGS)                                             \
    EXPORT_FOR_BOTH_WIDTHS(name, PARAMS, ARGS)                                               \
    extern "C" __global__ void name##_kv64 PARAMS(KeyIndex) { name<KeyIndex> ARGS; }

#define STEP_PARAMS(K) (K * keys, u32 n, u32 size, u32 stride)
#define STEP_ARGS (keys, n, size, stride)
#define SORT_PARAMS(K) (K * keys, u32 n)
#define SORT_ARGS (keys, n)
#define MERGE_PARAMS(K) (K * keys, u32 n, u32 size)
#define MERGE_ARGS (keys, n, size)
