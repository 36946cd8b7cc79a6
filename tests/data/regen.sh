#!/bin/sh
# Rebuilds the committed kernel binaries from t4a_kernels.cu (needs nvcc).
# PTX targets compute_75 (the oldest CUDA 13 accepts; JIT-compiled for newer GPUs); the
# CUBIN and the fatbin target the H200/H100 (sm_90; the fatbin also carries
# compute_90 PTX). Fatbin compression is off so the file stays inspectable.
set -eu
cd "$(dirname "$0")"
nvcc -ptx -arch=compute_75 -o t4a_kernels.ptx t4a_kernels.cu
nvcc -cubin -arch=sm_90 -o t4a_kernels.cubin t4a_kernels.cu
nvcc -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
  -Xfatbin=-compress-all=false -o t4a_kernels.fatbin t4a_kernels.cu 2>/dev/null ||
  nvcc -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
    -o t4a_kernels.fatbin t4a_kernels.cu
