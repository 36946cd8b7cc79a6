#!/bin/sh
# tests/cpu/test_soak_host.sh -- the soak (tests/soak) for about eight
# seconds on the host backend (libt4a_host.so, one device, no kernels yet:
# --no-kernels, the fills are 32-bit memsets): two threads x two runtimes,
# small buffers, the same checks as `make soak-host` (data bit for bit,
# exact statuses and counters, no drift of resident memory or fds).
# T4A_SOAK_SEED replays; `make soak-host SOAK_ARGS="--duration 600"` runs
# longer.
b=${T4A_TEST_BUILDDIR:-.}
T4A_GPU_BACKEND_PATH="$b/plugin-host/.libs"
T4A_GPU_BACKEND=host
export T4A_GPU_BACKEND_PATH T4A_GPU_BACKEND
unset T4A_CUDA_LIBRARY T4A_CACHE_DIR
exec "$b/tests/soak/t4a_soak" --no-kernels --duration 6 --warmup 2 --report-every 3 --threads 2 \
  --runtimes 2 --max-bytes 262144 --staging-kib 256
