// CUB's DeviceSegmentedSort on rows of u32 keys, timed like `bitonic bench-rows` times ours:
// fresh random keys every repeat, one warm-up, CUDA events around the sort call alone, the
// median. Prints rows in the row-bench CSV format (crates/bitonic-bench/src/rows.rs):
//   sort        DeviceSegmentedSort::SortKeys
//   argsort     DeviceSegmentedSort::StableSortPairs with each key's index in its row as value
//   sort_by_key DeviceSegmentedSort::SortPairs with u32 values
// and, for a single row, DeviceRadixSort (SortKeys / SortPairs) as "cub-radix".
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o cub_segmented bench/peers/cub_segmented.cu
//   ./cub_segmented REPEATS COMMIT DATE ROWSxLEN... > cub_rows.csv
#include <cub/cub.cuh>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "peer_common.cuh"

__global__ void fill_index_in_row(unsigned *values, size_t n, unsigned row_len) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) values[i] = (unsigned)(i % row_len);
}

static const char *device_name, *commit, *date;
static int driver;

static void print_row(const char *name, size_t rows, size_t row_len, const char *task, std::vector<float> t) {
    std::sort(t.begin(), t.end());
    size_t m = t.size();
    double median = m % 2 ? t[m / 2] : 0.5 * (t[m / 2 - 1] + t[m / 2]);
    std::printf("%s,%s,CUDA %d.%d,%s,%s,u32,%zu,%zu,%s,%.6f,%.6f,%.6f,%zu\n", name, device_name, driver / 1000,
                (driver % 1000) / 10, commit, date, rows, row_len, task, median, (double)t.front(), (double)t.back(), m);
    std::fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: %s REPEATS COMMIT DATE ROWSxLEN...\n", argv[0]);
        return 2;
    }
    int repeats = std::atoi(argv[1]);
    commit = argv[2];
    date = argv[3];
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    device_name = prop.name;
    CHECK(cudaDriverGetVersion(&driver));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    for (int a = 4; a < argc; ++a) {
        size_t rows = 0, row_len = 0;
        if (std::sscanf(argv[a], "%zux%zu", &rows, &row_len) != 2) return 2;
        size_t n = rows * row_len;
        std::vector<int> offsets_host(rows + 1);
        for (size_t r = 0; r <= rows; ++r) offsets_host[r] = int(r * row_len);
        unsigned *keys, *keys_out, *values, *values_out;
        int *offsets;
        CHECK(cudaMalloc(&keys, n * 4));
        CHECK(cudaMalloc(&keys_out, n * 4));
        CHECK(cudaMalloc(&values, n * 4));
        CHECK(cudaMalloc(&values_out, n * 4));
        CHECK(cudaMalloc(&offsets, (rows + 1) * 4));
        CHECK(cudaMemcpy(offsets, offsets_host.data(), (rows + 1) * 4, cudaMemcpyHostToDevice));
        unsigned blocks = (unsigned)((n + 255) / 256);
        auto timed = [&](auto work, bool index_values, int r) {
            fill_random<<<blocks, 256>>>(keys, n, 2 * r + 1);
            if (index_values) fill_index_in_row<<<blocks, 256>>>(values, n, (unsigned)row_len);
            CHECK(cudaGetLastError());
            CHECK(cudaEventRecord(start));
            work();
            CHECK(cudaGetLastError());
            CHECK(cudaEventRecord(stop));
            CHECK(cudaEventSynchronize(stop));
            float ms = 0;
            CHECK(cudaEventElapsedTime(&ms, start, stop));
            return ms;
        };
        // Temporary storage is allocated inside the timed call, as ours allocates its pairs.
        auto segmented_keys = [&] {
            size_t bytes = 0;
            void *temp = nullptr;
            CHECK(cub::DeviceSegmentedSort::SortKeys(temp, bytes, keys, keys_out, (int)n, (int)rows, offsets, offsets + 1));
            CHECK(cudaMallocAsync(&temp, bytes, 0));
            CHECK(cub::DeviceSegmentedSort::SortKeys(temp, bytes, keys, keys_out, (int)n, (int)rows, offsets, offsets + 1));
            CHECK(cudaFreeAsync(temp, 0));
        };
        auto segmented_pairs = [&](bool stable) {
            size_t bytes = 0;
            void *temp = nullptr;
            for (int pass = 0; pass < 2; ++pass) {
                if (pass == 1) CHECK(cudaMallocAsync(&temp, bytes, 0));
                if (stable)
                    CHECK(cub::DeviceSegmentedSort::StableSortPairs(temp, bytes, keys, keys_out, values, values_out, (int)n,
                                                                    (int)rows, offsets, offsets + 1));
                else
                    CHECK(cub::DeviceSegmentedSort::SortPairs(temp, bytes, keys, keys_out, values, values_out, (int)n,
                                                              (int)rows, offsets, offsets + 1));
            }
            CHECK(cudaFreeAsync(temp, 0));
        };
        auto radix = [&](bool pairs) {
            size_t bytes = 0;
            void *temp = nullptr;
            for (int pass = 0; pass < 2; ++pass) {
                if (pass == 1) CHECK(cudaMallocAsync(&temp, bytes, 0));
                if (pairs)
                    CHECK(cub::DeviceRadixSort::SortPairs(temp, bytes, keys, keys_out, values, values_out, n));
                else
                    CHECK(cub::DeviceRadixSort::SortKeys(temp, bytes, keys, keys_out, n));
            }
            CHECK(cudaFreeAsync(temp, 0));
        };
        std::vector<float> t_sort, t_argsort, t_kv, t_radix, t_radix_kv;
        for (int r = 0; r <= repeats; ++r) {
            float a = timed(segmented_keys, false, r);
            float b = timed([&] { segmented_pairs(true); }, true, r);
            float c = timed([&] { segmented_pairs(false); }, false, r);
            if (r == 0) continue;
            t_sort.push_back(a), t_argsort.push_back(b), t_kv.push_back(c);
            if (rows == 1) {
                t_radix.push_back(timed([&] { radix(false); }, false, r));
                t_radix_kv.push_back(timed([&] { radix(true); }, false, r));
            }
        }
        print_row("cub-segmented", rows, row_len, "sort", t_sort);
        print_row("cub-segmented", rows, row_len, "argsort", t_argsort);
        print_row("cub-segmented", rows, row_len, "sort_by_key", t_kv);
        if (rows == 1) {
            print_row("cub-radix", rows, row_len, "sort", t_radix);
            print_row("cub-radix", rows, row_len, "sort_by_key", t_radix_kv);
        }
        CHECK(cudaFree(keys));
        CHECK(cudaFree(keys_out));
        CHECK(cudaFree(values));
        CHECK(cudaFree(values_out));
        CHECK(cudaFree(offsets));
    }
    return 0;
}
