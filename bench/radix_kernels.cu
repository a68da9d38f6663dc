// The radix sorts' kernels (crates/bitonic/kernels/radix.cu) alone, without the library: one
// block a row and the passes over tiles on u32 and u16 keys, timed by CUDA events (median of 9
// after a warm-up, fresh copies of the same random keys), each checked against a stable CPU
// sort of (key, index). For trying a kernel change on the GPU host without a Rust build:
// compile against any copy of radix.cu.
//   nvcc -O3 -arch=sm_90 -std=c++17 -I crates/bitonic/kernels -DRADIX_CU='"radix.cu"' \
//     -DKERNEL_MAP_SIGNED=1 -DKERNEL_MAP_FLOAT=2 -DKERNEL_MAP_DESCENDING=4 -DKERNEL_MAP_NUMERIC=32 \
//     -DKERNEL_MAP_BFLOAT16=64 -DKERNEL_MAP_TIED=256 -DKERNEL_MAP_INDEX64=128 \
//     -DKERNEL_KEY_INDEX_BYTES=16 -DKERNEL_RADIX_ROUNDS=16u -o /tmp/radix_kernels bench/radix_kernels.cu \
//     && /tmp/radix_kernels
#include RADIX_CU
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                                        \
    do {                                                                                                   \
        cudaError_t e = (call);                                                                            \
        if (e != cudaSuccess) { printf("%s: %s\n", #call, cudaGetErrorString(e)); exit(1); }                \
    } while (0)

// The kernels of W, by name.
template <typename W> void *row_kernel() {
    if constexpr (sizeof(W) == 4) return (void *)row_radix_sort_u32;
    else return (void *)row_radix_sort_u16;
}
template <typename W> void *scatter_kernel() {
    if constexpr (sizeof(W) == 4) return (void *)radix_scatter_u32;
    else return (void *)radix_scatter_u16;
}
template <typename W>
void launch_row(u32 blocks, u32 threads, size_t shared, const W *keys, W *out, u32 *index, u32 row_len, u32 map) {
    if constexpr (sizeof(W) == 4) row_radix_sort_u32<<<blocks, threads, shared>>>(keys, out, index, row_len, row_len, map);
    else row_radix_sort_u16<<<blocks, threads, shared>>>(keys, out, index, row_len, row_len, map);
}
template <typename W>
void launch_counts(u32 blocks, const W *src, u32 *row_counts, u32 row_len, u32 tile, u32 tiles_a_row) {
    if constexpr (sizeof(W) == 4) radix_digit_counts_u32<<<blocks, 256>>>(src, row_counts, row_len, tile, tiles_a_row, 0);
    else radix_digit_counts_u16<<<blocks, 256>>>(src, row_counts, row_len, tile, tiles_a_row, 0);
}
template <typename W>
void launch_scatter(u32 blocks, u32 threads, size_t shared, const W *src, const u32 *isrc, W *dst, u32 *idst,
                    const u32 *row_counts, u64 *status, u32 *next_tile, u32 row_len, u32 tile, u32 tiles_a_row,
                    u32 shift, u32 first, u32 last) {
    if constexpr (sizeof(W) == 4)
        radix_scatter_u32<<<blocks, threads, shared>>>(src, isrc, dst, idst, row_counts, status, next_tile, src, row_len,
                                                       tile, tiles_a_row, shift, 0, first, last, row_len, 0, first);
    else
        radix_scatter_u16<<<blocks, threads, shared>>>(src, isrc, dst, idst, row_counts, status, next_tile, src, row_len,
                                                       tile, tiles_a_row, shift, 0, first, last, row_len, 0, first);
}

template <typename W>
void sort_rows(const W *keys, W *out, u32 *index_out, u32 rows, u32 row_len, bool passes, W *buf, u32 *ibuf,
               u64 *look_back) {
    const u32 map = KERNEL_MAP_INDEX64 * 0;
    if (!passes) {
        const u32 threads = std::max<u32>(256, (row_len + 32 * RADIX_ROUNDS - 1) / (32 * RADIX_ROUNDS) * 32);
        const size_t shared = threads / 32 * 512 + 2 * size_t(row_len) * sizeof(W) + 4 * size_t(row_len);
        CHECK(cudaFuncSetAttribute(row_kernel<W>(), cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
        launch_row<W>(rows, threads, shared, keys, out, index_out, row_len, map);
        return;
    }
    // The tile of the passes: RK_TILE keys (8,192 unless set, as RadixPolicy::HOPPER; at most
    // 8,192: 512 threads), or the row's power of two.
    static const u32 tile_most =
        std::min(8192u, std::getenv("RK_TILE") ? u32(std::atoi(std::getenv("RK_TILE"))) : 8192u);
    const u32 tile = std::min<u32>(tile_most, std::max<u32>(256, 1u << (32 - __builtin_clz(row_len - 1))));
    const u32 tiles_a_row = (row_len + tile - 1) / tile, blocks = rows * tiles_a_row;
    const size_t n = size_t(rows) * row_len;
    const u32 tile_threads = std::max<u32>(256, tile / (32 * RADIX_ROUNDS) * 32);
    const size_t shared = 1024 + tile_threads / 32 * 512 + size_t(tile) * sizeof(W) + 4 * size_t(tile);
    CHECK(cudaFuncSetAttribute(scatter_kernel<W>(), cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
    const u32 digits = sizeof(W);
    // The look-back's words (src/plan/radix.rs LookBack): each digit's status words, then the
    // row counts and each digit's next tile, zeroed; the counts of every digit in one launch.
    const size_t status = size_t(blocks) * 256, row_counts = size_t(rows) * digits * 256;
    u32 *counts = reinterpret_cast<u32 *>(look_back + digits * status), *next_tiles = counts + row_counts;
    if (tiles_a_row > 1) {
        CHECK(cudaMemsetAsync(look_back, 0, 8 * (digits * status + (row_counts + digits + 1) / 2)));
        launch_counts<W>(blocks, keys, counts, row_len, tile, tiles_a_row);
    }
    for (u32 d = 0; d < digits; ++d) {
        const bool first = d == 0, last = d + 1 == digits;
        const W *src = first ? keys : buf + (d % 2 == 1 ? 0 : n);
        const u32 *isrc = first ? nullptr : ibuf + (d % 2 == 1 ? 0 : n);
        W *dst = last ? out : buf + (d % 2 == 0 ? 0 : n);
        u32 *idst = last ? index_out : ibuf + (d % 2 == 0 ? 0 : n);
        launch_scatter<W>(blocks, tile_threads, shared, src, isrc, dst, idst, counts, look_back + d * status,
                          next_tiles + d, row_len, tile, tiles_a_row, 8 * d, first, last);
    }
}

template <typename W> void run(const char *name, u32 rows, u32 row_len, bool passes) {
    if (!passes && (row_len + 32 * RADIX_ROUNDS - 1) / (32 * RADIX_ROUNDS) * 32 > 1024) {
        printf("%-28s block   (more than 1024 threads at %u rounds)\n", name, RADIX_ROUNDS);
        return;
    }
    const size_t n = size_t(rows) * row_len;
    std::vector<W> host(n);
    std::mt19937_64 rng(rows * 31 + row_len);
    for (auto &k : host) k = W(rng() >> 20);  // few-distinct-ish for u16, random for u32
    W *keys, *out, *buf;
    u32 *index, *ibuf;
    u64 *look_back;
    CHECK(cudaMalloc(&keys, n * sizeof(W)));
    CHECK(cudaMalloc(&out, n * sizeof(W)));
    CHECK(cudaMalloc(&buf, 2 * n * sizeof(W)));
    CHECK(cudaMalloc(&index, n * 4));
    CHECK(cudaMalloc(&ibuf, 2 * n * 4));
    // (at least a tile of 256 a block: status words of 2 digits of u16 or 4 of u32, and counts)
    CHECK(cudaMalloc(&look_back, (n / 256 + rows + 16) * 256 * 8 * 4 + size_t(rows) * 4 * 256 * 4 + 64));
    CHECK(cudaMemcpy(keys, host.data(), n * sizeof(W), cudaMemcpyHostToDevice));
    sort_rows<W>(keys, out, index, rows, row_len, passes, buf, ibuf, look_back);
    CHECK(cudaDeviceSynchronize());
    std::vector<float> ms;
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int r = 0; r < 9; ++r) {
        cudaEventRecord(a);
        sort_rows<W>(keys, out, index, rows, row_len, passes, buf, ibuf, look_back);
        cudaEventRecord(b);
        CHECK(cudaEventSynchronize(b));
        float t;
        cudaEventElapsedTime(&t, a, b);
        ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    std::vector<W> got(n);
    std::vector<u32> got_index(n);
    CHECK(cudaMemcpy(got.data(), out, n * sizeof(W), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(got_index.data(), index, n * 4, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (u32 r = 0; r < rows && r < 64; ++r) {
        std::vector<u32> want(row_len);
        std::iota(want.begin(), want.end(), 0u);
        const W *row = host.data() + size_t(r) * row_len;
        std::stable_sort(want.begin(), want.end(), [&](u32 x, u32 y) { return row[x] < row[y]; });
        for (u32 j = 0; j < row_len; ++j)
            bad += got_index[size_t(r) * row_len + j] != want[j] || got[size_t(r) * row_len + j] != row[want[j]];
    }
    printf("%-28s %-7s %8.3f ms  (min %.3f)  %s\n", name, passes ? "passes" : "block", ms[4], ms[0],
           bad ? "WRONG" : "ok");
    cudaFree(keys); cudaFree(out); cudaFree(buf); cudaFree(index); cudaFree(ibuf); cudaFree(look_back);
}

// With an argument, only the cases whose name holds it (as `ncu` profiles one case).
int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : "";
    auto wanted = [&](const char *name) { return std::strstr(name, only) != nullptr; };
    if (wanted("u32 65536 x 256")) run<u32>("u32 65536 x 256", 65536, 256, false);
    if (wanted("u32 16384 x 1024")) run<u32>("u32 16384 x 1024", 16384, 1024, false);
    if (wanted("u32 4096 x 4096 block")) run<u32>("u32 4096 x 4096", 4096, 4096, false);
    if (wanted("u32 4096 x 4096 passes")) run<u32>("u32 4096 x 4096", 4096, 4096, true);
    if (wanted("u32 1024 x 16384 block")) run<u32>("u32 1024 x 16384", 1024, 16384, false);
    if (wanted("u32 1024 x 16384 passes")) run<u32>("u32 1024 x 16384", 1024, 16384, true);
    if (wanted("u32 1 x 2^20")) run<u32>("u32 1 x 2^20", 1, 1 << 20, true);
    if (wanted("u32 1 x 2^24")) run<u32>("u32 1 x 2^24", 1, 1 << 24, true);
    if (wanted("u32 1 x 2^26")) run<u32>("u32 1 x 2^26", 1, 1 << 26, true);
    if (wanted("u32 64 x 128256")) run<u32>("u32 64 x 128256", 64, 128256, true);
    if (wanted("u16 256 x 151936")) run<u16>("u16 256 x 151936", 256, 151936, true);
    if (wanted("u16 4096 x 4096")) run<u16>("u16 4096 x 4096", 4096, 4096, false);
    return 0;
}
