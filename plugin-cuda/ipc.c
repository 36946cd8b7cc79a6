/* plugin-cuda/ipc.c -- buffers and witnesses shared between processes (ABI
 * 1.2; see ipc.h and the header's "processes" slots).
 *
 * A buffer travels as its pool's shareable handle (a POSIX file descriptor,
 * sent once per exporting runtime) and cuMemPoolExportPointer's bytes; the
 * importer imports the pool once, grants its device access, and imports the
 * pointer as a buffer of its own. A witness travels as an interprocess
 * event's handle; the importer opens it once (kept, keyed by the exporter's
 * identity and the handle) and waits on it GPU-side.
 *
 * What an export carries (t4a_ipc_buffer / t4a_ipc_witness, 128 bytes):
 * a magic and version, the exporting runtime's random identity, its pid
 * (for messages), the device's UUID (an import on another device is
 * refused before the driver sees it), and the driver's bytes. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/checked.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"
#include "plugin-cuda/witness.h"

#define BUFFER_MAGIC 0x42413454u  /* "T4AB" */
#define WITNESS_MAGIC 0x57413454u /* "T4AW" */
#define TOKEN_VERSION 1u
#define COMPLETE 0x1u /* a witness whose work had completed: nothing to wait for */

typedef struct buffer_token {
  uint32_t magic;
  uint16_t version, flags;
  uint8_t id[T4A__IPC_ID];
  uint32_t pid;
  uint8_t uuid[16];
  uint64_t size;
  t4a__CUmemPoolPtrExportData data;
} buffer_token;

typedef struct witness_token {
  uint32_t magic;
  uint16_t version, flags;
  uint8_t id[T4A__IPC_ID];
  uint32_t pid;
  uint8_t uuid[16];
  uint64_t seq;
  t4a__CUipcEventHandle handle;
} witness_token;

_Static_assert(sizeof(buffer_token) <= T4A_IPC_BUFFER_BYTES, "a buffer's export fits");
_Static_assert(sizeof(witness_token) <= T4A_IPC_WITNESS_BYTES, "a witness's export fits");

static const uint8_t *device_uuid(int32_t ordinal) {
  return (const uint8_t *)t4a__be.devices[ordinal].info.uuid;
}

static bool have_entry_points(void) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  return cu->cuMemPoolExportToShareableHandle && cu->cuMemPoolImportFromShareableHandle &&
         cu->cuMemPoolExportPointer && cu->cuMemPoolImportPointer && cu->cuIpcGetEventHandle &&
         cu->cuIpcOpenEventHandle && cu->cuMemPoolSetAccess;
}

/* ---- the runtime's state ------------------------------------------------------------ */

int t4a__ipc_init(t4a__runtime *rt) {
  t4a__ipc *x = &rt->ipc;
  memset(x, 0, sizeof *x);
  if (!(rt->opts.flags & T4A_RUNTIME_IPC))
    return T4A_OK;
  if (!have_entry_points())
    return t4a__fail(T4A_EUNSUPPORTED,
                     "runtime_create: T4A_RUNTIME_IPC needs the driver's shareable pools and "
                     "interprocess events (cuMemPoolExportToShareableHandle, "
                     "cuIpcGetEventHandle ...), which this driver lacks; update it");
  int types = 0;
  t4a__CUresult r = t4a__be.cu.cuDeviceGetAttribute(
      &types, T4A__CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, rt->dev);
  if (r != T4A__CUDA_SUCCESS || !(types & T4A__CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return t4a__fail(T4A_EUNSUPPORTED,
                     "runtime_create: device %d cannot share its pools through file descriptors "
                     "(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES); create the runtime "
                     "without T4A_RUNTIME_IPC",
                     (int)rt->ordinal);
  if (getrandom(x->id, sizeof x->id, 0) != (ssize_t)sizeof x->id)
    return t4a__fail(T4A_EINTERNAL, "runtime_create: getrandom failed; retry");
  x->pid = (uint32_t)getpid(); /* a child of fork() refuses the runtime: it stays true */
  x->on = true;
  return T4A_OK;
}

void t4a__ipc_fini(t4a__runtime *rt, bool idle) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  t4a__ipc *x = &rt->ipc;
  if (!idle) { /* the device may still touch them: kept, as the rest */
    if (x->aux)
      t4a__keep(x->aux);
    return;
  }
  if (x->aux) { /* its waits and records follow seals that completed */
    t4a__released(rt, cu->cuStreamSynchronize(x->aux), NULL, "cuStreamSynchronize");
    t4a__released(rt, cu->cuStreamDestroy(x->aux), x->aux, "cuStreamDestroy");
  }
  for (uint32_t i = 0; i < x->event_count; i++)
    t4a__released(rt, cu->cuEventDestroy(x->events[i].ev), x->events[i].ev, "cuEventDestroy");
  for (uint32_t i = 0; i < x->opened_count; i++)
    t4a__released(rt, cu->cuEventDestroy(x->opened[i].ev), x->opened[i].ev, "cuEventDestroy");
  for (uint32_t i = 0; i < x->pool_count; i++) /* memory_fini unmapped the imports */
    t4a__released(rt, cu->cuMemPoolDestroy(x->pools[i].pool), x->pools[i].pool, "cuMemPoolDestroy");
  free(x->events);
  free(x->pools);
  memset(x, 0, sizeof *x);
}

/* Room for one more exported event / imported pool; false when memory is
 * short. */
static bool event_room(t4a__ipc *x) {
  uint64_t n;
  size_t bytes;
  t4a__ipc_event *p;
  if (x->event_count < x->event_cap)
    return true;
  if (!t4a__grow(x->event_cap, 4, UINT32_MAX, sizeof *p, &n, &bytes) ||
      !(p = realloc(x->events, bytes)))
    return false;
  x->events = p;
  x->event_cap = (uint32_t)n;
  return true;
}

static bool pool_room(t4a__ipc *x) {
  uint64_t n;
  size_t bytes;
  t4a__ipc_pool *p;
  if (x->pool_count < x->pool_cap)
    return true;
  if (!t4a__grow(x->pool_cap, 4, UINT32_MAX, sizeof *p, &n, &bytes) ||
      !(p = realloc(x->pools, bytes)))
    return false;
  x->pools = p;
  x->pool_cap = (uint32_t)n;
  return true;
}

/* ---- buffers -------------------------------------------------------------------------- */

int t4a__slot_buffer_export_ipc(t4a_runtime h, t4a_buffer buf, t4a_ipc_buffer *out, int *pool_fd) {
  if (pool_fd)
    *pool_fd = -1;
  if (!out)
    return t4a__fail(T4A_EINVAL, "buffer_export_ipc: out is NULL; pass a pointer");
  memset(out, 0, sizeof *out);
  t4a__runtime *rt;
  t4a__buffer *b;
  int rc = t4a__rt_lock(h, "buffer_export_ipc", &rt);
  if (rc)
    return rc;
  if ((rc = t4a__buffer_get(rt, buf, "buffer_export_ipc", &b)))
    goto out; /* the handle first: a bad one is T4A_EHANDLE on every runtime */
  if (!rt->ipc.on) {
    rc = t4a__fail(T4A_EUNSUPPORTED, "buffer_export_ipc: the runtime was created without "
                                     "T4A_RUNTIME_IPC; create the exporting runtime with it");
    goto out;
  }
  if (!b->cap || b->ext_release || b->imported || b->unproven) {
    rc = t4a__fail(T4A_EINVAL,
                   "buffer_export_ipc: the buffer is %s, not memory of this runtime's pool; "
                   "export a buffer buffer_alloc made (of at least one byte)",
                   !b->cap && !b->imported && !b->ext_release ? "empty"
                   : b->imported                              ? "an import"
                                                              : "memory the runtime wrapped");
    goto out;
  }
  const t4a__cuda_api *cu = &t4a__be.cu;
  buffer_token t;
  memset(&t, 0, sizeof t);
  t4a__CUcontext saved;
  if ((rc = t4a__ctx_enter(rt, &saved)))
    goto out;
  /* The pool first: the driver exports an allocation only of a pool it has
   * already shared (on driver 580.159.04, an H200: cuMemPoolExportPointer
   * is CUDA_ERROR_INVALID_VALUE until the pool's handle was exported once).
   * Its descriptor is the caller's when asked for, else closed at once. */
  int fd = -1;
  t4a__CUresult r = T4A__CUDA_SUCCESS;
  if (pool_fd || !rt->ipc.pool_shared) {
    r = cu->cuMemPoolExportToShareableHandle(&fd, rt->mem.pool,
                                             T4A__CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (r == T4A__CUDA_SUCCESS)
      rt->ipc.pool_shared = true;
  }
  if (r == T4A__CUDA_SUCCESS)
    r = cu->cuMemPoolExportPointer(&t.data, b->ptr);
  t4a__ctx_leave(rt, saved);
  if (r != T4A__CUDA_SUCCESS) {
    if (fd >= 0)
      close(fd);
    rc = t4a__rt_cu_fail(rt, r, "buffer_export_ipc: exporting the buffer or its pool failed");
    goto out;
  }
  if (pool_fd) {
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC); /* a file descriptor leaks into no exec'd child */
    *pool_fd = fd;
  } else if (fd >= 0) {
    close(fd);
  }
  b->exported = true; /* its free goes to the pool, never the cache */
  t.magic = BUFFER_MAGIC;
  t.version = TOKEN_VERSION;
  memcpy(t.id, rt->ipc.id, sizeof t.id);
  t.pid = rt->ipc.pid;
  memcpy(t.uuid, device_uuid(rt->ordinal), sizeof t.uuid);
  t.size = b->size;
  memcpy(out->bytes, &t, sizeof t);
  if (rt->mem.log)
    t4a__memory_note(rt, T4A_ALLOC_EVENT_IPC_EXPORT, 0, buf.bits, b->ptr, b->size);
out:
  t4a__rt_unlock(rt);
  return rc;
}

/* rt's import of the pool named id (importing it from pool_fd when new). */
static int pool_of(t4a__runtime *rt, const uint8_t *id, int pool_fd, t4a__CUmemoryPool *out) {
  t4a__ipc *x = &rt->ipc;
  for (uint32_t i = 0; i < x->pool_count; i++)
    if (memcmp(x->pools[i].id, id, T4A__IPC_ID) == 0) {
      *out = x->pools[i].pool;
      return T4A_OK;
    }
  if (pool_fd < 0)
    return t4a__fail(T4A_EINVAL,
                     "buffer_import_ipc: the runtime has imported nothing of this buffer's pool "
                     "yet; pass the pool's file descriptor (buffer_export_ipc's pool_fd)");
  if (!pool_room(x))
    return t4a__fail(T4A_ENOMEM, "buffer_import_ipc: out of host memory; free memory");
  const t4a__cuda_api *cu = &t4a__be.cu;
  t4a__CUmemoryPool pool = NULL;
  t4a__CUresult r = cu->cuMemPoolImportFromShareableHandle(
      &pool, (void *)(uintptr_t)pool_fd, T4A__CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r,
                           "buffer_import_ipc: importing the pool from file descriptor %d "
                           "failed; pass the descriptor the exporter's buffer_export_ipc gave",
                           pool_fd);
  /* the importing process has no access to an imported pool until it asks */
  t4a__CUmemAccessDesc desc = {{T4A__CU_MEM_LOCATION_TYPE_DEVICE, rt->ordinal},
                               T4A__CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  if ((r = cu->cuMemPoolSetAccess(pool, &desc, 1)) != T4A__CUDA_SUCCESS) {
    t4a__release_or_keep(cu->cuMemPoolDestroy(pool), pool);
    return t4a__rt_cu_fail(rt, r,
                           "buffer_import_ipc: granting device %d access to the imported "
                           "pool failed; check the driver",
                           (int)rt->ordinal);
  }
  memcpy(x->pools[x->pool_count].id, id, T4A__IPC_ID);
  x->pools[x->pool_count++].pool = pool;
  *out = pool;
  return T4A_OK;
}

int t4a__slot_buffer_import_ipc(t4a_runtime h, const t4a_ipc_buffer *in, int pool_fd,
                                t4a_buffer *out) {
  int rc = t4a__require_init(); /* before the bytes: T4A_ENOTINIT first, as every slot */
  if (rc)
    return rc;
  if (!in || !out)
    return t4a__fail(T4A_EINVAL, "buffer_import_ipc: %s is NULL; pass a pointer",
                     in ? "out" : "in");
  out->bits = 0;
  buffer_token t;
  memcpy(&t, in->bytes, sizeof t);
  if (t.magic != BUFFER_MAGIC || t.version != TOKEN_VERSION)
    return t4a__fail(T4A_EINVAL, "buffer_import_ipc: these bytes are no buffer_export_ipc of this "
                                 "version; pass what the exporter's buffer_export_ipc filled");
  t4a__runtime *rt;
  if ((rc = t4a__rt_lock(h, "buffer_import_ipc", &rt)))
    return rc;
  if (memcmp(t.uuid, device_uuid(rt->ordinal), sizeof t.uuid) != 0) {
    rc = t4a__fail(T4A_EFOREIGNDEVICE,
                   "buffer_import_ipc: the buffer is memory of another device than this "
                   "runtime's (%d); import it into a runtime on the exporter's device",
                   (int)rt->ordinal);
    goto out;
  }
  t4a__CUcontext saved;
  if ((rc = t4a__ctx_enter(rt, &saved)))
    goto out;
  t4a__CUmemoryPool pool = NULL;
  t4a__CUdeviceptr ptr = 0;
  if ((rc = pool_of(rt, t.id, pool_fd, &pool)) == T4A_OK) {
    t4a__CUresult r = t4a__be.cu.cuMemPoolImportPointer(&ptr, pool, &t.data);
    if (r != T4A__CUDA_SUCCESS)
      rc = t4a__rt_cu_fail(rt, r,
                           "buffer_import_ipc: importing the buffer failed (freed by its "
                           "exporter, or of another pool); import a buffer its exporter holds");
  }
  uint32_t i = 0;
  if (rc == T4A_OK && (rc = t4a__htable_take(&rt->mem.bufs, "buffer_import_ipc", &i)))
    t4a__release_or_keep(t4a__be.cu.cuMemFreeAsync(ptr, rt->stream), (void *)(uintptr_t)ptr);
  t4a__ctx_leave(rt, saved);
  if (rc)
    goto out;
  t4a__buffer *b = t4a__htable_at(&rt->mem.bufs, i);
  b->size = t.size;
  b->ptr = ptr;
  b->imported = true;
  rt->c.live_buffers++;
  out->bits = t4a__htable_publish(&rt->mem.bufs, i, &t4a__buffer_kind, rt->slot.index);
  if (rt->mem.log)
    t4a__memory_note(rt, T4A_ALLOC_EVENT_IPC_IMPORT, 0, out->bits, ptr, t.size);
out:
  t4a__rt_unlock(rt);
  return rc;
}

/* ---- witnesses ------------------------------------------------------------------------- */

/* The interprocess event standing for witness w (bits) of rt, recorded
 * behind seal event `seal` when new: reused when w was exported before, else
 * a free one (an event whose witness was released since is free again), else
 * a new one. rt's context is current. */
static int event_for(t4a__runtime *rt, uint64_t w, t4a__event *seal, t4a__ipc_event **out) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  t4a__ipc *x = &rt->ipc;
  t4a__ipc_event *e = NULL;
  for (uint32_t i = 0; i < x->event_count; i++) {
    if (x->events[i].witness == w) {
      *out = &x->events[i];
      return T4A_OK;
    }
    if (x->events[i].witness && !t4a__witness_live((t4a_witness){x->events[i].witness}))
      x->events[i].witness = 0; /* its witness was released: no importer may wait on it now */
    if (!x->events[i].witness && !e)
      e = &x->events[i];
  }
  t4a__CUresult r = T4A__CUDA_SUCCESS;
  if (!x->aux && (r = cu->cuStreamCreate(&x->aux, T4A__CU_STREAM_NON_BLOCKING)) != 0)
    return t4a__rt_cu_fail(rt, r, "witness_export_ipc: creating a stream failed");
  if (!e) {
    if (!event_room(x))
      return t4a__fail(T4A_ENOMEM, "witness_export_ipc: out of host memory; free memory");
    e = &x->events[x->event_count];
    memset(e, 0, sizeof *e);
    if ((r = cu->cuEventCreate(&e->ev, T4A__CU_EVENT_INTERPROCESS | T4A__CU_EVENT_DISABLE_TIMING)))
      return t4a__rt_cu_fail(rt, r, "witness_export_ipc: creating an interprocess event failed");
    if ((r = cu->cuIpcGetEventHandle(&e->handle, e->ev))) {
      t4a__release_or_keep(cu->cuEventDestroy(e->ev), e->ev);
      return t4a__rt_cu_fail(rt, r, "witness_export_ipc: cuIpcGetEventHandle failed");
    }
    x->event_count++;
    rt->c.events_created++;
  }
  /* exactly the witness's point: a wait for its seal's event, then ours */
  if ((r = cu->cuStreamWaitEvent(x->aux, seal->ev, 0)) || (r = cu->cuEventRecord(e->ev, x->aux)))
    return t4a__rt_cu_fail(rt, r, "witness_export_ipc: recording the interprocess event failed");
  e->witness = w;
  *out = e;
  return T4A_OK;
}

int t4a__slot_witness_export_ipc(t4a_witness w, t4a_ipc_witness *out) {
  int rc = t4a__require_init();
  if (rc)
    return rc;
  if (!out)
    return t4a__fail(T4A_EINVAL, "witness_export_ipc: out is NULL; pass a pointer");
  memset(out, 0, sizeof *out);
  witness_token t;
  memset(&t, 0, sizeof t);
  t.magic = WITNESS_MAGIC;
  t.version = TOKEN_VERSION;
  t.pid = (uint32_t)getpid();
  uint64_t seq = 0;
  int32_t ordinal = 0;
  t4a__runtime *rt;
  if ((rc = t4a__witness_locate(w, "witness_export_ipc", &seq, &ordinal, &rt)) || !rt) {
    if (rc == T4A_OK) { /* its runtime is gone, its work complete: nothing to wait for */
      t.flags = COMPLETE;
      memcpy(t.uuid, device_uuid(ordinal), sizeof t.uuid);
      memcpy(out->bytes, &t, sizeof t);
    } else if (rc == T4A_EDEVICEFAULT) {
      rc = t4a__fail(T4A_EDEVICEFAULT, "witness_export_ipc: the witness's work failed (a device "
                                       "fault); there is nothing to wait for");
    }
    return rc;
  }
  t.seq = seq;
  memcpy(t.id, rt->ipc.id, sizeof t.id);
  memcpy(t.uuid, device_uuid(rt->ordinal), sizeof t.uuid);
  if (!rt->ipc.on) {
    rc = t4a__fail(T4A_EUNSUPPORTED, "witness_export_ipc: the witness's runtime was created "
                                     "without T4A_RUNTIME_IPC; seal on a runtime created with it");
    goto out;
  }
  t4a__event *seal = NULL;
  if ((rc = t4a__epoch_state(rt, seq)) == T4A_ENOTREADY && !(seal = t4a__epoch_event(rt, seq)))
    rc = T4A_OK; /* no event pending for it: nothing ran that it waits for */
  if (rc == T4A_OK) {
    t.flags = COMPLETE;
  } else if (rc == T4A_ENOTREADY) {
    t4a__CUcontext saved;
    t4a__ipc_event *e = NULL;
    if ((rc = t4a__ctx_enter(rt, &saved)))
      goto out;
    rc = event_for(rt, w.bits, seal, &e);
    t4a__ctx_leave(rt, saved);
    if (rc)
      goto out;
    t.handle = e->handle;
  }
  if (rc == T4A_OK)
    memcpy(out->bytes, &t, sizeof t);
out:
  t4a__rt_unlock(rt);
  return rc;
}

/* rt's opened event for the exported one (opening it when new; the
 * oldest goes when the table is full). rt's context is current. */
static int opened_event(t4a__runtime *rt, const witness_token *t, t4a__CUevent *out) {
  t4a__ipc *x = &rt->ipc;
  t4a__ipc_opened *o = NULL;
  for (uint32_t i = 0; i < x->opened_count && !o; i++)
    if (memcmp(x->opened[i].id, t->id, sizeof t->id) == 0 &&
        memcmp(&x->opened[i].handle, &t->handle, sizeof t->handle) == 0)
      o = &x->opened[i];
  if (!o) {
    const t4a__cuda_api *cu = &t4a__be.cu;
    t4a__CUevent ev = NULL;
    t4a__CUresult r = cu->cuIpcOpenEventHandle(&ev, t->handle);
    if (r != T4A__CUDA_SUCCESS)
      return t4a__rt_cu_fail(rt, r,
                             "runtime_wait_ipc_witness: opening the exporter's event failed (its "
                             "process or runtime may be gone); wait for a witness its exporter "
                             "holds");
    if (x->opened_count < T4A__IPC_OPENED) {
      o = &x->opened[x->opened_count++];
    } else { /* a wait enqueued on it keeps what it needs: it may go */
      o = &x->opened[0];
      for (uint32_t i = 1; i < x->opened_count; i++)
        if (x->opened[i].used < o->used)
          o = &x->opened[i];
      t4a__release_or_keep(cu->cuEventDestroy(o->ev), o->ev);
    }
    memcpy(o->id, t->id, sizeof o->id);
    o->handle = t->handle;
    o->ev = ev;
  }
  o->used = ++x->clock;
  *out = o->ev;
  return T4A_OK;
}

int t4a__slot_runtime_wait_ipc_witness(t4a_runtime h, const t4a_ipc_witness *w) {
  int rc = t4a__require_init(); /* before the bytes: T4A_ENOTINIT first, as every slot */
  if (rc)
    return rc;
  if (!w)
    return t4a__fail(T4A_EINVAL, "runtime_wait_ipc_witness: w is NULL; pass a pointer");
  witness_token t;
  memcpy(&t, w->bytes, sizeof t);
  if (t.magic != WITNESS_MAGIC || t.version != TOKEN_VERSION)
    return t4a__fail(T4A_EINVAL, "runtime_wait_ipc_witness: these bytes are no "
                                 "witness_export_ipc of this version; pass what the exporter's "
                                 "witness_export_ipc filled");
  t4a__runtime *rt;
  if ((rc = t4a__rt_lock(h, "runtime_wait_ipc_witness", &rt)))
    return rc;
  if ((rc = t4a__capture_refuse(&rt->cap, "runtime_wait_ipc_witness",
                                "waits for work outside the capture")))
    goto out;
  if (memcmp(t.uuid, device_uuid(rt->ordinal), sizeof t.uuid) != 0) {
    rc = t4a__fail(T4A_EFOREIGNDEVICE,
                   "runtime_wait_ipc_witness: the witness is of another device than this "
                   "runtime's (%d); wait on a runtime of the exporter's device",
                   (int)rt->ordinal);
    goto out;
  }
  if (t.flags & COMPLETE)
    goto out; /* nothing to wait for */
  t4a__CUcontext saved;
  if ((rc = t4a__ctx_enter(rt, &saved)))
    goto out;
  t4a__CUevent ev = NULL;
  if ((rc = opened_event(rt, &t, &ev)) == T4A_OK) {
    t4a__CUresult r = t4a__be.cu.cuStreamWaitEvent(rt->stream, ev, 0);
    if (r != T4A__CUDA_SUCCESS)
      rc = t4a__rt_cu_fail(rt, r, "runtime_wait_ipc_witness: cuStreamWaitEvent failed");
  }
  t4a__ctx_leave(rt, saved);
out:
  t4a__rt_unlock(rt);
  return rc;
}
