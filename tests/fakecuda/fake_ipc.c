/* tests/fakecuda/fake_ipc.c -- CUDA IPC as the fake models it (ABI 1.2's
 * processes): shareable pools and interprocess events between processes,
 * each running its own copy of the fake.
 *
 *  - A pool created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR carves its
 *    blocks (guard zones included) from a region of shared memory (a memfd
 *    of the device's size, sparse). cuMemPoolExportToShareableHandle hands
 *    out a new descriptor of it; cuMemPoolImportFromShareableHandle maps it
 *    in the importing process; cuMemPoolExportPointer / ImportPointer name a
 *    block by its offset. An imported block is the importer's allocation of
 *    the exporter's memory: its kernels and copies touch it, cuMemFreeAsync
 *    unmaps it (the memory stays the exporter's), and it stays valid however
 *    the exporter ends: the kernel keeps a mapped memfd while any process
 *    maps it, as the driver keeps pool memory while any process imports it.
 *    Pointers of other pools are refused (CUDA_ERROR_INVALID_VALUE): legacy
 *    IPC does not work on pool memory, and the fake has no legacy IPC.
 *  - An event created with CU_EVENT_INTERPROCESS (and DISABLE_TIMING, as CUDA
 *    requires) keeps its record and completion counts in a shared page too;
 *    cuIpcGetEventHandle names the page by the exporter's pid and descriptor
 *    (and a nonce), cuIpcOpenEventHandle maps it from /proc/<pid>/fd/<fd> (so
 *    an event is opened only while its exporter lives, as a handle of a
 *    dead process is useless). A stream waiting on an opened event polls the
 *    page (another process completes it); a record that never completes,
 *    its exporter killed before, is never signalled: the wait never ends, the
 *    most a driver promises. Records of an opened event are not modelled
 *    (refused as a misuse). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/fakecuda/fake_internal.h"

#define PAGE_MAGIC 0x46414b45ull /* "FAKE" */
#define PTR_MAGIC 0x46504f4fu    /* "FPOO" */
#define EVENT_MAGIC 0x46455654u  /* "FEVT" */

/* A region of shared memory and the blocks carved from it (first fit over
 * the freed ones, else at its end). */
typedef struct hole {
  size_t off, len;
  struct hole *next;
} hole;

struct fake_region {
  int fd; /* -1 for a mapped (imported) region */
  char *base;
  size_t size, end;
  hole *holes;
  bool shared; /* its pool's handle was exported: only then are its allocations (as CUDA) */
};

struct fake_ipc_page {
  uint64_t magic, nonce;
  _Atomic uint64_t recorded, completed;
  _Atomic int failed;
};

/* What cuMemPoolExportPointer writes (64 bytes). */
typedef struct ptr_data {
  uint32_t magic, pad;
  uint64_t off, bytes;
} ptr_data;

/* What cuIpcGetEventHandle writes (64 bytes). */
typedef struct event_handle {
  uint32_t magic;
  int32_t pid, fd, pad;
  uint64_t nonce;
} event_handle;

_Static_assert(sizeof(ptr_data) <= sizeof(t4a__CUmemPoolPtrExportData), "pointer data fits");
_Static_assert(sizeof(event_handle) <= sizeof(t4a__CUipcEventHandle), "event handle fits");

static uint64_t nonce(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  static uint64_t n;
  return ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40) ^ ++n;
}

/* ---- shareable pools ------------------------------------------------------------------ */

struct fake_region *fake_region_new(void) {
  struct fake_region *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  r->size = fake_device_limit() + (64u << 20); /* room for the guard zones and rounding */
  r->fd = memfd_create("fakecuda-pool", MFD_CLOEXEC);
  if (r->fd < 0 || ftruncate(r->fd, (off_t)r->size) != 0 ||
      (r->base = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0)) == MAP_FAILED) {
    if (r->fd >= 0)
      close(r->fd);
    free(r);
    return NULL;
  }
  return r;
}

R fake_ipc_pool_init(struct CUmemPoolHandle_st *p) {
  return (p->region = fake_region_new()) ? OK : T4A__CUDA_ERROR_OUT_OF_MEMORY;
}

alloc *fake_region_alloc(struct CUmemPoolHandle_st *p, size_t bytes, int device) {
  struct fake_region *r = p->region;
  size_t len = (bytes + 2 * FAKE_GUARD + 4095) & ~(size_t)4095, off = SIZE_MAX;
  for (hole **h = &r->holes; *h && off == SIZE_MAX; h = &(*h)->next)
    if ((*h)->len >= len) {
      off = (*h)->off;
      (*h)->off += len;
      (*h)->len -= len;
      if (!(*h)->len) {
        hole *gone = *h;
        *h = gone->next;
        free(gone);
      }
      break;
    }
  if (off == SIZE_MAX) {
    if (r->size - r->end < len)
      return NULL;
    off = r->end;
    r->end += len;
  }
  alloc *a = fake_alloc_new_at(r->base + off, bytes, device);
  if (!a)
    return NULL;
  a->region = r;
  a->region_off = off;
  a->region_len = len;
  return a;
}

void fake_region_free(alloc *a) {
  hole *h = malloc(sizeof *h);
  if (!h)
    return; /* a little of the region is lost: nothing is freed twice */
  h->off = a->region_off;
  h->len = a->region_len;
  h->next = a->region->holes;
  a->region->holes = h;
}

static R pool_get(t4a__CUmemoryPool p, const char *what) {
  return fake_obj_check(p, OBJ_POOL, what);
}

R fake_sym_cuMemPoolExportToShareableHandle(void *handle, t4a__CUmemoryPool p,
                                            t4a__CUmemAllocationHandleType type,
                                            unsigned long long flags) {
  FAKE_ENTER("cuMemPoolExportToShareableHandle");
  if (!handle || flags || type != T4A__CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  R r = pool_get(p, "cuMemPoolExportToShareableHandle");
  int fd = -1;
  if (!r && (!p->region || p->imported))
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE,
                    "cuMemPoolExportToShareableHandle: the pool was %s",
                    p->imported ? "imported" : "not created shareable (handleTypes)");
  if (!r && p->region && (fd = fcntl(p->region->fd, F_DUPFD_CLOEXEC, 0)) < 0)
    r = T4A__CUDA_ERROR_OUT_OF_MEMORY;
  if (!r && p->region)
    p->region->shared = true;
  UNLOCK();
  if (!r)
    memcpy(handle, &fd, sizeof fd);
  return r;
}

R fake_sym_cuMemPoolImportFromShareableHandle(t4a__CUmemoryPool *out, void *handle,
                                              t4a__CUmemAllocationHandleType type,
                                              unsigned long long flags) {
  FAKE_ENTER("cuMemPoolImportFromShareableHandle");
  R r = fake_need_ctx();
  if (r)
    return r;
  int fd = (int)(intptr_t)handle;
  struct stat st;
  if (!out || flags || type != T4A__CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || fd < 0 ||
      fstat(fd, &st) != 0 || st.st_size <= 0)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  struct fake_region *g = calloc(1, sizeof *g);
  t4a__CUmemoryPool n = calloc(1, sizeof *n);
  char *base = MAP_FAILED;
  if (g && n)
    base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    free(g);
    free(n);
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  }
  g->fd = -1;
  g->base = base;
  g->size = g->end = (size_t)st.st_size;
  LOCK();
  n->device = fake_current()->device;
  n->access = 0; /* the importing process asks for access (cuMemPoolSetAccess), as in CUDA */
  n->region = g;
  n->imported = true;
  fake_obj_register(&n->o, OBJ_POOL, NULL);
  fake_live[LIVE_POOL]++;
  UNLOCK();
  *out = n;
  return OK;
}

R fake_sym_cuMemPoolExportPointer(t4a__CUmemPoolPtrExportData *out, t4a__CUdeviceptr ptr) {
  FAKE_ENTER("cuMemPoolExportPointer");
  if (!out)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  alloc *a = fake_alloc_at((void *)(uintptr_t)ptr, MEM_DEVICE);
  R r = OK;
  if (!a || a->state != A_LIVE || !a->region || a->imported)
    r = T4A__CUDA_ERROR_INVALID_VALUE; /* not a live block of a shareable pool of ours */
  else if (!a->region->shared)         /* driver 580.159.04 on an H200 refuses it so */
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE,
                    "cuMemPoolExportPointer: the allocation's pool was never exported "
                    "(cuMemPoolExportToShareableHandle first)");
  ptr_data d = {PTR_MAGIC, 0, 0, 0};
  if (!r) {
    d.off = a->region_off + FAKE_GUARD;
    d.bytes = a->bytes;
  }
  UNLOCK();
  if (!r) {
    memset(out, 0, sizeof *out);
    memcpy(out, &d, sizeof d);
  }
  return r;
}

R fake_sym_cuMemPoolImportPointer(t4a__CUdeviceptr *out, t4a__CUmemoryPool p,
                                  t4a__CUmemPoolPtrExportData *data) {
  FAKE_ENTER("cuMemPoolImportPointer");
  if (!out || !data)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  ptr_data d;
  memcpy(&d, data, sizeof d);
  LOCK();
  R r = pool_get(p, "cuMemPoolImportPointer");
  if (!r && !p->imported)
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE, "cuMemPoolImportPointer: the pool is not an "
                                                   "imported one");
  if (!r && (d.magic != PTR_MAGIC || d.off < FAKE_GUARD || d.off > p->region->size ||
             d.bytes > p->region->size - d.off))
    r = T4A__CUDA_ERROR_INVALID_VALUE;
  alloc *a = NULL;
  if (!r && !(a = fake_alloc_imported(p->region->base + d.off, (size_t)d.bytes, p->device)))
    r = T4A__CUDA_ERROR_OUT_OF_MEMORY;
  if (!r) {
    a->pool = p;
    a->state = A_LIVE;
    a->pool_next = p->blocks;
    p->blocks = a;
    p->reserved += a->bytes;
  }
  UNLOCK();
  if (!r)
    *out = (t4a__CUdeviceptr)(uintptr_t)(a->base + FAKE_GUARD);
  return r;
}

/* ---- interprocess events --------------------------------------------------------------- */

R fake_ipc_event_init(t4a__CUevent e) {
  int fd = memfd_create("fakecuda-event", MFD_CLOEXEC);
  struct fake_ipc_page *pg = MAP_FAILED;
  if (fd >= 0 && ftruncate(fd, 4096) == 0)
    pg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (pg == MAP_FAILED) {
    if (fd >= 0)
      close(fd);
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  }
  pg->magic = PAGE_MAGIC;
  pg->nonce = nonce();
  e->ipc = pg;
  e->ipc_fd = fd; /* kept open: importers open it through /proc */
  return OK;
}

void fake_ipc_event_recorded(t4a__CUevent e) {
  atomic_store(&e->ipc->recorded, e->recorded);
  atomic_store(&e->ipc->failed, 0);
}

void fake_ipc_event_done(t4a__CUevent e, uint64_t gen, R failed) {
  if (failed)
    atomic_store(&e->ipc->failed, (int)failed);
  else if (atomic_load(&e->ipc->completed) < gen)
    atomic_store(&e->ipc->completed, gen);
}

uint64_t fake_ipc_event_recorded_now(t4a__CUevent e) { return atomic_load(&e->ipc->recorded); }

void fake_ipc_event_wait(t4a__CUevent e, uint64_t gen) {
  struct fake_ipc_page *pg = e->ipc;
  while (atomic_load(&pg->completed) < gen && !atomic_load(&pg->failed)) {
    UNLOCK();
    struct timespec ts = {0, 50000}; /* another process completes it: poll */
    nanosleep(&ts, NULL);
    LOCK();
  }
}

R fake_sym_cuIpcGetEventHandle(t4a__CUipcEventHandle *h, t4a__CUevent e) {
  FAKE_ENTER("cuIpcGetEventHandle");
  if (!h)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  R r = fake_obj_check(e, OBJ_EVENT, "cuIpcGetEventHandle");
  if (!r && (!e->ipc || e->imported))
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE, "cuIpcGetEventHandle: the event was %s",
                    e->imported ? "opened from a handle" : "created without CU_EVENT_INTERPROCESS");
  event_handle d = {EVENT_MAGIC, (int32_t)getpid(), e && !r ? e->ipc_fd : -1, 0,
                    e && !r && e->ipc ? e->ipc->nonce : 0};
  UNLOCK();
  if (!r) {
    memset(h, 0, sizeof *h);
    memcpy(h, &d, sizeof d);
  }
  return r;
}

R fake_sym_cuIpcOpenEventHandle(t4a__CUevent *out, t4a__CUipcEventHandle h) {
  FAKE_ENTER("cuIpcOpenEventHandle");
  R r = fake_need_ctx();
  if (r)
    return r;
  event_handle d;
  memcpy(&d, &h, sizeof d);
  if (!out || d.magic != EVENT_MAGIC)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)d.pid, (int)d.fd);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) /* its process (or its event) is gone */
    return T4A__CUDA_ERROR_INVALID_VALUE;
  struct fake_ipc_page *pg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (pg == MAP_FAILED)
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  if (pg->magic != PAGE_MAGIC || pg->nonce != d.nonce) {
    munmap(pg, 4096);
    return T4A__CUDA_ERROR_INVALID_VALUE;
  }
  t4a__CUevent n = calloc(1, sizeof *n);
  if (!n) {
    munmap(pg, 4096);
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  }
  LOCK();
  fake_obj_register(&n->o, OBJ_EVENT, fake_current());
  n->flags = T4A__CU_EVENT_INTERPROCESS | T4A__CU_EVENT_DISABLE_TIMING;
  n->ipc = pg; /* mapped for good: waits queued on it still read it */
  n->ipc_fd = -1;
  n->imported = true;
  fake_live[LIVE_EVENT]++;
  UNLOCK();
  *out = n;
  return OK;
}
