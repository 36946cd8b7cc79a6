/* tests/hostk/hk_harness.c -- see hk_harness.h. */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "plugin-host/ktranslate.h"
#include "tests/hostk/hk_harness.h"

const char *hk_cxx(void) {
  const char *c = getenv("T4A_HOST_CXX");
  return c && *c ? c : "c++";
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return strdup("");
  char *p = malloc(1 << 20);
  size_t n = p ? fread(p, 1, (1 << 20) - 1, f) : 0;
  fclose(f);
  if (p)
    p[n] = 0;
  return p;
}

static int write_file(const char *path, const char *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  size_t w = fwrite(data, 1, n, f);
  return fclose(f) || w != n ? -1 : 0;
}

int hk_build(const char *src, const char *name, const char *extra, hk_mod *out, char **log) {
  memset(out, 0, sizeof *out);
  *log = NULL;
  t4a__ktu u;
  int rc = t4a__ktranslate(src, strlen(src), name, &u);
  if (rc) {
    *log = u.log ? strdup(u.log) : strdup("translate failed");
    t4a__ktu_free(&u);
    return -1;
  }
  rc = hk_build_unit(u.text, extra, out, log);
  t4a__ktu_free(&u);
  return rc;
}

int hk_build_unit(const char *unit_text, const char *extra, hk_mod *out, char **log) {
  memset(out, 0, sizeof *out);
  *log = NULL;
  snprintf(out->dir, sizeof out->dir, "/tmp/t4a-hk-XXXXXX");
  if (!mkdtemp(out->dir)) {
    out->dir[0] = 0;
    *log = strdup("mkdtemp failed");
    return -1;
  }
  char unit[128], so[128], lg[128];
  snprintf(unit, sizeof unit, "%s/unit.cc", out->dir);
  snprintf(so, sizeof so, "%s/mod.so", out->dir);
  snprintf(lg, sizeof lg, "%s/log", out->dir);
  if (write_file(unit, unit_text, strlen(unit_text))) {
    *log = strdup("cannot write the unit");
    return -1;
  }
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "%s -std=c++17 -O2 -fPIC -shared -fno-exceptions -fno-rtti -fno-math-errno -Wall "
           "-Wextra %s -o %s %s -lm > %s 2>&1",
           hk_cxx(), extra ? extra : "", so, unit, lg);
  if (system(cmd) != 0) {
    *log = slurp(lg);
    return -1;
  }
  char *warnings = slurp(lg);
  if (warnings && *warnings && extra && strstr(extra, "-Werror")) {
    *log = warnings;
    return -1;
  }
  free(warnings);
  out->dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!out->dl) {
    *log = strdup(dlerror());
    return -1;
  }
  out->m = dlsym(out->dl, T4A_HK_MODULE_SYMBOL);
  if (!out->m) {
    *log = strdup("no module symbol");
    return -1;
  }
  return 0;
}

void hk_unload(hk_mod *m) {
  if (m->dl)
    dlclose(m->dl);
  if (m->dir[0]) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", m->dir);
    if (system(cmd) != 0)
      fprintf(stderr, "could not remove %s\n", m->dir);
  }
  memset(m, 0, sizeof *m);
}

const t4a_hk_kernel *hk_kernel(const hk_mod *m, const char *name) {
  for (uint32_t i = 0; i < m->m->kernel_count; ++i)
    if (!strcmp(m->m->kernels[i].name, name))
      return &m->m->kernels[i];
  return NULL;
}

int hk_worker_init(hk_worker *w, uint32_t stacks, uint64_t stack_bytes, uint64_t shared_bytes) {
  memset(w, 0, sizeof *w);
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  /* the stacks, a guard page, the fibers' records (as plugin-host/pool.c) */
  w->map_bytes = (uint64_t)stacks * (stack_bytes + page + T4A_HK_FIBER_BYTES) + page;
  if (stacks) {
    char *m = mmap(NULL, w->map_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
      return -1;
    for (uint32_t i = 0; i <= stacks; ++i)
      if (mprotect(m + i * (stack_bytes + page), page, PROT_NONE))
        return -1;
    w->map = m;
    w->w.stacks = m + page;
    w->w.fibers = m + stacks * (stack_bytes + page) + page; /* the records, above a guard */
  }
  w->w.stack_bytes = stack_bytes;
  w->w.stack_count = stacks;
  if (shared_bytes) {
    w->w.shared = aligned_alloc(256, (shared_bytes + 255) / 256 * 256);
    if (!w->w.shared)
      return -1;
    memset(w->w.shared, 0xA5, shared_bytes);
  }
  w->w.shared_bytes = shared_bytes;
  return 0;
}

void hk_worker_free(hk_worker *w) {
  if (w->map)
    munmap(w->map, w->map_bytes);
  free(w->w.shared);
  memset(w, 0, sizeof *w);
}

typedef struct job {
  const t4a_hk_kernel *k;
  t4a_hk_launch l;
  uint64_t blocks, next; /* next: atomically taken, chunk blocks at a time */
  uint64_t chunk;
  int32_t stop;
  pthread_mutex_t mu;
  int faulted;
  t4a_hk_fault fault;
  uint32_t threads_per_block;
} job;

static void *worker_main(void *arg) {
  job *j = arg;
  hk_worker w;
  uint32_t stacks = (j->k->flags & T4A_HK_KERNEL_FIBERS) ? j->threads_per_block : 0;
  if (hk_worker_init(&w, stacks, (size_t)64 * 1024,
                     j->l.dynamic_shared ? j->l.dynamic_shared : 0)) {
    pthread_mutex_lock(&j->mu);
    j->faulted = 1;
    snprintf(j->fault.message, sizeof j->fault.message, "harness: worker allocation failed");
    pthread_mutex_unlock(&j->mu);
    __atomic_store_n(&j->stop, 1, __ATOMIC_RELAXED);
    return NULL;
  }
  for (;;) {
    uint64_t b = __atomic_fetch_add(&j->next, j->chunk, __ATOMIC_RELAXED);
    if (b >= j->blocks || __atomic_load_n(&j->stop, __ATOMIC_RELAXED))
      break;
    t4a_hk_fault f;
    memset(&f, 0, sizeof f);
    uint64_t count = j->blocks - b < j->chunk ? j->blocks - b : j->chunk;
    if (j->k->run(&j->l, b, count, &w.w, &f)) {
      pthread_mutex_lock(&j->mu);
      if (!j->faulted)
        j->fault = f, j->faulted = 1;
      pthread_mutex_unlock(&j->mu);
      __atomic_store_n(&j->stop, 1, __ATOMIC_RELAXED);
      break;
    }
  }
  hk_worker_free(&w);
  return NULL;
}

int hk_launch(const t4a_hk_kernel *k, t4a_hk_dim3 grid, t4a_hk_dim3 block, uint32_t dynamic_shared,
              void **args, unsigned threads, t4a_hk_fault *fault) {
  job j;
  memset(&j, 0, sizeof j);
  j.k = k;
  j.l.grid = grid;
  j.l.block = block;
  j.l.dynamic_shared = dynamic_shared;
  j.l.args = args;
  j.l.stop = &j.stop;
  j.blocks = (uint64_t)grid.x * grid.y * grid.z;
  j.threads_per_block = block.x * block.y * block.z;
  /* about 16 chunks per thread: few atomics, still balanced */
  j.chunk = threads > 1 ? j.blocks / ((uint64_t)threads * 16) : 1;
  j.chunk = j.chunk ? j.chunk : 1;
  pthread_mutex_init(&j.mu, NULL);
  if (threads <= 1)
    worker_main(&j);
  else {
    pthread_t *t = calloc(threads, sizeof *t);
    for (unsigned i = 0; i < threads; ++i)
      pthread_create(&t[i], NULL, worker_main, &j);
    for (unsigned i = 0; i < threads; ++i)
      pthread_join(t[i], NULL);
    free(t);
  }
  pthread_mutex_destroy(&j.mu);
  if (fault)
    *fault = j.fault;
  return j.faulted;
}
