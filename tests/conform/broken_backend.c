/* tests/conform/broken_backend.c -- a deliberately broken backend, to show
 * that `t4a-gpu conform` catches contract violations. It wraps a working
 * backend (the file T4A_BROKEN_INNER names, the CUDA plugin in the tests)
 * and passes every call through, except for the promises T4A_BROKEN
 * (comma-separated) says to break:
 *
 *   range_status  copy_h2d answers an out-of-range copy with T4A_EINVAL,
 *                 not T4A_ERANGE                      -> transfer.range_errors
 *   query_lies    witness_query says T4A_OK for work not yet complete
 *                                                     -> completion.gated_witness
 *   double_free   buffer_free of a stale handle returns T4A_OK
 *                                                     -> memory.buffer_alloc, errors.handles
 *   d2h_offset    copy_d2h reads from the offset rounded down to 8 bytes
 *                                                     -> transfer.pageable_round_trip
 *   info_overrun  get_info, given a struct bigger than it knows, writes 16
 *                 bytes past what it reports filled  -> errors.struct_sizes
 *   no_detail     last_error's message is empty        -> every check of a failure status
 *   null_slots    leaves copy_from_peer, copy_from_peer_via_host, raw_begin and raw_end NULL
 *                 (unsupported, not broken: their checks are skipped and listed)
 *
 * Test-only; tests/cpu/test_conform.sh runs it. */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "t4a/gpu_backend_v1.h"

static const t4a_gpu_backend_v1 *inner;
static t4a_gpu_backend_v1 table;
static void *dl;
static int entry_status = T4A_ENOBACKEND;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static bool broken(const char *what) {
  const char *v = getenv("T4A_BROKEN");
  size_t n = strlen(what);
  for (const char *p = v; p && *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && strncmp(p, what, n) == 0)
      return true;
    p += len + (p[len] == ',');
  }
  return false;
}

static int copy_h2d(t4a_runtime rt, t4a_buffer dst, uint64_t off, const void *src, uint64_t n) {
  int rc = inner->copy_h2d(rt, dst, off, src, n);
  return rc == T4A_ERANGE ? T4A_EINVAL : rc;
}

static int witness_query(t4a_witness w) {
  int rc = inner->witness_query(w);
  return rc == T4A_ENOTREADY ? T4A_OK : rc;
}

static int buffer_free(t4a_runtime rt, t4a_buffer b) {
  int rc = inner->buffer_free(rt, b);
  return rc == T4A_EHANDLE ? T4A_OK : rc;
}

static int copy_d2h(t4a_runtime rt, void *dst, t4a_buffer src, uint64_t off, uint64_t n) {
  return inner->copy_d2h(rt, dst, src, off & ~7ull, n);
}

static int get_info(t4a_backend_info *info) {
  uint32_t given = info ? info->struct_size : 0;
  int rc = inner->get_info(info);
  /* a caller's struct with room for 16 more bytes than this one knows: a
   * "newer" field written there, not counted in struct_size */
  if (rc == T4A_OK && given >= sizeof *info + 16)
    memset((char *)info + sizeof *info, 0, 16);
  return rc;
}

static int last_error(t4a_error_info *info) {
  int rc = inner->last_error(info);
  if (rc == T4A_OK)
    info->message = "";
  return rc;
}

static void load(void) {
  const char *file = getenv("T4A_BROKEN_INNER");
  t4a_gpu_backend_v1_entry_fn entry = NULL;
  if (!file || !(dl = dlopen(file, RTLD_NOW | RTLD_LOCAL)))
    return;
  *(void **)&entry = dlsym(dl, T4A_GPU_BACKEND_V1_ENTRY_NAME);
  if (!entry || entry(T4A_GPU_BACKEND_ABI_MAJOR, T4A_GPU_BACKEND_ABI_MINOR, &inner) != T4A_OK ||
      !inner)
    return;
  memset(&table, 0, sizeof table);
  memcpy(&table, inner, inner->struct_size < sizeof table ? inner->struct_size : sizeof table);
  table.struct_size = inner->struct_size < sizeof table ? inner->struct_size : sizeof table;
  if (broken("range_status"))
    table.copy_h2d = copy_h2d;
  if (broken("query_lies"))
    table.witness_query = witness_query;
  if (broken("double_free"))
    table.buffer_free = buffer_free;
  if (broken("d2h_offset"))
    table.copy_d2h = copy_d2h;
  if (broken("info_overrun"))
    table.get_info = get_info;
  if (broken("no_detail"))
    table.last_error = last_error;
  if (broken("null_slots")) {
    table.copy_from_peer = NULL;
    table.copy_from_peer_via_host = NULL;
    table.raw_begin = NULL;
    table.raw_end = NULL;
  }
  entry_status = T4A_OK;
}

__attribute__((visibility("default"))) int t4a_gpu_backend_v1_entry(uint16_t major, uint16_t minor,
                                                                    const t4a_gpu_backend_v1 **out);

int t4a_gpu_backend_v1_entry(uint16_t major, uint16_t minor, const t4a_gpu_backend_v1 **out) {
  (void)minor;
  if (major != T4A_GPU_BACKEND_ABI_MAJOR)
    return T4A_EABI;
  pthread_once(&once, load);
  *out = entry_status == T4A_OK ? &table : NULL;
  return entry_status;
}

__attribute__((destructor)) static void unload(void) {
  if (dl)
    dlclose(dl);
}
