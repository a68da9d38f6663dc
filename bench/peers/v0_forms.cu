// Why is our V0 slower than the seed's at 2^29 keys? This program times the two forms of the
// naive one-launch-per-step network on the same data, at several block sizes:
//
//   seed form  (report, Algorithm 1): partner i ^ stride, direction from i & size;
//   ours       (kernels/v0_naive.cu):  all-ascending, the first step of a stage pairs i with
//                                      its mirror i ^ (size - 1).
//
// Every launch is bracketed by CUDA events on one stream (no host synchronisation between
// launches), so the launches can be summed by class of stride. Build and run on the GPU host:
//   nvcc -O3 -arch=sm_90 -o v0_forms bench/peers/v0_forms.cu && ./v0_forms 29 3
// Output: CSV  form,block,exp,total_ms,stride_lt_32_ms,stride_32_1023_ms,stride_ge_1024_ms
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "peer_common.cuh"

typedef unsigned int u32;

__global__ void seed_step(u32 *d, u32 n, u32 size, u32 stride) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 j = i ^ stride;
    if (j > i) {
        bool ascending = (i & size) == 0;
        u32 a = d[i], b = d[j];
        if (ascending == (a > b)) {
            d[i] = b;
            d[j] = a;
        }
    }
}

__global__ void ours_step(u32 *d, u32 n, u32 size, u32 stride) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 j = stride * 2 == size ? i ^ (size - 1) : i ^ stride;
    if (j > i && j < n) {
        u32 a = d[i], b = d[j];
        if (b < a) {
            d[i] = b;
            d[j] = a;
        }
    }
}


int main(int argc, char **argv) {
    int exp = argc > 1 ? atoi(argv[1]) : 29;
    int repeats = argc > 2 ? atoi(argv[2]) : 3;
    u32 n = 1u << exp;
    std::vector<u32> host(n);
    u32 *d;
    CHECK(cudaMalloc(&d, size_t(n) * 4));
    std::vector<std::pair<u32, u32>> steps;
    for (u32 size = 2; size <= n; size <<= 1)
        for (u32 stride = size / 2; stride > 0; stride >>= 1) steps.push_back({size, stride});
    std::vector<cudaEvent_t> ev(steps.size() + 1);
    for (auto &e : ev) CHECK(cudaEventCreate(&e));
    printf("form,block,exp,total_ms,stride_lt_32_ms,stride_32_1023_ms,stride_ge_1024_ms\n");
    for (int form = 0; form < 2; ++form) {
        for (u32 block : {128u, 256u, 512u, 1024u}) {
            std::vector<double> total, small, mid, large;
            for (int r = 0; r < repeats + 1; ++r) { // the first run is a warm-up
                fill_random<<<(n + 255) / 256, 256>>>(d, n, r + 1);
                CHECK(cudaGetLastError());
                u32 grid = (n + block - 1) / block;
                CHECK(cudaEventRecord(ev[0]));
                for (size_t s = 0; s < steps.size(); ++s) {
                    if (form == 0) seed_step<<<grid, block>>>(d, n, steps[s].first, steps[s].second);
                    else ours_step<<<grid, block>>>(d, n, steps[s].first, steps[s].second);
                    CHECK(cudaGetLastError());
                    CHECK(cudaEventRecord(ev[s + 1]));
                }
                CHECK(cudaEventSynchronize(ev[steps.size()]));
                double t = 0, ts = 0, tm = 0, tl = 0;
                for (size_t s = 0; s < steps.size(); ++s) {
                    float ms;
                    CHECK(cudaEventElapsedTime(&ms, ev[s], ev[s + 1]));
                    t += ms;
                    u32 stride = steps[s].second;
                    (stride < 32 ? ts : stride < 1024 ? tm : tl) += ms;
                }
                if (r == repeats) { // check the last run
                    CHECK(cudaMemcpy(host.data(), d, size_t(n) * 4, cudaMemcpyDeviceToHost));
                    if (!std::is_sorted(host.begin(), host.end())) {
                        fprintf(stderr, "form %d block %u: not sorted\n", form, block);
                        return 1;
                    }
                }
                if (r == 0) continue;
                total.push_back(t), small.push_back(ts), mid.push_back(tm), large.push_back(tl);
            }
            auto median = [](std::vector<double> v) {
                std::sort(v.begin(), v.end());
                return v[v.size() / 2];
            };
            printf("%s,%u,%d,%.2f,%.2f,%.2f,%.2f\n", form == 0 ? "seed" : "ours", block, exp, median(total),
                   median(small), median(mid), median(large));
            fflush(stdout);
        }
    }
    return 0;
}
