// CUB's DeviceRadixSort and DeviceMergeSort on u32 or u64 keys, timed like `bitonic bench` times ours:
// fresh random keys for every repeat, one warm-up, CUDA events around the sort call alone,
// the median of the repeats. Prints rows in bitonic's bench CSV format (crates/bitonic-bench/src/lib.rs).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o cub_sort bench/peers/cub_sort.cu
//   ./cub_sort MIN_EXP MAX_EXP REPEATS COMMIT DATE [u32|u64] > cub.csv
#include <cub/cub.cuh>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "peer_common.cuh"

struct Less {
    template <typename K> __device__ bool operator()(K a, K b) const { return a < b; }
};

struct Timer {
    cudaEvent_t start, stop;
    Timer() { CHECK(cudaEventCreate(&start)); CHECK(cudaEventCreate(&stop)); }
    template <typename F> float time(F work) {
        CHECK(cudaEventRecord(start));
        work();
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        return ms;
    }
};

static void print_row(const char *name, const char *device, int driver, const char *commit, const char *date,
                      const char *dtype, size_t n, std::vector<float> t) {
    std::sort(t.begin(), t.end());
    size_t m = t.size();
    double median = m % 2 ? t[m / 2] : 0.5 * (t[m / 2 - 1] + t[m / 2]);
    std::printf("%s,%s,CUDA %d.%d,%s,%s,%s,%zu,device,%.6f,%.6f,%.6f,%zu,,false\n", name, device, driver / 1000,
                (driver % 1000) / 10, commit, date, dtype, n, median, (double)t.front(), (double)t.back(), m);
    std::fflush(stdout);
}

template <typename K> static int run(char **argv, const char *dtype) {
    int min_exp = std::atoi(argv[1]), max_exp = std::atoi(argv[2]), repeats = std::atoi(argv[3]);
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int driver = 0;
    CHECK(cudaDriverGetVersion(&driver));
    Timer timer;
    for (int exp = min_exp; exp <= max_exp; ++exp) {
        size_t n = size_t(1) << exp;
        K *in, *out;
        CHECK(cudaMalloc(&in, n * sizeof(K)));
        CHECK(cudaMalloc(&out, n * sizeof(K)));
        size_t radix_bytes = 0, merge_bytes = 0;
        CHECK(cub::DeviceRadixSort::SortKeys(nullptr, radix_bytes, in, out, n));
        CHECK(cub::DeviceMergeSort::SortKeys(nullptr, merge_bytes, in, n, Less()));
        size_t temp_bytes = std::max(radix_bytes, merge_bytes);
        void *temp;
        CHECK(cudaMalloc(&temp, temp_bytes));
        unsigned blocks = (unsigned)((n + 255) / 256);
        std::vector<float> radix, merge;
        for (int r = 0; r <= repeats; ++r) {
            fill_random<<<blocks, 256>>>(in, n, 2 * r + 1);
            size_t bytes = radix_bytes;
            float t = timer.time([&] { CHECK(cub::DeviceRadixSort::SortKeys(temp, bytes, in, out, n)); });
            if (r > 0) radix.push_back(t);
            fill_random<<<blocks, 256>>>(in, n, 2 * r + 2);
            bytes = merge_bytes;
            t = timer.time([&] { CHECK(cub::DeviceMergeSort::SortKeys(temp, bytes, in, n, Less())); });
            if (r > 0) merge.push_back(t);
        }
        print_row("cub-radix", prop.name, driver, argv[4], argv[5], dtype, n, radix);
        print_row("cub-merge", prop.name, driver, argv[4], argv[5], dtype, n, merge);
        CHECK(cudaFree(in));
        CHECK(cudaFree(out));
        CHECK(cudaFree(temp));
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *dtype = argc == 7 ? argv[6] : "u32";
    if ((argc != 6 && argc != 7) || (std::strcmp(dtype, "u32") && std::strcmp(dtype, "u64"))) {
        std::fprintf(stderr, "usage: %s MIN_EXP MAX_EXP REPEATS COMMIT DATE [u32|u64]\n", argv[0]);
        return 2;
    }
    return std::strcmp(dtype, "u64") ? run<unsigned>(argv, dtype) : run<unsigned long long>(argv, dtype);
}
