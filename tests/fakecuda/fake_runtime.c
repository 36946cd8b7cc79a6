/* tests/fakecuda/fake_runtime.c -- the functional part of the fake driver:
 * contexts, streams that execute their queue on a worker thread, events,
 * device memory backed by host memory with guard zones, pools, pinned host
 * memory, copies, modules whose kernels are a few named host functions,
 * peer access, sticky faults, and fault injection.
 *
 * Tests steer it through exported fake_cuda_* functions (dlsym on the
 * library the plugin loaded). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/fakecuda/fake_internal.h"

pthread_mutex_t fake_G = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t fake_changed = PTHREAD_COND_INITIALIZER;

#define OK T4A__CUDA_SUCCESS
#define LOCK() pthread_mutex_lock(&fake_G)
#define UNLOCK() pthread_mutex_unlock(&fake_G)
#define MAX_DEVICES 8
#define GUARD ((size_t)64)
#define GUARD_BYTE 0xfd

/* ---- fault injection -------------------------------------------------------- */

typedef struct counter {
  char name[48];
  uint64_t calls;
  uint64_t fail_at; /* 0 = never */
  R fail_code;
} counter;

static counter counters[128];
static int ncounters;
static int env_parsed;

static counter *counter_of(const char *name) {
  for (int i = 0; i < ncounters; i++)
    if (strcmp(counters[i].name, name) == 0)
      return &counters[i];
  if (ncounters == (int)(sizeof counters / sizeof counters[0]))
    return NULL;
  counter *c = &counters[ncounters++];
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", name);
  return c;
}

/* FAKE_CUDA_FAIL="name:N:code,name:N:code": the Nth call of name fails. */
static void parse_env(void) {
  const char *v = getenv("FAKE_CUDA_FAIL");
  env_parsed = 1;
  if (!v)
    return;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", v);
  char *save = NULL;
  for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char name[48];
    unsigned long long nth;
    unsigned code;
    if (sscanf(item, "%47[^:]:%llu:%u", name, &nth, &code) == 3) {
      counter *c = counter_of(name);
      if (c) {
        c->fail_at = nth;
        c->fail_code = code;
      }
    }
  }
}

static R device_fault[MAX_DEVICES];

R fake_device_fault(int device) {
  return device >= 0 && device < MAX_DEVICES ? device_fault[device] : 0;
}

static void fault_current_device(R r);

/* An injected sticky code (an illegal address, a launch failure, ...)
 * poisons the calling thread's current device, as it would on a GPU: its
 * streams run no further work and later calls in it report the fault. */
static bool sticky(R r) {
  return r == T4A__CUDA_ERROR_ILLEGAL_ADDRESS || r == T4A__CUDA_ERROR_LAUNCH_FAILED;
}

R fake_enter(const char *name, bool needs_init) {
  if (needs_init && !fake_initialised())
    return T4A__CUDA_ERROR_NOT_INITIALIZED;
  LOCK();
  if (!env_parsed)
    parse_env();
  counter *c = counter_of(name);
  R r = OK;
  if (c && ++c->calls == c->fail_at)
    r = c->fail_code;
  if (sticky(r))
    fault_current_device(r);
  UNLOCK();
  return r;
}

EXPORT void fake_cuda_fail(const char *name, uint64_t nth, unsigned code);
void fake_cuda_fail(const char *name, uint64_t nth, unsigned code) {
  LOCK();
  if (!env_parsed)
    parse_env();
  counter *c = counter_of(name);
  if (c) {
    c->fail_at = nth ? c->calls + nth : 0; /* the nth call from now */
    c->fail_code = code;
  }
  UNLOCK();
}

EXPORT uint64_t fake_cuda_calls(const char *name);
uint64_t fake_cuda_calls(const char *name) {
  LOCK();
  counter *c = counter_of(name);
  uint64_t n = c ? c->calls : 0;
  UNLOCK();
  return n;
}

/* ---- contexts ------------------------------------------------------------------ */

struct CUctx_st {
  int device;
  int refs;
  unsigned peers; /* bit d: this context may access device d */
};

static struct CUctx_st ctxs[MAX_DEVICES] = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {3, 0, 0},
                                            {4, 0, 0}, {5, 0, 0}, {6, 0, 0}, {7, 0, 0}};
static _Thread_local struct CUctx_st *current;

static void fault_current_device(R r) { /* under G */
  if (current && current->device >= 0 && current->device < MAX_DEVICES) {
    device_fault[current->device] = r;
    pthread_cond_broadcast(&fake_changed);
  }
}

static R need_ctx(void) {
  if (!current)
    return T4A__CUDA_ERROR_INVALID_CONTEXT;
  R f = fake_device_fault(current->device);
  return f ? f : OK;
}

EXPORT R fake_sym_cuDevicePrimaryCtxRetain(t4a__CUcontext *ctx,
                                           t4a__CUdevice d) __asm__("cuDevicePrimaryCtxRetain");
R fake_sym_cuDevicePrimaryCtxRetain(t4a__CUcontext *ctx, t4a__CUdevice d) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain");
  if (d < 0 || d >= fake_device_count() || d >= MAX_DEVICES)
    return T4A__CUDA_ERROR_INVALID_DEVICE;
  LOCK();
  ctxs[d].refs++; /* .device is constant */
  UNLOCK();
  *ctx = &ctxs[d];
  return OK;
}

EXPORT R
fake_sym_cuDevicePrimaryCtxRelease(t4a__CUdevice d) __asm__("cuDevicePrimaryCtxRelease_v2");
R fake_sym_cuDevicePrimaryCtxRelease(t4a__CUdevice d) {
  FAKE_ENTER("cuDevicePrimaryCtxRelease");
  if (d < 0 || d >= MAX_DEVICES)
    return T4A__CUDA_ERROR_INVALID_DEVICE;
  LOCK();
  R r = ctxs[d].refs > 0 ? OK : T4A__CUDA_ERROR_INVALID_CONTEXT;
  if (ctxs[d].refs > 0 && --ctxs[d].refs == 0)
    ctxs[d].peers = 0;
  UNLOCK();
  return r;
}

EXPORT R fake_sym_cuCtxGetCurrent(t4a__CUcontext *ctx) __asm__("cuCtxGetCurrent");
R fake_sym_cuCtxGetCurrent(t4a__CUcontext *ctx) {
  FAKE_ENTER("cuCtxGetCurrent");
  *ctx = current;
  return OK;
}

EXPORT R fake_sym_cuCtxSetCurrent(t4a__CUcontext ctx) __asm__("cuCtxSetCurrent");
R fake_sym_cuCtxSetCurrent(t4a__CUcontext ctx) {
  FAKE_ENTER("cuCtxSetCurrent");
  current = ctx;
  return OK;
}

EXPORT R fake_sym_cuCtxEnablePeerAccess(t4a__CUcontext peer,
                                        unsigned flags) __asm__("cuCtxEnablePeerAccess");
R fake_sym_cuCtxEnablePeerAccess(t4a__CUcontext peer, unsigned flags) {
  FAKE_ENTER("cuCtxEnablePeerAccess");
  R r = need_ctx();
  if (r)
    return r;
  if (!peer || flags)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  if (getenv("FAKE_CUDA_NO_PEER") || peer == current)
    return T4A__CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  LOCK();
  unsigned bit = 1u << peer->device;
  r = (current->peers & bit) ? T4A__CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED : OK;
  current->peers |= bit;
  UNLOCK();
  return r;
}

/* ---- memory registry ----------------------------------------------------------- */

enum { MEM_DEVICE = 1, MEM_HOST = 2 };

typedef struct alloc {
  char *base; /* user pointer - GUARD */
  size_t bytes;
  int kind, device;
  bool freeing; /* a stream-ordered free is queued */
  struct alloc *next;
} alloc;

static alloc *allocs;
static uint64_t guard_violations, oob_attempts, live[8];
static size_t device_used[MAX_DEVICES];

enum { LIVE_DEVICE, LIVE_HOST, LIVE_STREAM, LIVE_EVENT, LIVE_POOL, LIVE_MODULE };

static alloc *alloc_new(size_t bytes, int kind, int device) {
  alloc *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  if (posix_memalign((void **)&a->base, 4096, bytes + 2 * GUARD) != 0) {
    free(a);
    return NULL;
  }
  memset(a->base, GUARD_BYTE, GUARD);
  memset(a->base + GUARD + bytes, GUARD_BYTE, GUARD);
  memset(a->base + GUARD, 0xa5, bytes); /* never zero: tests must write what they read */
  a->bytes = bytes;
  a->kind = kind;
  a->device = device;
  a->next = allocs;
  allocs = a;
  live[kind == MEM_DEVICE ? LIVE_DEVICE : LIVE_HOST]++;
  if (kind == MEM_DEVICE)
    device_used[device] += bytes;
  return a;
}

/* The allocation containing [p, p + n) (G held), or NULL. */
static alloc *alloc_find(const void *p, size_t n, int kind) {
  const char *c = p;
  for (alloc *a = allocs; a; a = a->next) {
    const char *u = a->base + GUARD;
    if (a->kind == kind && c >= u && c < u + a->bytes + (a->bytes == 0))
      return (size_t)(u + a->bytes - c) >= n ? a : NULL;
  }
  return NULL;
}

static alloc *alloc_at(const void *p, int kind) {
  for (alloc *a = allocs; a; a = a->next)
    if (a->kind == kind && a->base + GUARD == p)
      return a;
  return NULL;
}

static void alloc_free(alloc *a) {
  for (size_t i = 0; i < GUARD; i++)
    if ((unsigned char)a->base[i] != GUARD_BYTE ||
        (unsigned char)a->base[GUARD + a->bytes + i] != GUARD_BYTE) {
      guard_violations++;
      break;
    }
  alloc **pp = &allocs;
  while (*pp != a)
    pp = &(*pp)->next;
  *pp = a->next;
  live[a->kind == MEM_DEVICE ? LIVE_DEVICE : LIVE_HOST]--;
  if (a->kind == MEM_DEVICE)
    device_used[a->device] -= a->bytes;
  free(a->base);
  free(a);
}

/* ---- events ---------------------------------------------------------------------- */

struct CUevent_st {
  uint64_t recorded, completed;
  R failed;        /* the work it follows faulted */
  unsigned queued; /* stream operations (record, wait) still referring to it */
  bool destroyed;  /* freed once `queued` drops to 0, as CUDA does */
};

EXPORT R fake_sym_cuEventCreate(t4a__CUevent *e, unsigned flags) __asm__("cuEventCreate");
R fake_sym_cuEventCreate(t4a__CUevent *e, unsigned flags) {
  FAKE_ENTER("cuEventCreate");
  R r = need_ctx();
  if (r)
    return r;
  if (flags & ~3u)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  *e = calloc(1, sizeof **e);
  if (!*e)
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  LOCK();
  live[LIVE_EVENT]++;
  UNLOCK();
  return OK;
}

EXPORT R fake_sym_cuEventDestroy(t4a__CUevent e) __asm__("cuEventDestroy_v2");
R fake_sym_cuEventDestroy(t4a__CUevent e) {
  FAKE_ENTER("cuEventDestroy");
  if (!e)
    return T4A__CUDA_ERROR_INVALID_HANDLE;
  LOCK();
  live[LIVE_EVENT]--;
  e->destroyed = true;
  bool now = e->queued == 0;
  UNLOCK();
  if (now)
    free(e);
  return OK;
}

EXPORT R fake_sym_cuEventQuery(t4a__CUevent e) __asm__("cuEventQuery");
R fake_sym_cuEventQuery(t4a__CUevent e) {
  FAKE_ENTER("cuEventQuery");
  if (!e)
    return T4A__CUDA_ERROR_INVALID_HANDLE;
  LOCK();
  R r = e->failed ? e->failed : e->completed >= e->recorded ? OK : T4A__CUDA_ERROR_NOT_READY;
  UNLOCK();
  return r;
}

EXPORT R fake_sym_cuEventSynchronize(t4a__CUevent e) __asm__("cuEventSynchronize");
R fake_sym_cuEventSynchronize(t4a__CUevent e) {
  FAKE_ENTER("cuEventSynchronize");
  if (!e)
    return T4A__CUDA_ERROR_INVALID_HANDLE;
  LOCK();
  uint64_t want = e->recorded;
  while (e->completed < want && !e->failed)
    pthread_cond_wait(&fake_changed, &fake_G);
  R r = e->failed;
  UNLOCK();
  return r;
}

/* ---- streams ------------------------------------------------------------------------ */

/* A kernel: its packed arguments and the launch geometry (x only). */
typedef struct geometry {
  unsigned grid, block, shared;
  int device;
} geometry;
typedef void (*kernel_fn)(const unsigned char *args, geometry g);

typedef struct op {
  enum { OP_COPY, OP_SET, OP_RECORD, OP_WAIT, OP_FREE, OP_KERNEL } kind;
  void *dst;
  const void *src;
  size_t bytes;
  unsigned char value;
  void *owned; /* freed after the op ran: a pageable source's snapshot */
  t4a__CUevent event;
  uint64_t gen;
  alloc *target;
  kernel_fn kernel;
  geometry geom;
  unsigned char args[128];
  struct op *next;
} op;

struct CUstream_st {
  int device;
  op *head, *tail;
  bool executing, stop;
  R failed; /* sticky: a fault in this stream's work */
  pthread_t thread;
};

static int held; /* fake_cuda_hold: workers start no new op */

EXPORT void fake_cuda_hold(int on);
void fake_cuda_hold(int on) {
  LOCK();
  held = on;
  pthread_cond_broadcast(&fake_changed);
  UNLOCK();
}

static void run(t4a__CUstream s, op *o) {
  switch (o->kind) {
  case OP_COPY: memcpy(o->dst, o->src, o->bytes); break;
  case OP_SET: memset(o->dst, o->value, o->bytes); break;
  case OP_KERNEL: o->kernel(o->args, o->geom); break;
  case OP_WAIT:
    LOCK();
    while (o->event->completed < o->gen && !o->event->failed)
      pthread_cond_wait(&fake_changed, &fake_G);
    UNLOCK();
    break;
  case OP_RECORD: /* done under G by the worker */
  case OP_FREE: break;
  }
  (void)s;
}

static void *worker(void *arg) {
  t4a__CUstream s = arg;
  LOCK();
  for (;;) {
    while (!s->stop && (!s->head || held))
      pthread_cond_wait(&fake_changed, &fake_G);
    if (!s->head && s->stop)
      break;
    if (!s->head)
      continue;
    op *o = s->head;
    s->executing = true;
    R fault = fake_device_fault(s->device);
    if (!fault) {
      UNLOCK();
      run(s, o);
      LOCK();
      fault = fake_device_fault(s->device);
    }
    if (fault)
      s->failed = fault;
    if (o->kind == OP_RECORD) {
      if (s->failed)
        o->event->failed = s->failed;
      else if (o->event->completed < o->gen)
        o->event->completed = o->gen;
    }
    if (o->kind == OP_FREE)
      alloc_free(o->target);
    if ((o->kind == OP_RECORD || o->kind == OP_WAIT) && --o->event->queued == 0 &&
        o->event->destroyed)
      free(o->event);
    s->head = o->next;
    if (!s->head)
      s->tail = NULL;
    s->executing = false;
    free(o->owned);
    free(o);
    pthread_cond_broadcast(&fake_changed);
  }
  UNLOCK();
  return NULL;
}

static R enqueue(t4a__CUstream s, op *o) {
  s = fake_stream_alias(s); /* hook: default stream handles (fake_interop.c) */
  if (!s)
    return T4A__CUDA_ERROR_INVALID_HANDLE; /* the plugin never uses the legacy stream */
  op *copy = malloc(sizeof *copy);
  if (!copy)
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  *copy = *o;
  copy->next = NULL;
  LOCK();
  if (copy->kind == OP_RECORD || copy->kind == OP_WAIT)
    copy->event->queued++;
  if (s->tail)
    s->tail->next = copy;
  else
    s->head = copy;
  s->tail = copy;
  pthread_cond_broadcast(&fake_changed);
  UNLOCK();
  return OK;
}

EXPORT R fake_sym_cuStreamCreate(t4a__CUstream *s, unsigned flags) __asm__("cuStreamCreate");
R fake_sym_cuStreamCreate(t4a__CUstream *s, unsigned flags) {
  FAKE_ENTER("cuStreamCreate");
  R r = need_ctx();
  if (r)
    return r;
  if (flags & ~1u)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  t4a__CUstream n = calloc(1, sizeof *n);
  if (!n)
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  n->device = current->device;
  if (pthread_create(&n->thread, NULL, worker, n) != 0) {
    free(n);
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  }
  LOCK();
  live[LIVE_STREAM]++;
  UNLOCK();
  *s = n;
  return OK;
}

EXPORT R fake_sym_cuStreamDestroy(t4a__CUstream s) __asm__("cuStreamDestroy_v2");
R fake_sym_cuStreamDestroy(t4a__CUstream s) {
  FAKE_ENTER("cuStreamDestroy");
  if (!s)
    return T4A__CUDA_ERROR_INVALID_HANDLE;
  LOCK();
  s->stop = true; /* its queue still drains, as on a GPU */
  pthread_cond_broadcast(&fake_changed);
  live[LIVE_STREAM]--;
  UNLOCK();
  pthread_join(s->thread, NULL);
  free(s);
  return OK;
}

EXPORT R fake_sym_cuStreamQuery(t4a__CUstream s) __asm__("cuStreamQuery");
R fake_sym_cuStreamQuery(t4a__CUstream s) {
  FAKE_ENTER("cuStreamQuery");
  if (!s)
    return T4A__CUDA_ERROR_INVALID_HANDLE;
  LOCK();
  R r = s->failed ? s->failed : (s->head || s->executing) ? T4A__CUDA_ERROR_NOT_READY : OK;
  UNLOCK();
  return r;
}

EXPORT R fake_sym_cuStreamSynchronize(t4a__CUstream s) __asm__("cuStreamSynchronize");
R fake_sym_cuStreamSynchronize(t4a__CUstream s) {
  FAKE_ENTER("cuStreamSynchronize");
  if (!s)
    return T4A__CUDA_ERROR_INVALID_HANDLE;
  LOCK();
  while ((s->head || s->executing) && !s->failed)
    pthread_cond_wait(&fake_changed, &fake_G);
  R r = s->failed;
  UNLOCK();
  return r;
}

EXPORT R fake_sym_cuStreamWaitEvent(t4a__CUstream s, t4a__CUevent e,
                                    unsigned flags) __asm__("cuStreamWaitEvent");
R fake_sym_cuStreamWaitEvent(t4a__CUstream s, t4a__CUevent e, unsigned flags) {
  FAKE_ENTER("cuStreamWaitEvent");
  if (!e || flags)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  uint64_t gen = e->recorded; /* the record at call time, as in CUDA */
  UNLOCK();
  op o = {.kind = OP_WAIT, .event = e, .gen = gen};
  return enqueue(s, &o);
}

EXPORT R fake_sym_cuEventRecord(t4a__CUevent e, t4a__CUstream s) __asm__("cuEventRecord");
R fake_sym_cuEventRecord(t4a__CUevent e, t4a__CUstream s) {
  FAKE_ENTER("cuEventRecord");
  if (!e)
    return T4A__CUDA_ERROR_INVALID_HANDLE;
  LOCK();
  uint64_t gen = ++e->recorded;
  e->failed = 0;
  UNLOCK();
  op o = {.kind = OP_RECORD, .event = e, .gen = gen};
  return enqueue(s, &o);
}

/* ---- pools and device memory ------------------------------------------------------- */

struct CUmemPoolHandle_st {
  int device;
  unsigned peers;
  uint64_t threshold;
};

EXPORT R fake_sym_cuMemPoolCreate(t4a__CUmemoryPool *p,
                                  const t4a__CUmemPoolProps *props) __asm__("cuMemPoolCreate");
R fake_sym_cuMemPoolCreate(t4a__CUmemoryPool *p, const t4a__CUmemPoolProps *props) {
  FAKE_ENTER("cuMemPoolCreate");
  if (!props || props->allocType != T4A__CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->location.type != T4A__CU_MEM_LOCATION_TYPE_DEVICE || props->location.id < 0 ||
      props->location.id >= fake_device_count())
    return T4A__CUDA_ERROR_INVALID_VALUE;
  *p = calloc(1, sizeof **p);
  if (!*p)
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  (*p)->device = props->location.id;
  LOCK();
  live[LIVE_POOL]++;
  UNLOCK();
  return OK;
}

EXPORT R fake_sym_cuMemPoolDestroy(t4a__CUmemoryPool p) __asm__("cuMemPoolDestroy");
R fake_sym_cuMemPoolDestroy(t4a__CUmemoryPool p) {
  FAKE_ENTER("cuMemPoolDestroy");
  if (!p)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  live[LIVE_POOL]--;
  UNLOCK();
  free(p);
  return OK;
}

EXPORT R fake_sym_cuMemPoolSetAttribute(t4a__CUmemoryPool p, t4a__CUmemPool_attribute a,
                                        void *v) __asm__("cuMemPoolSetAttribute");
R fake_sym_cuMemPoolSetAttribute(t4a__CUmemoryPool p, t4a__CUmemPool_attribute a, void *v) {
  FAKE_ENTER("cuMemPoolSetAttribute");
  if (!p || !v || a != T4A__CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  memcpy(&p->threshold, v, sizeof p->threshold);
  return OK;
}

EXPORT R fake_sym_cuMemPoolTrimTo(t4a__CUmemoryPool p, size_t keep) __asm__("cuMemPoolTrimTo");
R fake_sym_cuMemPoolTrimTo(t4a__CUmemoryPool p, size_t keep) {
  FAKE_ENTER("cuMemPoolTrimTo");
  (void)keep;
  return p ? OK : T4A__CUDA_ERROR_INVALID_VALUE;
}

EXPORT R fake_sym_cuMemPoolSetAccess(t4a__CUmemoryPool p, const t4a__CUmemAccessDesc *map,
                                     size_t count) __asm__("cuMemPoolSetAccess");
R fake_sym_cuMemPoolSetAccess(t4a__CUmemoryPool p, const t4a__CUmemAccessDesc *map, size_t count) {
  FAKE_ENTER("cuMemPoolSetAccess");
  if (!p || !map)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; i++)
    if (map[i].location.id >= 0 && map[i].location.id < MAX_DEVICES)
      p->peers |= 1u << map[i].location.id;
  return OK;
}

static size_t device_limit(void) { return (size_t)fake_env_int("FAKE_CUDA_MEM_MIB", 1024) << 20; }

EXPORT R fake_sym_cuMemAllocFromPoolAsync(t4a__CUdeviceptr *ptr, size_t bytes, t4a__CUmemoryPool p,
                                          t4a__CUstream s) __asm__("cuMemAllocFromPoolAsync");
R fake_sym_cuMemAllocFromPoolAsync(t4a__CUdeviceptr *ptr, size_t bytes, t4a__CUmemoryPool p,
                                   t4a__CUstream s) {
  FAKE_ENTER("cuMemAllocFromPoolAsync");
  R r = need_ctx();
  if (r)
    return r;
  if (!ptr || !p || !s || !bytes)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  alloc *a = NULL;
  if (device_used[p->device] + bytes <= device_limit())
    a = alloc_new(bytes, MEM_DEVICE, p->device);
  UNLOCK();
  if (!a)
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = (t4a__CUdeviceptr)(uintptr_t)(a->base + GUARD);
  return OK;
}

EXPORT R fake_sym_cuMemFreeAsync(t4a__CUdeviceptr ptr, t4a__CUstream s) __asm__("cuMemFreeAsync");
R fake_sym_cuMemFreeAsync(t4a__CUdeviceptr ptr, t4a__CUstream s) {
  FAKE_ENTER("cuMemFreeAsync");
  LOCK();
  alloc *a = alloc_at((void *)(uintptr_t)ptr, MEM_DEVICE);
  R r = a && !a->freeing ? OK : T4A__CUDA_ERROR_INVALID_VALUE;
  if (!r)
    a->freeing = true; /* a second free of the same block is an error */
  UNLOCK();
  if (r)
    return r;
  op o = {.kind = OP_FREE, .target = a};
  return enqueue(s, &o);
}

EXPORT R fake_sym_cuMemHostAlloc(void **p, size_t bytes, unsigned flags) __asm__("cuMemHostAlloc");
R fake_sym_cuMemHostAlloc(void **p, size_t bytes, unsigned flags) {
  FAKE_ENTER("cuMemHostAlloc");
  R r = need_ctx();
  if (r)
    return r;
  if (!p || !bytes || (flags & ~7u))
    return T4A__CUDA_ERROR_INVALID_VALUE;
  if (bytes > ((size_t)fake_env_int("FAKE_CUDA_PINNED_MIB", 4096) << 20))
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  LOCK();
  alloc *a = alloc_new(bytes, MEM_HOST, -1);
  UNLOCK();
  if (!a)
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  *p = a->base + GUARD;
  return OK;
}

EXPORT R fake_sym_cuMemFreeHost(void *p) __asm__("cuMemFreeHost");
R fake_sym_cuMemFreeHost(void *p) {
  FAKE_ENTER("cuMemFreeHost");
  LOCK();
  alloc *a = alloc_at(p, MEM_HOST);
  if (a)
    alloc_free(a);
  UNLOCK();
  return a ? OK : T4A__CUDA_ERROR_INVALID_VALUE;
}

/* Validates a device range (and a host range when it lies in pinned memory);
 * counts and refuses out-of-bounds accesses. */
static R check_device(t4a__CUdeviceptr p, size_t n) {
  LOCK();
  alloc *a = alloc_find((void *)(uintptr_t)p, n, MEM_DEVICE);
  if (!a || a->freeing)
    oob_attempts++;
  UNLOCK();
  return a && !a->freeing ? OK : T4A__CUDA_ERROR_INVALID_VALUE;
}

static R check_host(const void *p, size_t n) {
  LOCK();
  bool bad = false;
  for (alloc *a = allocs; a; a = a->next) {
    const char *u = a->base + GUARD, *c = p;
    if (a->kind == MEM_HOST && c >= u && c < u + a->bytes)
      bad = (size_t)(u + a->bytes - c) < n;
  }
  if (bad)
    oob_attempts++;
  UNLOCK();
  return bad ? T4A__CUDA_ERROR_INVALID_VALUE : OK;
}

static R copy_async(void *dst, const void *src, size_t n, t4a__CUstream s) {
  op o = {.kind = OP_COPY, .dst = dst, .src = src, .bytes = n};
  return enqueue(s, &o);
}

EXPORT R fake_sym_cuMemcpyHtoDAsync(t4a__CUdeviceptr dst, const void *src, size_t n,
                                    t4a__CUstream s) __asm__("cuMemcpyHtoDAsync_v2");
R fake_sym_cuMemcpyHtoDAsync(t4a__CUdeviceptr dst, const void *src, size_t n, t4a__CUstream s) {
  FAKE_ENTER("cuMemcpyHtoDAsync");
  R r;
  if ((r = need_ctx()) || (r = check_device(dst, n)) || (r = check_host(src, n)))
    return r;
  LOCK();
  bool pinned = alloc_find(src, n, MEM_HOST) != NULL;
  UNLOCK();
  if (pinned)
    return copy_async((void *)(uintptr_t)dst, src, n, s);
  /* From pageable memory, as CUDA does: the source is copied at the call
   * (the caller may reuse it on return), the device write happens in
   * stream order. */
  void *snapshot = malloc(n ? n : 1);
  if (!snapshot)
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(snapshot, src, n);
  op o = {.kind = OP_COPY,
          .dst = (void *)(uintptr_t)dst,
          .src = snapshot,
          .bytes = n,
          .owned = snapshot};
  R e = enqueue(s, &o);
  if (e)
    free(snapshot);
  return e;
}

EXPORT R fake_sym_cuMemcpyDtoHAsync(void *dst, t4a__CUdeviceptr src, size_t n,
                                    t4a__CUstream s) __asm__("cuMemcpyDtoHAsync_v2");
R fake_sym_cuMemcpyDtoHAsync(void *dst, t4a__CUdeviceptr src, size_t n, t4a__CUstream s) {
  FAKE_ENTER("cuMemcpyDtoHAsync");
  R r;
  if ((r = need_ctx()) || (r = check_device(src, n)) || (r = check_host(dst, n)))
    return r;
  return copy_async(dst, (const void *)(uintptr_t)src, n, s);
}

EXPORT R fake_sym_cuMemcpyDtoDAsync(t4a__CUdeviceptr dst, t4a__CUdeviceptr src, size_t n,
                                    t4a__CUstream s) __asm__("cuMemcpyDtoDAsync_v2");
R fake_sym_cuMemcpyDtoDAsync(t4a__CUdeviceptr dst, t4a__CUdeviceptr src, size_t n,
                             t4a__CUstream s) {
  FAKE_ENTER("cuMemcpyDtoDAsync");
  R r;
  if ((r = need_ctx()) || (r = check_device(dst, n)) || (r = check_device(src, n)))
    return r;
  return copy_async((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, s);
}

EXPORT R fake_sym_cuMemcpyPeerAsync(t4a__CUdeviceptr dst, t4a__CUcontext dctx, t4a__CUdeviceptr src,
                                    t4a__CUcontext sctx, size_t n,
                                    t4a__CUstream s) __asm__("cuMemcpyPeerAsync");
R fake_sym_cuMemcpyPeerAsync(t4a__CUdeviceptr dst, t4a__CUcontext dctx, t4a__CUdeviceptr src,
                             t4a__CUcontext sctx, size_t n, t4a__CUstream s) {
  FAKE_ENTER("cuMemcpyPeerAsync");
  R r;
  if (!dctx || !sctx)
    return T4A__CUDA_ERROR_INVALID_CONTEXT;
  if ((r = check_device(dst, n)) || (r = check_device(src, n)))
    return r;
  return copy_async((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, s);
}

EXPORT R fake_sym_cuMemsetD8Async(t4a__CUdeviceptr dst, unsigned char v, size_t n,
                                  t4a__CUstream s) __asm__("cuMemsetD8Async");
R fake_sym_cuMemsetD8Async(t4a__CUdeviceptr dst, unsigned char v, size_t n, t4a__CUstream s) {
  FAKE_ENTER("cuMemsetD8Async");
  R r;
  if ((r = need_ctx()) || (r = check_device(dst, n)))
    return r;
  op o = {.kind = OP_SET, .dst = (void *)(uintptr_t)dst, .bytes = n, .value = v};
  return enqueue(s, &o);
}

/* ---- modules: kernels are named host functions ----------------------------------- */

/* Whether a kernel may touch [p, p + n): inside one device allocation or
 * one pinned host allocation (mapped for the GPU). A kernel that would
 * touch anything else faults its device (CUDA_ERROR_ILLEGAL_ADDRESS, sticky),
 * as a GPU would, instead of crashing the process. */
static bool kernel_may_touch(const void *p, size_t n, int device) {
  LOCK();
  bool ok = (alloc_find(p, n, MEM_DEVICE) || alloc_find(p, n, MEM_HOST));
  if (!ok) {
    device_fault[device >= 0 && device < MAX_DEVICES ? device : 0] =
        T4A__CUDA_ERROR_ILLEGAL_ADDRESS;
    pthread_cond_broadcast(&fake_changed);
  }
  UNLOCK();
  return ok;
}

/* t4a_spin(const volatile uint32_t *flag): returns once *flag != 0. */
static void k_spin(const unsigned char *a, geometry g) {
  (void)g; /* the flag is host memory the test owns */
  const uint32_t *flag;
  memcpy(&flag, a, sizeof flag);
  while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE)) {
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
}

static void k_empty(const unsigned char *a, geometry g) {
  (void)a;
  (void)g;
}

/* t4a_fill_u32(uint32_t *p, uint32_t value, uint64_t n) */
static void k_fill_u32(const unsigned char *a, geometry g) {
  (void)g;
  uint32_t *p, v;
  uint64_t n;
  memcpy(&p, a, 8);
  memcpy(&v, a + 8, 4);
  memcpy(&n, a + 16, 8);
  if (!kernel_may_touch(p, n * 4, g.device))
    return;
  for (uint64_t i = 0; i < n; i++)
    p[i] = v;
}

/* t4a_axpy_f32(uint64_t n, float alpha, const float *x, float *y) */
static void k_axpy(const unsigned char *a, geometry g) {
  (void)g;
  uint64_t n;
  float alpha;
  const float *x;
  float *y;
  memcpy(&n, a, 8);
  memcpy(&alpha, a + 8, 4);
  memcpy(&x, a + 16, 8);
  memcpy(&y, a + 24, 8);
  if (!kernel_may_touch(x, n * 4, g.device) || !kernel_may_touch(y, n * 4, g.device))
    return;
  for (uint64_t i = 0; i < n; i++)
    y[i] = alpha * x[i] + y[i];
}

/* t4a_sum_f32(uint64_t n, const float *x, float *out): *out += sum(x) */
static void k_sum(const unsigned char *a, geometry g) {
  (void)g;
  uint64_t n;
  const float *x;
  float *out;
  memcpy(&n, a, 8);
  memcpy(&x, a + 8, 8);
  memcpy(&out, a + 16, 8);
  if (!kernel_may_touch(x, n * 4, g.device) || !kernel_may_touch(out, 4, g.device))
    return;
  double s = 0;
  for (uint64_t i = 0; i < n; i++)
    s += (double)x[i];
  *out += (float)s;
}

/* t4a_reverse_u32(const uint32_t *x, uint32_t *y, uint32_t per): each block
 * reverses its block * per elements (through dynamic shared memory). */
static void k_reverse(const unsigned char *a, geometry g) {
  const uint32_t *x;
  uint32_t *y, per;
  memcpy(&x, a, 8);
  memcpy(&y, a + 8, 8);
  memcpy(&per, a + 16, 4);
  uint64_t span = (uint64_t)g.block * per;
  if (!kernel_may_touch(x, g.grid * span * 4, g.device) ||
      !kernel_may_touch(y, g.grid * span * 4, g.device))
    return;
  for (uint64_t b = 0; b < g.grid; b++)
    for (uint64_t i = 0; i < span; i++)
      y[b * span + i] = x[b * span + span - 1 - i];
}

/* t4a_fault(): an illegal address: a sticky fault of the device. */
static void k_fault(const unsigned char *a, geometry g) {
  (void)a;
  LOCK();
  device_fault[g.device >= 0 && g.device < MAX_DEVICES ? g.device : 0] =
      T4A__CUDA_ERROR_ILLEGAL_ADDRESS;
  pthread_cond_broadcast(&fake_changed);
  UNLOCK();
}

typedef struct kdesc {
  const char *name;
  kernel_fn fn;
  unsigned nargs;
  unsigned offsets[4], sizes[4];
} kdesc;

static const kdesc kernels[] = {
    {"t4a_spin", k_spin, 1, {0}, {8}},
    {"t4a_empty", k_empty, 0, {0}, {0}},
    {"t4a_fill_u32", k_fill_u32, 3, {0, 8, 16}, {8, 4, 8}},
    {"t4a_axpy_f32", k_axpy, 4, {0, 8, 16, 24}, {8, 4, 8, 8}},
    {"t4a_fault", k_fault, 0, {0}, {0}},
    {"t4a_sum_f32", k_sum, 3, {0, 8, 16}, {8, 8, 8}},
    {"t4a_reverse_u32", k_reverse, 3, {0, 8, 16}, {8, 8, 4}},
};

struct CUfunc_st {
  const kdesc *k;
  t4a__CUmodule module;
  int max_dynamic_shared;
};

struct CUmod_st {
  int device;
  struct CUfunc_st funcs[8];
  unsigned nfuncs;
};

/* Size of a module image: PTX text up to its NUL, an ELF file (CUBIN) from
 * its section header table, a fatbin from its header; 0 if unknown. */
static size_t image_size(const void *image) {
  const unsigned char *b = image;
  if (!b)
    return 0;
  if (memcmp(b,
             "\x7f"
             "ELF",
             4) == 0 &&
      b[4] == 2) { /* ELF64 */
    uint64_t shoff;
    uint16_t shentsize, shnum;
    memcpy(&shoff, b + 0x28, 8);
    memcpy(&shentsize, b + 0x3a, 2);
    memcpy(&shnum, b + 0x3c, 2);
    return (size_t)(shoff + (uint64_t)shentsize * shnum);
  }
  if (b[0] == 0x50 && b[1] == 0xed && b[2] == 0x55 && b[3] == 0xba) { /* fatbin */
    uint16_t header;
    uint64_t body;
    memcpy(&header, b + 6, 2);
    memcpy(&body, b + 8, 8);
    return (size_t)header + (size_t)body;
  }
  const char *t = image;
  if (strncmp(t, "//", 2) == 0 || strncmp(t, ".version", 8) == 0 || t[0] == '\n')
    return strlen(t);
  return 0;
}

EXPORT R fake_sym_cuModuleLoadData(t4a__CUmodule *m, const void *image) __asm__("cuModuleLoadData");
R fake_sym_cuModuleLoadData(t4a__CUmodule *m, const void *image) {
  FAKE_ENTER("cuModuleLoadData");
  R r = need_ctx();
  if (r)
    return r;
  const char *text = image;
  size_t size = image_size(image);
  if (!size)
    return T4A__CUDA_ERROR_INVALID_IMAGE;
  t4a__CUmodule mod = calloc(1, sizeof *mod);
  if (!mod)
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  mod->device = current->device;
  bool ptx = size == strlen(text);
  for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
    size_t n = strlen(kernels[k].name);
    bool found = false;
    for (const char *p = text; !found && p + n <= text + size;) {
      const char *hit = memmem(p, (size_t)(text + size - p), kernels[k].name, n);
      if (!hit)
        break;
      int after = hit + n < text + size ? hit[n] : 0;
      /* PTX: ".entry NAME(" ; binaries: the NUL-terminated symbol name */
      found = ptx ? hit >= text + 7 && strncmp(hit - 7, ".entry ", 7) == 0 &&
                        (after == '(' || after == ' ' || after == '\n')
                  : after == '\0' && (hit == text || hit[-1] == '\0');
      p = hit + n;
    }
    if (found && mod->nfuncs < 8)
      mod->funcs[mod->nfuncs++] = (struct CUfunc_st){&kernels[k], mod, 48 * 1024};
  }
  LOCK();
  live[LIVE_MODULE]++;
  UNLOCK();
  *m = mod;
  return OK;
}

EXPORT R fake_sym_cuModuleUnload(t4a__CUmodule m) __asm__("cuModuleUnload");
R fake_sym_cuModuleUnload(t4a__CUmodule m) {
  FAKE_ENTER("cuModuleUnload");
  if (!m)
    return T4A__CUDA_ERROR_INVALID_HANDLE;
  LOCK();
  live[LIVE_MODULE]--;
  UNLOCK();
  free(m);
  return OK;
}

EXPORT R fake_sym_cuModuleGetFunction(t4a__CUfunction *f, t4a__CUmodule m,
                                      const char *name) __asm__("cuModuleGetFunction");
R fake_sym_cuModuleGetFunction(t4a__CUfunction *f, t4a__CUmodule m, const char *name) {
  FAKE_ENTER("cuModuleGetFunction");
  if (!m || !name)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < m->nfuncs; i++)
    if (strcmp(m->funcs[i].k->name, name) == 0) {
      *f = &m->funcs[i];
      return OK;
    }
  return T4A__CUDA_ERROR_NOT_FOUND;
}

EXPORT R fake_sym_cuFuncGetAttribute(int *v, t4a__CUfunction_attribute a,
                                     t4a__CUfunction f) __asm__("cuFuncGetAttribute");
R fake_sym_cuFuncGetAttribute(int *v, t4a__CUfunction_attribute a, t4a__CUfunction f) {
  FAKE_ENTER("cuFuncGetAttribute");
  if (!v || !f)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  switch (a) {
  case T4A__CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  case T4A__CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 16; break;
  case T4A__CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = 0; break;
  case T4A__CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *v = 0; break;
  case T4A__CU_FUNC_ATTRIBUTE_PTX_VERSION: *v = 90; break;
  case T4A__CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = 90; break;
  case T4A__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = f->max_dynamic_shared; break;
  default: return T4A__CUDA_ERROR_INVALID_VALUE;
  }
  return OK;
}

EXPORT R fake_sym_cuFuncSetAttribute(t4a__CUfunction f, t4a__CUfunction_attribute a,
                                     int v) __asm__("cuFuncSetAttribute");
R fake_sym_cuFuncSetAttribute(t4a__CUfunction f, t4a__CUfunction_attribute a, int v) {
  FAKE_ENTER("cuFuncSetAttribute");
  if (!f || a != T4A__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || v < 0 || v > 232448)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  f->max_dynamic_shared = v;
  return OK;
}

EXPORT R fake_sym_cuLaunchKernel(t4a__CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                 unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                 t4a__CUstream s, void **params,
                                 void **extra) __asm__("cuLaunchKernel");
R fake_sym_cuLaunchKernel(t4a__CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned shared, t4a__CUstream s, void **params,
                          void **extra) {
  FAKE_ENTER("cuLaunchKernel");
  R r = need_ctx();
  if (r)
    return r;
  if (!f || extra || !gx || !gy || !gz || !bx || !by || !bz || (unsigned long)bx * by * bz > 1024 ||
      gy > 65535 || gz > 65535 || (int)shared > f->max_dynamic_shared || (f->k->nargs && !params))
    return T4A__CUDA_ERROR_INVALID_VALUE;
  op o = {.kind = OP_KERNEL, .kernel = f->k->fn, .geom = {gx, bx, shared, s ? s->device : 0}};
  for (unsigned i = 0; i < f->k->nargs; i++)
    memcpy(o.args + f->k->offsets[i], params[i], f->k->sizes[i]);
  return enqueue(s, &o);
}

/* ---- test controls ------------------------------------------------------------------ */

/* Live objects of a kind: "device", "host", "stream", "event", "pool",
 * "module". */
EXPORT uint64_t fake_cuda_live(const char *what);
uint64_t fake_cuda_live(const char *what) {
  static const char *const names[] = {"device", "host", "stream", "event", "pool", "module"};
  uint64_t n = UINT64_MAX;
  LOCK();
  for (int i = 0; i < 6; i++)
    if (strcmp(what, names[i]) == 0)
      n = live[i];
  UNLOCK();
  return n;
}

/* Guard zones found overwritten at free, and accesses refused as out of
 * bounds. */
EXPORT uint64_t fake_cuda_guard_violations(void);
uint64_t fake_cuda_guard_violations(void) {
  LOCK();
  uint64_t n = guard_violations;
  UNLOCK();
  return n;
}

EXPORT uint64_t fake_cuda_oob_attempts(void);
uint64_t fake_cuda_oob_attempts(void) {
  LOCK();
  uint64_t n = oob_attempts;
  UNLOCK();
  return n;
}

/* Device bytes in use on a device. */
EXPORT uint64_t fake_cuda_device_used(int device);
uint64_t fake_cuda_device_used(int device) {
  LOCK();
  uint64_t n = device >= 0 && device < MAX_DEVICES ? device_used[device] : 0;
  UNLOCK();
  return n;
}

/* ---- hooks for fake_interop.c (declared in fake_internal.h) ------------------------ */

int fake_current_device(void) { return current ? current->device : -1; }

bool fake_mem_find(const void *p, int *kind, int *device, const void **start, size_t *bytes) {
  LOCK();
  alloc *a = alloc_find(p, 1, MEM_DEVICE);
  if (!a)
    a = alloc_find(p, 1, MEM_HOST);
  if (a) {
    *kind = a->kind == MEM_DEVICE ? 1 : 2;
    *device = a->device;
    *start = a->base + GUARD;
    *bytes = a->bytes;
  }
  UNLOCK();
  return a != NULL;
}
