// kernels.cu — the device side of the GPU check (agent/gpu-check/run.sh).
// C entry points so the host program stays C11.
#include <cuda_runtime.h>

__global__ void gc_scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a + 1.0f;
}

__global__ void gc_reduce(const float *x, float *out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, s[0]);
}

__global__ void gc_empty(void) {}

extern "C" int gc_launch_scale(float *x, float a, int n) {
    gc_scale<<<(n + 255) / 256, 256>>>(x, a, n);
    return (int)cudaGetLastError();
}

extern "C" int gc_launch_reduce(const float *x, float *out, int n) {
    gc_reduce<<<(n + 255) / 256, 256>>>(x, out, n);
    return (int)cudaGetLastError();
}

extern "C" int gc_launch_empty(void) {
    gc_empty<<<1, 32>>>();
    return (int)cudaGetLastError();
}
