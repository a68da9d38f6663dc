// How fast can a pageable host array cross the link? The model behind src/cuda/staging.rs
// (issue 54): pinned staging buffers taking turns, filled or drained by host threads while the
// copy engine moves the other ones, against the plain driver copy, a registered (pinned in
// place) array, and the host's own memcpy rate. Prints one CSV line a variant.
//
//   nvcc -O2 -std=c++17 -Xcompiler -fopenmp -o /tmp/staging_model bench/staging_model.cu
//   /tmp/staging_model [MiB of keys, default 2048]
#include <cuda_runtime.h>
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

static double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// memcpy of `bytes` on `threads` threads, in pieces of 1 MiB.
static void par_copy(char *dst, const char *src, size_t bytes, int threads) {
  const size_t piece = 1 << 20;
  long pieces = (long)((bytes + piece - 1) / piece);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (long i = 0; i < pieces; i++) {
    size_t at = (size_t)i * piece, len = bytes - at < piece ? bytes - at : piece;
    memcpy(dst + at, src + at, len);
  }
}

struct Staged { int buffers; size_t chunk; int threads; bool wc; };

// Upload `bytes` from pageable `host` to `dev` through `s.buffers` pinned chunks.
static double upload(const Staged &s, const char *host, char *dev, size_t bytes, cudaStream_t st) {
  std::vector<char *> buf(s.buffers);
  std::vector<cudaEvent_t> done(s.buffers);
  for (int b = 0; b < s.buffers; b++) {
    CHECK(cudaHostAlloc(&buf[b], s.chunk, s.wc ? cudaHostAllocWriteCombined : 0));
    CHECK(cudaEventCreateWithFlags(&done[b], cudaEventDisableTiming));
    memset(buf[b], 0, s.chunk);
  }
  double t0 = now_ms();
  size_t chunks = (bytes + s.chunk - 1) / s.chunk;
  for (size_t i = 0; i < chunks; i++) {
    int b = i % s.buffers;
    size_t at = i * s.chunk, len = bytes - at < s.chunk ? bytes - at : s.chunk;
    CHECK(cudaEventSynchronize(done[b]));
    par_copy(buf[b], host + at, len, s.threads);
    CHECK(cudaMemcpyAsync(dev + at, buf[b], len, cudaMemcpyHostToDevice, st));
    CHECK(cudaEventRecord(done[b], st));
  }
  CHECK(cudaStreamSynchronize(st));
  double t = now_ms() - t0;
  for (int b = 0; b < s.buffers; b++) { cudaFreeHost(buf[b]); cudaEventDestroy(done[b]); }
  return t;
}

// Download `bytes` from `dev` into pageable `host` through `s.buffers` pinned chunks, keeping
// the copy engine `buffers - 1` chunks ahead of the threads that drain them.
static double download(const Staged &s, char *host, const char *dev, size_t bytes, cudaStream_t st) {
  std::vector<char *> buf(s.buffers);
  std::vector<cudaEvent_t> done(s.buffers);
  for (int b = 0; b < s.buffers; b++) {
    CHECK(cudaHostAlloc(&buf[b], s.chunk, 0));
    CHECK(cudaEventCreateWithFlags(&done[b], cudaEventDisableTiming));
    memset(buf[b], 0, s.chunk);
  }
  double t0 = now_ms();
  size_t chunks = (bytes + s.chunk - 1) / s.chunk;
  auto queue = [&](size_t i) {
    int b = i % s.buffers;
    size_t at = i * s.chunk, len = bytes - at < s.chunk ? bytes - at : s.chunk;
    CHECK(cudaMemcpyAsync(buf[b], dev + at, len, cudaMemcpyDeviceToHost, st));
    CHECK(cudaEventRecord(done[b], st));
  };
  size_t queued = 0;
  while (queued < chunks && queued < (size_t)s.buffers - 1) queue(queued++);
  for (size_t i = 0; i < chunks; i++) {
    if (queued < chunks) queue(queued++);
    int b = i % s.buffers;
    size_t at = i * s.chunk, len = bytes - at < s.chunk ? bytes - at : s.chunk;
    CHECK(cudaEventSynchronize(done[b]));
    par_copy(host + at, buf[b], len, s.threads);
  }
  double t = now_ms() - t0;
  for (int b = 0; b < s.buffers; b++) { cudaFreeHost(buf[b]); cudaEventDestroy(done[b]); }
  return t;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? atol(argv[1]) : 2048, bytes = mib << 20;
  char *host = (char *)malloc(bytes), *back = (char *)malloc(bytes), *dev;
  omp_set_max_active_levels(2);
#pragma omp parallel for
  for (long i = 0; i < (long)(bytes / 8); i++) ((unsigned long *)host)[i] = i * 2654435761ul, ((unsigned long *)back)[i] = 0;
  CHECK(cudaMalloc(&dev, bytes));
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const int R = 5;
  auto gbps = [&](double ms) { return bytes / ms / 1e6; };
  printf("case,buffers,chunk_mib,threads,wc,ms,gb_per_s\n");
  for (int threads : {1, 4, 8, 16}) {
    std::vector<double> t;
    for (int r = 0; r < R; r++) { double t0 = now_ms(); par_copy(back, host, bytes, threads); t.push_back(now_ms() - t0); }
    printf("host-memcpy,0,0,%d,0,%.2f,%.1f\n", threads, median(t), gbps(median(t)));
  }
  {
    std::vector<double> up, down;
    for (int r = 0; r < R; r++) {
      double t0 = now_ms(); CHECK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice)); up.push_back(now_ms() - t0);
      t0 = now_ms(); CHECK(cudaMemcpy(back, dev, bytes, cudaMemcpyDeviceToHost)); down.push_back(now_ms() - t0);
    }
    printf("driver-pageable-htod,0,0,0,0,%.2f,%.1f\n", median(up), gbps(median(up)));
    printf("driver-pageable-dtoh,0,0,0,0,%.2f,%.1f\n", median(down), gbps(median(down)));
  }
  for (Staged s : {Staged{2, 32 << 20, 16, false}, Staged{2, 32 << 20, 16, true}, Staged{3, 32 << 20, 16, false},
                   Staged{4, 16 << 20, 16, false}, Staged{4, 64 << 20, 16, false}, Staged{2, 8 << 20, 16, false},
                   Staged{3, 32 << 20, 8, false}, Staged{3, 32 << 20, 12, false}, Staged{4, 32 << 20, 16, true},
                   Staged{2, 128 << 20, 16, false}}) {
    std::vector<double> up, down;
    for (int r = 0; r < R; r++) {
      up.push_back(upload(s, host, dev, bytes, st));
      down.push_back(download(s, back, dev, bytes, st));
    }
    if (memcmp(host, back, bytes) != 0) { fprintf(stderr, "round trip differs\n"); return 1; }
    printf("staged-htod,%d,%zu,%d,%d,%.2f,%.1f\n", s.buffers, s.chunk >> 20, s.threads, s.wc, median(up), gbps(median(up)));
    printf("staged-dtoh,%d,%zu,%d,0,%.2f,%.1f\n", s.buffers, s.chunk >> 20, s.threads, median(down), gbps(median(down)));
  }
  {
    double t0 = now_ms();
    CHECK(cudaHostRegister(host, bytes, 0));
    double reg = now_ms() - t0;
    std::vector<double> up;
    for (int r = 0; r < R; r++) { t0 = now_ms(); CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, st)); CHECK(cudaStreamSynchronize(st)); up.push_back(now_ms() - t0); }
    t0 = now_ms();
    CHECK(cudaHostUnregister(host));
    double unreg = now_ms() - t0;
    printf("register,0,0,0,0,%.2f,%.1f\n", reg, gbps(reg));
    printf("registered-htod,0,0,0,0,%.2f,%.1f\n", median(up), gbps(median(up)));
    printf("unregister,0,0,0,0,%.2f,%.1f\n", unreg, gbps(unreg));
  }
  // Both directions at once: an upload of one half and a download of the other, two streams,
  // two host threads each driving its own staging (8 copy threads each).
  {
    cudaStream_t st2;
    CHECK(cudaStreamCreateWithFlags(&st2, cudaStreamNonBlocking));
    size_t half = bytes / 2;
    std::vector<double> t;
    for (int r = 0; r < R; r++) {
      double t0 = now_ms();
#pragma omp parallel sections num_threads(2)
      {
#pragma omp section
        upload(Staged{3, 32 << 20, 8, false}, host, dev, half, st);
#pragma omp section
        download(Staged{3, 32 << 20, 8, false}, back + half, dev + half, half, st2);
      }
      t.push_back(now_ms() - t0);
    }
    printf("duplex-half-each,3,32,8+8,0,%.2f,%.1f\n", median(t), gbps(median(t)));
  }
  return 0;
}
