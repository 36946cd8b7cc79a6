/* tests/fakecuda/fake_kernels.c -- the kernels the fake driver runs: host
 * functions named like the test kernels (rt_test_ptx() in
 * tests/runtime/rtutil.c, the CUDA C in tests/runtime/test_code.c and
 * tests/data), computing what the GPU computes for the same launch, over
 * the whole grid (x, y and z). Every pointer a kernel follows is checked
 * first (fake_touch): memory of another device without its pool's grant,
 * freed memory or memory that is no allocation faults the device, as a
 * GPU would. */
#include "config.h"

#include <string.h>
#include <time.h>

#include "tests/fakecuda/fake_internal.h"

bool fake_touch(kctx *k, const void *p, size_t n) {
  if (n == 0)
    return true; /* nothing is read or written: a GPU does not fault (the model fuzzer
                    filled 0 words one past a buffer's end) */
  LOCK();
  alloc *a = fake_alloc_find(p, n, MEM_DEVICE);
  bool ok = a && a->state != A_CACHED && fake_alloc_accessible(a, k->g.device);
  if (!a && (a = fake_alloc_find(p, n, MEM_HOST)) != NULL)
    ok = true; /* pinned host memory is mapped for every device */
  if (ok && k->npins < OP_MAX_REFS) {
    a->busy++;
    k->pins[k->npins++] = a;
  } else if (ok) {
    ok = false; /* more buffers than the fake tracks: a fake limit, reported */
    fake_violation("a kernel touched more than %d allocations", OP_MAX_REFS);
  }
  if (!ok)
    fake_fault_device(k->g.device, T4A__CUDA_ERROR_ILLEGAL_ADDRESS);
  UNLOCK();
  return ok;
}

static uint64_t blocks(const kctx *k) {
  return (uint64_t)k->g.grid[0] * k->g.grid[1] * k->g.grid[2];
}

/* t4a_spin(const volatile uint32_t *flag): returns once *flag != 0. */
static void k_spin(const unsigned char *a, kctx *k) {
  const uint32_t *flag;
  memcpy(&flag, a, sizeof flag);
  if (!fake_touch(k, flag, sizeof *flag))
    return;
  while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE)) {
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
}

static void k_empty(const unsigned char *a, kctx *k) {
  (void)a;
  (void)k;
}

/* t4a_fill_u32(uint32_t *p, uint32_t value, uint64_t n): a grid-stride loop
 * over x (other axes repeat the same stores). */
static void k_fill_u32(const unsigned char *a, kctx *k) {
  uint32_t *p, v;
  uint64_t n;
  memcpy(&p, a, 8);
  memcpy(&v, a + 8, 4);
  memcpy(&n, a + 16, 8);
  if (!fake_touch(k, p, n * 4))
    return;
  for (uint64_t i = 0; i < n; i++)
    p[i] = v;
}

/* t4a_axpy_f32(uint64_t n, float alpha, const float *x, float *y) */
static void k_axpy(const unsigned char *a, kctx *k) {
  uint64_t n;
  float alpha;
  const float *x;
  float *y;
  memcpy(&n, a, 8);
  memcpy(&alpha, a + 8, 4);
  memcpy(&x, a + 16, 8);
  memcpy(&y, a + 24, 8);
  if (!fake_touch(k, x, n * 4) || !fake_touch(k, y, n * 4))
    return;
  for (uint64_t i = 0; i < n; i++)
    y[i] = alpha * x[i] + y[i];
}

/* t4a_sum_f32(uint64_t n, const float *x, float *out): *out += sum(x), once
 * per (y, z) block row, as the kernel's blocks of each row add it. */
static void k_sum(const unsigned char *a, kctx *k) {
  uint64_t n;
  const float *x;
  float *out;
  memcpy(&n, a, 8);
  memcpy(&x, a + 8, 8);
  memcpy(&out, a + 16, 8);
  if (!fake_touch(k, x, n * 4) || !fake_touch(k, out, 4))
    return;
  double s = 0;
  for (uint64_t i = 0; i < n; i++)
    s += (double)x[i];
  for (uint64_t r = 0; r < (uint64_t)k->g.grid[1] * k->g.grid[2]; r++)
    *out += (float)s;
}

/* t4a_reverse_u32(const uint32_t *x, uint32_t *y, uint32_t per): each block
 * reverses its block * per elements (through dynamic shared memory). */
static void k_reverse(const unsigned char *a, kctx *k) {
  const uint32_t *x;
  uint32_t *y, per;
  memcpy(&x, a, 8);
  memcpy(&y, a + 8, 8);
  memcpy(&per, a + 16, 4);
  uint64_t span = (uint64_t)k->g.block[0] * per, grid = k->g.grid[0];
  if (!fake_touch(k, x, grid * span * 4) || !fake_touch(k, y, grid * span * 4))
    return;
  for (uint64_t b = 0; b < grid; b++)
    for (uint64_t i = 0; i < span; i++)
      y[b * span + i] = x[b * span + span - 1 - i];
}

/* t4a_index3d(uint32_t *out): every thread of the grid, numbered by its
 * block ((z * ny + y) * nx + x) and its thread in the block (likewise),
 * stores three words: ctaid.x | ctaid.y << 16, ctaid.z | tid.x << 16,
 * tid.y | tid.z << 16. */
static void k_index3d(const unsigned char *a, kctx *k) {
  uint32_t *out;
  memcpy(&out, a, 8);
  const unsigned *g = k->g.grid, *b = k->g.block;
  uint64_t per = (uint64_t)b[0] * b[1] * b[2];
  if (!fake_touch(k, out, blocks(k) * per * 12))
    return;
  for (uint32_t bz = 0; bz < g[2]; bz++)
    for (uint32_t by = 0; by < g[1]; by++)
      for (uint32_t bx = 0; bx < g[0]; bx++)
        for (uint32_t tz = 0; tz < b[2]; tz++)
          for (uint32_t ty = 0; ty < b[1]; ty++)
            for (uint32_t tx = 0; tx < b[0]; tx++) {
              uint64_t block = ((uint64_t)bz * g[1] + by) * g[0] + bx;
              uint64_t t = block * per + ((uint64_t)tz * b[1] + ty) * b[0] + tx;
              out[3 * t] = bx | by << 16;
              out[3 * t + 1] = bz | tx << 16;
              out[3 * t + 2] = ty | tz << 16;
            }
}

/* t4a_bounded(uint32_t *out), at most 128 threads per block (.maxntid):
 * through 512 bytes of static shared memory, each block of x writes its
 * global indices reversed: out[base + t] = base + ntid - 1 - t. */
static void k_bounded(const unsigned char *a, kctx *k) {
  uint32_t *out;
  memcpy(&out, a, 8);
  uint64_t ntid = k->g.block[0], grid = k->g.grid[0];
  if (!fake_touch(k, out, grid * ntid * 4))
    return;
  for (uint64_t b = 0; b < grid; b++)
    for (uint64_t t = 0; t < ntid; t++)
      out[b * ntid + t] = (uint32_t)(b * ntid + ntid - 1 - t);
}

/* t4a_pair(struct { double x; unsigned n; } p, uint32_t *out): a struct
 * passed by value (16 bytes, at parameter offset 0). Thread 0 stores
 * out[0] = (unsigned)(p.x * p.n), out[1] = p.n, and p.x's bits in out[2]
 * (low word) and out[3] (high word). */
static void k_pair(const unsigned char *a, kctx *k) {
  double x;
  uint32_t n, *out;
  uint64_t bits;
  memcpy(&x, a, 8);
  memcpy(&n, a + 8, 4);
  memcpy(&bits, a, 8);
  memcpy(&out, a + 16, 8);
  if (!fake_touch(k, out, 16))
    return;
  out[0] = (uint32_t)(x * n);
  out[1] = n;
  out[2] = (uint32_t)bits;
  out[3] = (uint32_t)(bits >> 32);
}

/* t4a_fault(): an illegal address: a sticky fault of the device. */
static void k_fault(const unsigned char *a, kctx *k) {
  (void)a;
  LOCK();
  fake_fault_device(k->g.device, T4A__CUDA_ERROR_ILLEGAL_ADDRESS);
  UNLOCK();
}

/* name, function, arguments (offsets, sizes), pointer arguments,
 * max threads per block (0: the device's), static shared bytes, waits for
 * the host */
const kdesc fake_kernels[] = {
    {"t4a_spin", k_spin, 1, {0}, {8}, 0x1, 0, 0, true},
    {"t4a_empty", k_empty, 0, {0}, {0}, 0, 0, 0, false},
    {"t4a_fill_u32", k_fill_u32, 3, {0, 8, 16}, {8, 4, 8}, 0x1, 0, 0, false},
    {"t4a_axpy_f32", k_axpy, 4, {0, 8, 16, 24}, {8, 4, 8, 8}, 0xc, 0, 0, false},
    {"t4a_fault", k_fault, 0, {0}, {0}, 0, 0, 0, false},
    {"t4a_sum_f32", k_sum, 3, {0, 8, 16}, {8, 8, 8}, 0x6, 0, 1024, false},
    {"t4a_reverse_u32", k_reverse, 3, {0, 8, 16}, {8, 8, 4}, 0x3, 0, 0, false},
    {"t4a_index3d", k_index3d, 1, {0}, {8}, 0x1, 0, 0, false},
    {"t4a_bounded", k_bounded, 1, {0}, {8}, 0x1, 128, 512, false},
    {"t4a_pair", k_pair, 2, {0, 16}, {16, 8}, 0x2, 0, 0, false},
};
const unsigned fake_kernel_count = sizeof fake_kernels / sizeof fake_kernels[0];
