// A model of one tuned pass (docs/notes/tuned.md, step 22): each 512-thread block stages a
// 64 KiB tile in (16-byte loads), runs ROUNDS rounds of register min/max on 32 keys a thread
// from shared memory, and stages it back out in place. Two blocks share an SM, as in the
// tuned kernel. Timed at 2^24 and 2^29 u32 keys to see whether a pass of few waves (1024
// blocks at 2^24) loses bandwidth against one of many (32768 at 2^29) with the same work per
// key, and how that depends on the compute between load and store. A second table tries a
// staggered start (the second block on each SM waits before it loads), with a memset of the
// per-SM counters before each launch, so compare it only with its own delay-0 rows.
//   nvcc -O3 -arch=sm_90 -o /tmp/tile_pass_model bench/tile_pass_model.cu && /tmp/tile_pass_model
#include <algorithm>
#include <cstdio>
#include <vector>

constexpr int THREADS = 512, TILE_KEYS = 16384, KEYS_PER_THREAD = TILE_KEYS / THREADS; // 32

template <bool STAGGER>
__global__ void __launch_bounds__(THREADS, 2) tile_pass(unsigned *keys, int rounds, unsigned *started_on_sm = nullptr,
                                                         unsigned delay_ns = 0) {
    // The staggered start: the second block to start on an SM waits delay_ns first.
    if (STAGGER && delay_ns) {
        unsigned sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        __shared__ unsigned order_on_sm;
        if (threadIdx.x == 0) order_on_sm = atomicAdd(&started_on_sm[sm], 1);
        __syncthreads();
        if (order_on_sm == 1) {
            unsigned long long now, until;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
            for (until = now + delay_ns; now < until;) {
                __nanosleep(128);
                asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
            }
        }
    }
    extern __shared__ uint4 tile4[];
    unsigned *tile = reinterpret_cast<unsigned *>(tile4);
    uint4 *block = reinterpret_cast<uint4 *>(keys) + size_t(blockIdx.x) * (TILE_KEYS / 4);
    uint4 staged[KEYS_PER_THREAD / 4];
#pragma unroll
    for (int v = 0; v < KEYS_PER_THREAD / 4; ++v) staged[v] = block[v * THREADS + threadIdx.x];
#pragma unroll
    for (int v = 0; v < KEYS_PER_THREAD / 4; ++v) tile4[v * THREADS + threadIdx.x] = staged[v];
    __syncthreads();
    unsigned k[KEYS_PER_THREAD];
#pragma unroll
    for (int r = 0; r < KEYS_PER_THREAD; ++r) k[r] = tile[(threadIdx.x * KEYS_PER_THREAD + r) ^ (threadIdx.x & 31)];
    for (int round = 0; round < rounds; ++round) {
#pragma unroll
        for (int r = 0; r < KEYS_PER_THREAD; r += 2) {
            unsigned a = k[r], b = k[r + 1];
            k[r] = min(a, b);
            k[r + 1] = max(a, b) ^ round;
        }
    }
#pragma unroll
    for (int r = 0; r < KEYS_PER_THREAD; ++r) tile[(threadIdx.x * KEYS_PER_THREAD + r) ^ (threadIdx.x & 31)] = k[r];
    __syncthreads();
#pragma unroll
    for (int v = 0; v < KEYS_PER_THREAD / 4; ++v) block[v * THREADS + threadIdx.x] = tile4[v * THREADS + threadIdx.x];
}

int main() {
    const int shared = TILE_KEYS * 4;
    cudaFuncSetAttribute(tile_pass<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
    cudaFuncSetAttribute(tile_pass<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
    int per_sm = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, tile_pass<false>, THREADS, shared);
    printf("blocks per SM: %d\n", per_sm);
    unsigned *keys = nullptr, *copy = nullptr;
    const size_t most = size_t(1) << 29;
    cudaMalloc(&keys, most * 4);
    cudaMalloc(&copy, most * 4);
    cudaMemset(keys, 1, most * 4);
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    auto median_ms = [&](auto run) {
        std::vector<float> ms;
        run();
        for (int i = 0; i < 21; ++i) {
            cudaEventRecord(start);
            run();
            cudaEventRecord(stop);
            cudaEventSynchronize(stop);
            float t;
            cudaEventElapsedTime(&t, start, stop);
            ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        return ms[ms.size() / 2];
    };
    printf("%6s %8s %12s %10s\n", "n", "rounds", "ms", "GB/s");
    for (int exp : {22, 23, 24, 25, 26, 27, 29}) {
        const size_t n = size_t(1) << exp;
        // Ten launches back to back between the events, as a sort's passes run.
        float t = median_ms([&] { for (int i = 0; i < 10; ++i) cudaMemcpyAsync(copy, keys, n * 4, cudaMemcpyDeviceToDevice); }) / 10;
        printf("2^%-4d %8s %12.4f %10.0f\n", exp, "memcpy", t, 2.0 * n * 4 / t / 1e6);
        for (int rounds : {0, 4, 8, 16, 32}) {
            t = median_ms([&] { for (int i = 0; i < 10; ++i) tile_pass<false><<<n / TILE_KEYS, THREADS, shared>>>(keys, rounds); }) / 10;
            printf("2^%-4d %8d %12.4f %10.0f\n", exp, rounds, t, 2.0 * n * 4 / t / 1e6);
        }
    }
    unsigned *started_on_sm = nullptr;
    cudaMalloc(&started_on_sm, 1024 * sizeof(unsigned));
    printf("staggered start (the second block on each SM waits):\n%6s %8s %8s %12s %10s\n", "n", "rounds", "delay", "ms", "GB/s");
    for (int exp : {24, 25}) {
        const size_t n = size_t(1) << exp;
        for (int rounds : {8, 16, 32})
            for (unsigned delay : {0u, 2000u, 4000u, 8000u}) {
                float t = median_ms([&] {
                    for (int i = 0; i < 10; ++i) {
                        cudaMemsetAsync(started_on_sm, 0, 1024 * sizeof(unsigned));
                        tile_pass<true><<<n / TILE_KEYS, THREADS, shared>>>(keys, rounds, started_on_sm, delay);
                    }
                }) / 10;
                printf("2^%-4d %8d %8u %12.4f %10.0f\n", exp, rounds, delay, t, 2.0 * n * 4 / t / 1e6);
            }
    }
    if (cudaDeviceSynchronize() != cudaSuccess) { printf("failed\n"); return 1; }
    return 0;
}
