/* tests/hostk/hk_harness.h -- builds CUDA C kernels the way the host
 * backend does (ktranslate, then the host C++ compiler) and runs their
 * blocks directly through plugin-host/kernel_abi.h, without the plugin:
 * the prelude's own tests (tests/hostk/test_prelude.c). */
#ifndef T4A_TESTS_HK_HARNESS_H
#define T4A_TESTS_HK_HARNESS_H

#include <stdint.h>

#include "plugin-host/kernel_abi.h"

typedef struct hk_mod {
  void *dl;
  const t4a_hk_module *m;
  char dir[64];
} hk_mod;

/* The compiler: $T4A_HOST_CXX, else c++ on PATH. */
const char *hk_cxx(void);

/* Translates and compiles src (name: for diagnostics) and loads it.
 * Returns 0; or -1 with *log (malloc'ed) holding the translator's
 * refusals or the compiler's output. extra: more compiler flags or NULL. */
int hk_build(const char *src, const char *name, const char *extra, hk_mod *out, char **log);
/* Compiles and loads a unit as the translator writes it (a test may edit
 * one first). */
int hk_build_unit(const char *unit_text, const char *extra, hk_mod *out, char **log);
void hk_unload(hk_mod *m);
/* The kernel called name, or NULL. */
const t4a_hk_kernel *hk_kernel(const hk_mod *m, const char *name);

/* Runs a grid of k: its blocks spread over `threads` OS threads (each
 * with its own worker: 64 KiB fiber stacks, dynamic shared memory), in
 * chunks of about a sixteenth of each thread's share, taken in order (one
 * block at a time with one thread). Returns 0, or 1 with *fault the
 * first fault (the others stop at their next block). */
int hk_launch(const t4a_hk_kernel *k, t4a_hk_dim3 grid, t4a_hk_dim3 block, uint32_t dynamic_shared,
              void **args, unsigned threads, t4a_hk_fault *fault);

/* A worker as the plugin lends one: count stacks with guard pages, dynamic
 * shared memory. */
typedef struct hk_worker {
  t4a_hk_worker w;
  void *map;
  uint64_t map_bytes;
} hk_worker;
int hk_worker_init(hk_worker *w, uint32_t stacks, uint64_t stack_bytes, uint64_t shared_bytes);
void hk_worker_free(hk_worker *w);

static inline t4a_hk_dim3 hk_dim(uint32_t x, uint32_t y, uint32_t z) {
  t4a_hk_dim3 d = {x, y, z};
  return d;
}

#endif
