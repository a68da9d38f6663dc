// Which SM does each block of the first waves land on? (docs/notes/tuned.md, step 22)
// The staggered start delays blocks sms … 2·sms-1, on the assumption that the block
// scheduler places blocks 0 … sms-1 one on each SM before it places a second block anywhere.
//   nvcc -arch=sm_90 -o /tmp/block_placement bench/block_placement.cu && /tmp/block_placement
#include <cstdio>
#include <vector>

__global__ void record_sm(unsigned *sm_of_block) {
    extern __shared__ unsigned tile[];
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    tile[threadIdx.x] = sm;
    if (threadIdx.x == 0) sm_of_block[blockIdx.x] = sm;
    // Long enough that no block of the first two waves finishes before the last one starts.
    __nanosleep(200000);
}

int main() {
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    const int blocks = 4 * sms, shared = 64 * 1024, threads = 512;
    cudaFuncSetAttribute(record_sm, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
    unsigned *d = nullptr;
    cudaMalloc(&d, blocks * sizeof(unsigned));
    record_sm<<<blocks, threads, shared>>>(d);
    if (cudaDeviceSynchronize() != cudaSuccess) { printf("launch failed\n"); return 1; }
    std::vector<unsigned> sm(blocks);
    cudaMemcpy(sm.data(), d, blocks * sizeof(unsigned), cudaMemcpyDeviceToHost);
    // For each range of sms blocks: how many distinct SMs it covers.
    for (int wave = 0; wave < 4; ++wave) {
        std::vector<int> seen(1024, 0);
        int distinct = 0;
        for (int b = wave * sms; b < (wave + 1) * sms; ++b) distinct += seen[sm[b]]++ == 0;
        printf("blocks %4d-%4d: %d distinct SMs of %d\n", wave * sms, (wave + 1) * sms - 1, distinct, sms);
    }
    printf("first 16 blocks' SMs:");
    for (int b = 0; b < 16; ++b) printf(" %u", sm[b]);
    printf("\n");
    return 0;
}
