// How much a launch costs on this host, apart from the kernel's own work: the yardstick for
// the medium sizes of the tuned sort, where nine launches of a few microseconds each follow
// one another (docs/notes/tuned.md, step 16).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o launch_cost bench/launch_cost.cu -lcuda && ./launch_cost
//
// An empty kernel with the tuned pass's arguments (a pointer, a 32-byte layout, seven u32) is
// launched LAUNCHES times in a row on the legacy default stream, as the library does, then
// the same LAUNCHES launches as one CUDA graph (built once, launched on the same stream), and
// the graph again after its kernel nodes were re-pointed at another buffer (the cost of reusing
// one graph for every buffer of a size). Host time to enqueue and CUDA-event time, medians.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>
#include <vector>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e = (call);                                                                    \
        if (e != cudaSuccess) {                                                                    \
            std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e)); \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

struct Layout {
    const unsigned *start, *len;
    unsigned n, row_bits, row_len, rows, contiguous;
};

__global__ void empty_pass(unsigned *keys, Layout layout, unsigned a, unsigned b, unsigned c, unsigned d,
                           unsigned e, unsigned f, unsigned g) {
    if (threadIdx.x == 0 && blockIdx.x == 0 && a == 12345u) keys[0] = layout.n + b + c + d + e + f + g;
}

// Host microseconds to run `enqueue` and CUDA-event microseconds of the work it queued on the
// legacy stream, appended to `host` and `device`.
template <typename Enqueue>
static cudaError_t time_once(Enqueue enqueue, cudaEvent_t start, cudaEvent_t end, std::vector<double> &host,
                             std::vector<double> &device) {
    using clock = std::chrono::steady_clock;
    cudaError_t e = cudaEventRecord(start, cudaStreamLegacy);
    auto t0 = clock::now();
    if (e == cudaSuccess) e = enqueue();
    auto t1 = clock::now();
    if (e == cudaSuccess) e = cudaEventRecord(end, cudaStreamLegacy);
    if (e == cudaSuccess) e = cudaEventSynchronize(end);
    float ms = 0;
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, start, end);
    host.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    device.push_back(ms * 1e3);
    return e;
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main() {
    const int LAUNCHES = 9, REPEATS = 200, BLOCKS = 128, THREADS = 128;
    unsigned *keys, *other;
    CHECK(cudaMalloc(&keys, 1 << 20));
    CHECK(cudaMalloc(&other, 1 << 20));
    Layout layout{nullptr, nullptr, 1u << 20, 20, 1u << 20, 1, 1};
    cudaStream_t legacy = cudaStreamLegacy;
    cudaEvent_t start, end;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&end));
    using clock = std::chrono::steady_clock;

    auto launch_all = [&](cudaStream_t s, unsigned *k) {
        for (int i = 0; i < LAUNCHES; ++i) empty_pass<<<BLOCKS, THREADS, 0, s>>>(k, layout, i, 1, 2, 3, 4, 5, 6);
    };
    // Kernel launches, one by one.
    std::vector<double> host, device;
    for (int r = 0; r < REPEATS; ++r) {
        auto launches = [&] {
            launch_all(legacy, keys);
            return cudaGetLastError();
        };
        CHECK(time_once(launches, start, end, host, device));
    }
    std::printf("launches,%d,enqueue_us,%.2f,events_us,%.2f\n", LAUNCHES, median(host), median(device));

    // The same launches as a graph, captured once on a stream of its own.
    cudaStream_t capture;
    CHECK(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(capture, cudaStreamCaptureModeThreadLocal));
    launch_all(capture, keys);
    CHECK(cudaStreamEndCapture(capture, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    size_t count = 0;
    CHECK(cudaGraphGetNodes(graph, nullptr, &count));
    std::vector<cudaGraphNode_t> nodes(count);
    CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
    for (int mode = 0; mode < 2; ++mode) {
        host.clear(), device.clear();
        std::vector<double> update;
        for (int r = 0; r < REPEATS; ++r) {
            auto u0 = clock::now();
            if (mode == 1) { // re-point every node at the other buffer, as a new buffer would
                unsigned *k = (r & 1) ? other : keys;
                for (auto node : nodes) {
                    cudaKernelNodeParams p;
                    CHECK(cudaGraphKernelNodeGetParams(node, &p));
                    void *args[9];
                    for (int a = 0; a < 9; ++a) args[a] = p.kernelParams[a];
                    args[0] = &k;
                    p.kernelParams = args;
                    CHECK(cudaGraphExecKernelNodeSetParams(exec, node, &p));
                }
            }
            auto u1 = clock::now();
            update.push_back(std::chrono::duration<double, std::micro>(u1 - u0).count());
            CHECK(time_once([&] { return cudaGraphLaunch(exec, legacy); }, start, end, host, device));
        }
        std::printf("graph%s,%d,enqueue_us,%.2f,events_us,%.2f,update_us,%.2f\n", mode ? "_repointed" : "",
                    LAUNCHES, median(host), median(device), median(update));
    }
    return 0;
}
