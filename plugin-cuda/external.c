/* plugin-cuda/external.c -- memory the runtime did not allocate, wrapped as
 * buffers (buffer_wrap_external; dlpack.c imports tensors through it).
 *
 * An external buffer is an ordinary entry of the runtime's buffer table
 * (every copy, memset and launch takes it), with no size class: it never
 * reaches the pool or the block cache. What lets the consumer have the
 * memory back is data in the buffer (memory.h: ext_release, ext), so that
 * memory.c calls nothing here by name: buffer_free retires it behind the
 * epoch of the work enqueued so far, destroy releases it once the stream
 * drained, and after a fault it is quarantined with the runtime's own
 * memory. Retirement does not call the consumer: it queues the call on the
 * runtime (t4a__rt_defer), which makes it once the runtime's lock is let
 * go, so the callback may call back into the runtime.
 *
 * The driver vouches for the range (cuPointerGetAttributes, one query per
 * allocation the range touches): device memory of the runtime's device, or
 * page-locked host memory the device can address. */
#include "config.h"

#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "common/checked.h"
#include "plugin-cuda/external.h"
#include "backend-core/readonly.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"

typedef struct ext {
  t4a__call call; /* queued on the runtime when released */
  void (*release)(void *user);
  void *user;
  bool host;
  uint64_t host_address;
} ext;

/* The consumer's callback, after the runtime's lock was let go. */
static void ext_call(void *arg) {
  ext *e = arg;
  void (*release)(void *) = e->release;
  void *user = e->user;
  free(e);
  if (release)
    release(user);
}

/* The buffer's last use completed (memory.c and completion.c call this
 * through the buffer and the retirement queue). */
static void ext_retired(t4a__runtime *rt, const t4a__retire *r, bool final) {
  (void) final; /* either way the memory is the consumer's again */
  ext *e = r->ptr;
  e->call.fn = ext_call;
  e->call.arg = e;
  t4a__rt_defer(rt, &e->call);
}

bool t4a__external_host(const t4a__buffer *b, uint64_t *host_address) {
  if (b->ext_release != ext_retired || !((const ext *)b->ext)->host)
    return false;
  *host_address = ((const ext *)b->ext)->host_address;
  return true;
}

/* ---- what the driver knows of an address ------------------------------------------- */

typedef struct pointer_facts {
  unsigned type; /* CU_MEMORYTYPE_*, 0 when the driver does not know the address */
  int ordinal;
  t4a__CUdeviceptr start, device_pointer;
  size_t size;
} pointer_facts;

/* What the driver says of `address` (rt's context is current). One query
 * for every attribute; if the driver refuses one that does not apply to the
 * address (a range of host memory, say), each on its own, those it refuses
 * left unknown. */
static int facts_of(t4a__runtime *rt, const char *what, uint64_t address, pointer_facts *f) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  memset(f, 0, sizeof *f);
  f->ordinal = -1;
  t4a__CUpointer_attribute attrs[] = {
      T4A__CU_POINTER_ATTRIBUTE_MEMORY_TYPE, T4A__CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
      T4A__CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, T4A__CU_POINTER_ATTRIBUTE_RANGE_SIZE,
      T4A__CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
  void *data[] = {&f->type, &f->ordinal, &f->start, &f->size, &f->device_pointer};
  t4a__CUresult r = cu->cuPointerGetAttributes(5, attrs, data, address);
  if (r == T4A__CUDA_ERROR_INVALID_VALUE || r == T4A__CUDA_ERROR_INVALID_CONTEXT) {
    memset(f, 0, sizeof *f);
    f->ordinal = -1;
    r = cu->cuPointerGetAttributes(1, attrs, data, address);
    for (int i = 1; i < 5 && r == T4A__CUDA_SUCCESS && f->type; i++) {
      uint64_t v = 0; /* every attribute here is at most 8 bytes */
      void *into = &v;
      if (cu->cuPointerGetAttributes(1, attrs + i, &into, address) == T4A__CUDA_SUCCESS)
        memcpy(data[i], &v, i == 1 ? sizeof f->ordinal : sizeof v);
    }
    if (r == T4A__CUDA_ERROR_INVALID_VALUE || r == T4A__CUDA_ERROR_INVALID_CONTEXT) {
      /* an address outside unified addressing (host memory CUDA never saw) */
      f->type = 0;
      return T4A_OK;
    }
  }
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r,
                           "%s: asking the driver about address 0x%llx failed; pass memory "
                           "allocated through CUDA",
                           what, (unsigned long long)address);
  return T4A_OK;
}

static const char *type_name(unsigned type) {
  switch (type) {
  case T4A__CU_MEMORYTYPE_HOST: return "page-locked host memory";
  case T4A__CU_MEMORYTYPE_DEVICE: return "device memory";
  case 0: return "memory the driver does not know (freed, or never allocated through CUDA)";
  default: return "managed or array memory";
  }
}

/* Device memory: every allocation [address, address + bytes) touches is
 * on rt's device (contiguous mappings may make up the range). */
static int check_device(t4a__runtime *rt, const char *what, uint64_t address, uint64_t bytes) {
  uint64_t end = address + bytes, at = address; /* no overflow: checked by the caller */
  while (at < end) {
    pointer_facts f;
    int rc = facts_of(rt, what, at, &f);
    if (rc)
      return rc;
    bool ours = f.type == T4A__CU_MEMORYTYPE_DEVICE && f.ordinal == rt->ordinal;
    if (!ours && at != address) /* what the range ran into after its first allocation */
      return t4a__fail(T4A_ERANGE,
                       "%s: [0x%llx, +%llu) runs past its allocation, which ends at 0x%llx; "
                       "wrap at most %llu bytes",
                       what, (unsigned long long)address, (unsigned long long)bytes,
                       (unsigned long long)at, (unsigned long long)(at - address));
    if (f.type != T4A__CU_MEMORYTYPE_DEVICE)
      return t4a__fail(T4A_EINVAL,
                       "%s: 0x%llx is %s, not device memory; wrap live device memory of "
                       "device %d%s",
                       what, (unsigned long long)at, type_name(f.type), (int)rt->ordinal,
                       f.type == T4A__CU_MEMORYTYPE_HOST ? " (host memory: T4A_EXTERNAL_HOST)"
                                                         : "");
    if (f.ordinal != rt->ordinal)
      return t4a__fail(T4A_EFOREIGNDEVICE,
                       "%s: 0x%llx is device %d's memory, the runtime is on device %d; wrap it "
                       "in a runtime of device %d (or copy it with copy_from_peer)",
                       what, (unsigned long long)at, f.ordinal, (int)rt->ordinal, f.ordinal);
    uint64_t next;
    if (!f.size || f.start > at || !t4a__add_u64(f.start, f.size, &next) || next <= at)
      return t4a__fail(T4A_EINVAL,
                       "%s: the driver reports no allocation range around 0x%llx; wrap memory "
                       "allocated through CUDA",
                       what, (unsigned long long)at);
    at = next;
  }
  return T4A_OK;
}

static uint64_t page_size(void) {
  long n = sysconf(_SC_PAGESIZE);
  return n > 0 ? (uint64_t)n : 4096;
}

/* Host memory: page-locked and addressable by the device throughout, one
 * contiguous device range; the device address of the first byte goes to
 * *device_address. Every registration or allocation the range touches is
 * asked in turn (the driver names each one's extent), so a range with an
 * unregistered page in the middle is refused: the first kernel touching
 * that page would fault the device for every runtime on it. Where the
 * driver names no extent, each page is asked. A range that overlaps a
 * read-only registration of this backend (host_register with
 * T4A_HOST_REGISTER_READ_ONLY) is refused too: the device may not write
 * it, and a kernel given the buffer could. */
static int check_host(t4a__runtime *rt, const char *what, uint64_t address, uint64_t bytes,
                      uint64_t *device_address) {
  uint64_t end = address + bytes, at = address, page = page_size();
  uint64_t first_device = 0;
  while (at < end) {
    pointer_facts f;
    int rc = facts_of(rt, what, at, &f);
    if (rc)
      return rc;
    if (f.type != T4A__CU_MEMORYTYPE_HOST || !f.device_pointer) {
      if (at == address)
        return t4a__fail(T4A_EINVAL,
                         "%s: [0x%llx, +%llu) is %s, not page-locked host memory the device "
                         "can address; register it (host_register, cuMemHostRegister) first%s",
                         what, (unsigned long long)address, (unsigned long long)bytes,
                         type_name(f.type),
                         f.type == T4A__CU_MEMORYTYPE_DEVICE ? ", or wrap it without "
                                                               "T4A_EXTERNAL_HOST"
                                                             : "");
      return t4a__fail(T4A_ERANGE,
                       "%s: [0x%llx, +%llu) is not page-locked throughout: 0x%llx (byte %llu) "
                       "is %s; register the whole range, or wrap at most %llu bytes",
                       what, (unsigned long long)address, (unsigned long long)bytes,
                       (unsigned long long)at, (unsigned long long)(at - address),
                       type_name(f.type), (unsigned long long)(at - address));
    }
    if (at == address)
      first_device = f.device_pointer;
    else if (f.device_pointer != first_device + (at - address))
      return t4a__fail(T4A_EINVAL,
                       "%s: [0x%llx, +%llu) is not one range the device addresses "
                       "contiguously; wrap each page-locked allocation on its own",
                       what, (unsigned long long)address, (unsigned long long)bytes);
    uint64_t next;
    if (f.size && f.start <= at && t4a__add_u64(f.start, f.size, &next) && next > at)
      at = next; /* the rest of this allocation is page-locked with it */
    else {       /* no extent named: the next page */
      uint64_t next_page = (at / page + 1) * page;
      at = next_page > at ? next_page : end; /* (the last page of the address space) */
    }
  }
  int rc = t4a__read_only_refuse_wrap(what, address, bytes);
  if (rc)
    return rc;
  *device_address = first_device;
  return T4A_OK;
}

/* ---- wrapping ------------------------------------------------------------------------ */

int t4a__external_wrap(t4a__runtime *rt, const char *what, uint64_t address, uint64_t bytes,
                       bool host, void (*release)(void *user), void *user, t4a_buffer *out) {
  uint64_t device_address = address;
  if (bytes) {
    if (!t4a__be.cu.cuPointerGetAttributes)
      return t4a__fail(T4A_EUNSUPPORTED,
                       "%s: the driver lacks cuPointerGetAttributes, which vouches for the "
                       "memory; update the driver",
                       what);
    t4a__CUcontext saved;
    int rc = t4a__ctx_enter(rt, &saved);
    if (rc)
      return rc;
    rc = host ? check_host(rt, what, address, bytes, &device_address)
              : check_device(rt, what, address, bytes);
    t4a__ctx_leave(rt, saved);
    if (rc)
      return rc;
  }
  ext *e = calloc(1, sizeof *e);
  if (!e)
    return t4a__fail(T4A_ENOMEM, "%s: out of host memory; free some and retry", what);
  e->release = release;
  e->user = user;
  e->host = host;
  e->host_address = address;
  uint32_t i = 0;
  int rc = t4a__htable_take(&rt->mem.bufs, what, &i);
  if (rc) {
    free(e);
    return rc;
  }
  t4a__buffer *b = t4a__htable_at(&rt->mem.bufs, i);
  b->size = bytes;
  b->ptr = device_address;
  b->ext_release = ext_retired;
  b->ext = e;
  rt->c.live_buffers++;
  out->bits = t4a__htable_publish(&rt->mem.bufs, i, &t4a__buffer_kind, rt->slot.index);
  return T4A_OK;
}

#define EXTERNAL_FLAGS_KNOWN T4A_EXTERNAL_HOST

int t4a__slot_buffer_wrap_external(t4a_runtime h, const t4a_external_memory *mem, t4a_buffer *out) {
  int init = t4a__require_init(); /* T4A_ENOTINIT before init, as every runtime slot */
  if (init)
    return init;
  if (!out)
    return t4a__fail(T4A_EINVAL, "buffer_wrap_external: out is NULL; pass a pointer");
  out->bits = 0;
  int rc = t4a__check_struct(mem, T4A_EXTERNAL_MEMORY_V1_1_SIZE, "t4a_external_memory");
  if (rc)
    return rc;
  t4a_external_memory m; /* the fields this plugin knows; a newer caller's rest is ignored */
  memcpy(&m, mem, sizeof m);
  bool host = (m.flags & T4A_EXTERNAL_HOST) != 0;
  uint64_t end;
  if ((m.flags & ~EXTERNAL_FLAGS_KNOWN) || m.reserved)
    return t4a__fail(T4A_EINVAL,
                     "t4a_external_memory: unknown flags 0x%x or reserved 0x%x; use "
                     "T4A_EXTERNAL_HOST or 0, and clear reserved",
                     m.flags & ~EXTERNAL_FLAGS_KNOWN, m.reserved);
  if (host && m.device_ordinal != -1)
    return t4a__fail(T4A_EINVAL,
                     "t4a_external_memory.device_ordinal is %d with T4A_EXTERNAL_HOST; host "
                     "memory belongs to no device: pass -1",
                     (int)m.device_ordinal);
  if (m.bytes && (!m.address || !t4a__add_u64(m.address, m.bytes, &end)))
    return t4a__fail(T4A_EINVAL,
                     "t4a_external_memory: %llu bytes at 0x%llx is no addressable range; pass "
                     "the memory's address and size",
                     (unsigned long long)m.bytes, (unsigned long long)m.address);
  t4a__runtime *rt;
  if ((rc = t4a__rt_lock(h, "buffer_wrap_external", &rt)))
    return rc;
  if (!host && m.device_ordinal != rt->ordinal)
    rc = t4a__fail(T4A_EFOREIGNDEVICE,
                   "buffer_wrap_external: the memory is on device %d, the runtime on device %d; "
                   "wrap it in a runtime of device %d",
                   (int)m.device_ordinal, (int)rt->ordinal, (int)m.device_ordinal);
  else
    rc = t4a__external_wrap(rt, "buffer_wrap_external", m.address, m.bytes, host, m.release, m.user,
                            out);
  t4a__rt_unlock(rt);
  return rc;
}
