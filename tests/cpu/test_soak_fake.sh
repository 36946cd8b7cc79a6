#!/bin/sh
# tests/cpu/test_soak_fake.sh -- the soak (tests/soak) for about ten seconds
# on the fake driver (two devices with peer access) and the fake NVRTC: two
# threads x two runtimes on each device, small buffers, the same checks as
# `make soak` on a GPU host (data bit for bit, exact statuses and counters,
# no drift; on the fake every kind of driver object must be back to its
# count after the warm-up, and device memory exactly). T4A_SOAK_SEED replays.
b=${T4A_TEST_BUILDDIR:-.}
T4A_CUDA_LIBRARY="$b/tests/fakecuda/.libs/libfakecuda.so"
T4A_NVRTC_LIBRARY="$b/tests/fakecuda/.libs/libfakenvrtc.so"
FAKE_CUDA_DEVICES=2
export T4A_CUDA_LIBRARY T4A_NVRTC_LIBRARY FAKE_CUDA_DEVICES
unset FAKE_CUDA_NO_PEER FAKE_CUDA_MEM_MIB FAKE_CUDA_FAIL T4A_CACHE_DIR
exec "$b/tests/soak/t4a_soak" --duration 8 --warmup 2 --report-every 4 --threads 2 --runtimes 2 \
  --max-bytes 262144 --staging-kib 256 --device-tolerance-mib 0
