/* tests/soak/soak_code.c -- code on the device, and what threads share.
 *
 * Kernels: t4a_fill_u32 from two sources, so both ways in are exercised
 * all the time: compiled from CUDA C through artifact_compile (NVRTC, with
 * the memory and disk caches: four variants of the request, the memory cache
 * cleared now and then so that the disk cache serves, and a rare uncached
 * compile), and the test PTX through artifact_from_bytes. Modules are loaded
 * and unloaded with launches pending; a stale function is refused.
 *
 * Between threads: each thread may share one buffer (immutable while
 * shared) that the others copy from, on one device or between devices, and
 * posts witnesses that the others make their runtimes wait on. A shared
 * buffer is withdrawn under its lock before it is freed or its runtime is
 * destroyed, so no other thread's call names a dead handle. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/runtime/rtutil.h"
#include "tests/soak/soak.h"

/* The fill kernel as CUDA C. It names no file (so it is cached: see
 * artifact_compile in the header); the variant only changes the cache key. */
static const char fill_source[] =
    "extern \"C\" __global__ void t4a_fill_u32(unsigned *p, unsigned v, unsigned long long n) {\n"
    "  const unsigned variant = T4A_SOAK_VARIANT;\n"
    "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "       i < n; i += (unsigned long long)gridDim.x * blockDim.x)\n"
    "    p[i] = v + variant - variant;\n"
    "}\n";

static int get_artifact(soak_thread *th, int32_t dev, soak_rng *r, t4a_artifact *a) {
  const t4a_gpu_backend_v1 *t = G.t;
  if (!G.compiler || soak_one_in(r, 2)) {
    const char *ptx = rt_test_ptx();
    if (SOAK_OK(th, t->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, strlen(ptx), "t4a_soak.ptx", a)))
      return -1;
    soak_count(th, K_FROM_BYTES, strlen(ptx));
    return 0;
  }
  if (soak_one_in(r, 200)) { /* the next compiles come from the disk cache */
    if (SOAK_OK(th, t->compile_cache_clear(T4A_CACHE_MEMORY)))
      return -1;
  }
  char define[48];
  snprintf(define, sizeof define, "-DT4A_SOAK_VARIANT=%u", (unsigned)soak_below(r, 4));
  const char *options[] = {define};
  t4a_compile_options o = {.struct_size = sizeof o,
                           .flags = soak_one_in(r, 500) ? T4A_COMPILE_NO_CACHE : 0,
                           .source = fill_source,
                           .name = "t4a_soak_fill.cu",
                           .options = options,
                           .option_count = 1,
                           .device_ordinal = dev};
  soak_note(th, "artifact_compile %s%s on device %d", define, o.flags ? " (uncached)" : "",
            (int)dev);
  int rc = t->artifact_compile(&o, a);
  if (soak_status(th, "artifact_compile", rc, T4A_OK, T4A_OK)) {
    if (rc == T4A_ECOMPILE && a->bits) { /* the log says why */
      const char *log = NULL;
      uint64_t n = 0;
      if (t->artifact_log(*a, &log, &n) == T4A_OK && log)
        fprintf(stderr, "compile log:\n%s\n", log);
      t->artifact_release(*a);
    }
    return -1;
  }
  soak_count(th, K_COMPILE, sizeof fill_source - 1);
  return 0;
}

static int load(soak_thread *th, unsigned i, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  soak_rt *rt = &th->rt[i];
  t4a_artifact a = {0};
  if (get_artifact(th, rt->dev, r, &a))
    return -1;
  soak_mod *m = &rt->m[rt->nm];
  soak_note(th, "module_load rt%u", i);
  int rc = SOAK_OK(th, t->module_load(rt->h, a, &m->m));
  if (!rc && (rc = SOAK_OK(th, t->function_get(rt->h, m->m, "t4a_fill_u32", &m->f))))
    t->module_unload(rt->h, m->m);
  if (!rc && soak_one_in(r, 16)) { /* a name the module lacks */
    t4a_function f = {0};
    rc = SOAK_CALL(th, T4A_ENOTFOUND, t->function_get(rt->h, m->m, "t4a_no_such_kernel", &f));
    soak_count(th, K_REFUSED, 0);
  }
  /* the module stays loaded after the artifact's release */
  if (SOAK_OK(th, t->artifact_release(a)) || rc)
    return -1;
  rt->nm++;
  soak_count(th, K_LOAD, 0);
  return 0;
}

static t4a_launch_config geometry(soak_rng *r) {
  static const uint32_t blocks[] = {32, 64, 128, 256};
  t4a_launch_config c = {.struct_size = sizeof c,
                         .grid = {1 + (uint32_t)soak_below(r, 64), 1, 1},
                         .block = {blocks[soak_below(r, 4)], 1, 1}};
  return c;
}

int soak_op_module(soak_thread *th, unsigned i, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  soak_rt *rt = &th->rt[i];
  if (!G.kernels) { /* PTX is GPU code: refused, as a backend without kernels documents */
    const char *ptx = rt_test_ptx();
    t4a_artifact a = {0};
    if (SOAK_CALL(th, T4A_EUNSUPPORTED,
                  t->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, strlen(ptx), "t4a_soak.ptx", &a)))
      return -1;
    soak_count(th, K_REFUSED, 0);
    return 0;
  }
  if (rt->nm == 0 || (rt->nm < SOAK_MAX_MODS && soak_one_in(r, 2)))
    return load(th, i, r);
  unsigned k = (unsigned)soak_below(r, rt->nm);
  soak_mod m = rt->m[k];
  soak_note(th, "module_unload rt%u (launches may be pending)", i);
  if (SOAK_OK(th, t->module_unload(rt->h, m.m)))
    return -1;
  rt->m[k] = rt->m[--rt->nm];
  soak_count(th, K_UNLOAD, 0);
  if (soak_one_in(r, 4)) { /* its functions went stale with it */
    uint64_t p = 0, n = 0;
    uint32_t v = 0;
    void *args[] = {&p, &v, &n};
    t4a_launch_config c = geometry(r);
    if (SOAK_CALL(th, T4A_EHANDLE, t->launch(rt->h, m.f, &c, args)))
      return -1;
    soak_count(th, K_REFUSED, 0);
  }
  return 0;
}

/* The fill without kernels: a 32-bit memset of the same words. */
static int memset_fill(soak_thread *th, unsigned i, unsigned k, uint64_t off, uint64_t n,
                       uint32_t v) {
  soak_rt *rt = &th->rt[i];
  soak_buf *b = &rt->b[k];
  if (soak_before_write(th, i, b))
    return -1;
  soak_note(th, "memset rt%u [%llu, +%llu u32] = 0x%08x", i, (unsigned long long)off,
            (unsigned long long)n, v);
  if (SOAK_OK(th, G.t->memset(rt->h, b->h, off, v, 4, n)))
    return -1;
  for (uint64_t j = 0; j < n; j++)
    memcpy(b->shadow + off + 4 * j, &v, 4);
  soak_count(th, K_MEMSET, 4 * n);
  return 0;
}

int soak_launch_fill(soak_thread *th, unsigned i, unsigned k, uint64_t off, uint64_t n, uint32_t v,
                     soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  soak_rt *rt = &th->rt[i];
  if (!G.kernels)
    return memset_fill(th, i, k, off, n, v);
  if (rt->nm == 0 && load(th, i, r))
    return -1;
  soak_buf *b = &rt->b[k];
  uint64_t addr = 0;
  if (soak_before_write(th, i, b) || SOAK_OK(th, t->buffer_device_address(rt->h, b->h, &addr)))
    return -1;
  uint64_t p = addr + off;
  void *args[] = {&p, &v, &n};
  t4a_launch_config c = geometry(r);
  soak_note(th, "launch t4a_fill_u32 rt%u [%llu, +%llu u32] = 0x%08x, grid %u block %u", i,
            (unsigned long long)off, (unsigned long long)n, v, c.grid[0], c.block[0]);
  if (SOAK_OK(th, t->launch(rt->h, rt->m[soak_below(r, rt->nm)].f, &c, args)))
    return -1;
  for (uint64_t j = 0; j < n; j++) /* the device is little-endian, as the hosts we run on */
    memcpy(b->shadow + off + 4 * j, &v, 4);
  rt->x.launches++;
  soak_count(th, K_LAUNCH, 4 * n);
  return 0;
}

int soak_op_launch(soak_thread *th, unsigned i, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  soak_rt *rt = &th->rt[i];
  unsigned fit[SOAK_MAX_BUFS], nfit = 0;
  for (unsigned k = 0; k < rt->nb; k++)
    if (rt->b[k].size >= 4)
      fit[nfit++] = k;
  if (!nfit)
    return soak_op_alloc(th, i, r);
  unsigned k = fit[soak_below(r, nfit)];
  uint64_t words = rt->b[k].size / 4, first = soak_below(r, words);
  uint64_t n = 1 + soak_below(r, words - first);
  if (soak_one_in(r, 32) && rt->nm) { /* a block over the device's limit: refused first */
    uint64_t p = 0;
    uint32_t v = 0;
    void *args[] = {&p, &v, &n};
    t4a_launch_config c = {.struct_size = sizeof c, .grid = {1, 1, 1}, .block = {4096, 1, 1}};
    if (SOAK_CALL(th, T4A_EINVAL, t->launch(rt->h, rt->m[0].f, &c, args)))
      return -1;
    soak_count(th, K_REFUSED, 0);
    return 0;
  }
  return soak_launch_fill(th, i, k, 4 * first, n, (uint32_t)soak_next(r), r);
}

/* ---- a buffer shared with the other threads ------------------------------------------ */

int soak_unpublish(soak_thread *th) {
  if (th->pub_rt < 0)
    return 0;
  soak_pub *p = &G.pub[th->index];
  pthread_mutex_lock(&p->lock);
  p->live = false;
  pthread_mutex_unlock(&p->lock);
  soak_rt *rt = &th->rt[th->pub_rt];
  rt->has_pub = false;
  th->pub_rt = -1;
  free(p->content);
  p->content = NULL;
  /* copies other threads enqueued from it may be pending: the backend
   * keeps the block until they completed */
  soak_note(th, "unpublish and free the shared buffer");
  soak_count(th, K_PUBLISH, 0);
  return SOAK_OK(th, G.t->buffer_free(rt->h, p->b));
}

int soak_op_publish(soak_thread *th, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  if (th->pub_rt >= 0)
    return soak_unpublish(th);
  unsigned i = (unsigned)soak_below(r, th->nrt);
  soak_rt *rt = &th->rt[i];
  uint64_t size = 1 + soak_below(r, G.o.max_bytes / 2);
  uint8_t *content = malloc(size);
  if (!content)
    return soak_fail(th, "out of host memory for a shared buffer");
  soak_fill_random(content, size, r);
  t4a_buffer b = {0};
  if (SOAK_OK(th, t->buffer_alloc(rt->h, size, &b))) {
    free(content);
    return -1;
  }
  if (SOAK_OK(th, t->copy_h2d(rt->h, b, 0, content, size))) {
    free(content);
    t->buffer_free(rt->h, b);
    return -1;
  }
  rt->x.h2d++;
  rt->x.bytes_h2d += size;
  soak_pub *p = &G.pub[th->index];
  pthread_mutex_lock(&p->lock);
  p->live = true;
  p->rt = rt->h;
  p->b = b;
  p->dev = rt->dev;
  p->size = size;
  p->content = content;
  pthread_mutex_unlock(&p->lock);
  rt->has_pub = true;
  th->pub_rt = (int)i;
  soak_note(th, "publish %llu bytes from rt%u", (unsigned long long)size, i);
  soak_count(th, K_PUBLISH, size);
  return 0;
}

int soak_op_shared(soak_thread *th, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  if (G.o.threads < 2)
    return 0;
  unsigned j = (unsigned)soak_below(r, G.o.threads - 1);
  j += j >= th->index;
  unsigned di = (unsigned)soak_below(r, th->nrt);
  soak_rt *d = &th->rt[di];
  if (d->nb == 0)
    return soak_op_alloc(th, di, r);
  soak_buf *y = &d->b[soak_below(r, d->nb)];
  soak_pub *p = &G.pub[j];
  pthread_mutex_lock(&p->lock);
  if (!p->live) {
    pthread_mutex_unlock(&p->lock);
    return 0;
  }
  uint64_t lim = p->size < y->size ? p->size : y->size, n = soak_below(r, lim + 1);
  uint64_t xoff = soak_below(r, p->size - n + 1), yoff = soak_below(r, y->size - n + 1);
  bool same = p->dev == d->dev, direct = same || (G.peer[d->dev][p->dev] && !soak_one_in(r, 3));
  soak_note(th, "copy rt%u [%llu] <- thread %u's shared buffer [%llu] +%llu (%s)", di,
            (unsigned long long)yoff, j, (unsigned long long)xoff, (unsigned long long)n,
            same     ? "same device"
            : direct ? "peer"
                     : "via host");
  int rc = soak_before_write(th, di, y);
  if (!rc && same)
    rc = SOAK_OK(th, t->copy_from_runtime(d->h, y->h, yoff, p->rt, p->b, xoff, n));
  else if (!rc && direct)
    rc = SOAK_OK(th, t->copy_from_peer(d->h, y->h, yoff, p->rt, p->b, xoff, n));
  else if (!rc)
    rc = SOAK_OK(th, t->copy_from_peer_via_host(d->h, y->h, yoff, p->rt, p->b, xoff, n));
  if (!rc)
    memcpy(y->shadow + yoff, p->content + xoff, n);
  pthread_mutex_unlock(&p->lock);
  if (rc)
    return -1;
  if (n) {
    uint64_t *c = same ? &d->x.cross : direct ? &d->x.peer : &d->x.via_host;
    (*c)++;
    d->x.bytes_d2d += n;
  }
  soak_count(th, K_SHARED, n);
  return 0;
}

/* ---- witnesses posted for the other threads ----------------------------------------- */

int soak_op_mailbox(soak_thread *th, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  if (G.o.threads < 2)
    return 0;
  unsigned i = (unsigned)soak_below(r, th->nrt);
  if (soak_one_in(r, 2)) { /* post one of ours */
    t4a_witness w = {0};
    soak_note(th, "post a witness of rt%u", i);
    if (SOAK_OK(th, t->seal(th->rt[i].h, &w)))
      return -1;
    th->rt[i].x.seals++;
    soak_box *b = &G.box[th->index];
    pthread_mutex_lock(&b->lock);
    t4a_witness old = b->w;
    b->w = w;
    pthread_mutex_unlock(&b->lock);
    soak_count(th, K_MAILBOX, 0);
    return old.bits ? SOAK_OK(th, t->witness_release(old)) : 0;
  }
  unsigned j = (unsigned)soak_below(r, G.o.threads - 1);
  j += j >= th->index;
  soak_box *b = &G.box[j];
  int rc = 0;
  pthread_mutex_lock(&b->lock);
  t4a_witness w = b->w;
  if (w.bits)
    rc = SOAK_OK(th, t->witness_retain(w));
  pthread_mutex_unlock(&b->lock);
  if (!w.bits || rc)
    return rc;
  /* its runtime may be on another device, or destroyed by now: either way
   * our runtime's later work waits for that work, GPU-side */
  soak_note(th, "rt%u waits for thread %u's witness", i, j);
  rc = SOAK_OK(th, t->runtime_wait_witness(th->rt[i].h, w));
  if (SOAK_OK(th, t->witness_release(w)) || rc)
    return -1;
  soak_count(th, K_MAILBOX, 0);
  return 0;
}
