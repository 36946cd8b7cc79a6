// tests/data/t4a_kernels.cu -- kernels built ahead of time with nvcc (see
// regen.sh) into PTX, CUBIN and fatbin, so that the tests load consumer bytes
// of each kind. The fake driver implements the same names on the host.
extern "C" __global__ void t4a_axpy_f32(unsigned long long n, float a, const float *x, float *y) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}

extern "C" __global__ void t4a_empty() {}
