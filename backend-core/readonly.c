/* backend-core/readonly.c -- the host ranges this backend registered
 * read-only, across all its runtimes (see readonly.h). Registrations are
 * rare and few, so a locked array scanned in full is enough; its own lock
 * is taken under a runtime's lock and takes none itself. */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>

#include "common/checked.h"
#include "common/error.h"
#include "t4a/gpu_backend_v1.h"
#include "backend-core/readonly.h"

typedef struct span {
  uint64_t start, bytes;
} span;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static span *spans; /* lock */
static uint32_t count, cap;

int t4a__read_only_add(uint64_t start, uint64_t bytes) {
  int rc = T4A_OK;
  pthread_mutex_lock(&lock);
  if (count == cap) {
    uint64_t want;
    size_t size;
    span *grown =
        t4a__grow(cap, 8, UINT32_MAX, sizeof *spans, &want, &size) ? realloc(spans, size) : NULL;
    if (!grown)
      rc = t4a__fail(T4A_ENOMEM, "host_register: out of host memory listing a read-only "
                                 "range; free some and retry");
    else {
      spans = grown;
      cap = (uint32_t)want;
    }
  }
  if (!rc)
    spans[count++] = (span){start, bytes};
  pthread_mutex_unlock(&lock);
  return rc;
}

void t4a__read_only_remove(uint64_t start) {
  pthread_mutex_lock(&lock);
  for (uint32_t i = 0; i < count; i++)
    if (spans[i].start == start) {
      spans[i] = spans[--count];
      break;
    }
  pthread_mutex_unlock(&lock);
}

bool t4a__read_only_find(uint64_t start, uint64_t bytes, uint64_t *found_start,
                         uint64_t *found_bytes) {
  bool found = false;
  pthread_mutex_lock(&lock);
  for (uint32_t i = 0; i < count && !found; i++)
    if (t4a__spans_overlap(start, bytes, spans[i].start, spans[i].bytes)) {
      *found_start = spans[i].start;
      *found_bytes = spans[i].bytes;
      found = true;
    }
  pthread_mutex_unlock(&lock);
  return found;
}

int t4a__read_only_refuse_write(bool read_only, const char *what) {
  if (!read_only)
    return T4A_OK;
  return t4a__fail(T4A_EINVAL,
                   "%s: the host buffer was registered read-only; the device "
                   "cannot write it (register it without "
                   "T4A_HOST_REGISTER_READ_ONLY)",
                   what);
}

int t4a__read_only_refuse_wrap(const char *what, uint64_t address, uint64_t bytes) {
  uint64_t ro_start, ro_bytes;
  if (!bytes || !t4a__read_only_find(address, bytes, &ro_start, &ro_bytes))
    return T4A_OK;
  return t4a__fail(T4A_EINVAL,
                   "%s: [0x%llx, +%llu) overlaps [0x%llx, +%llu), registered read-only "
                   "(T4A_HOST_REGISTER_READ_ONLY), which the device may not write; register "
                   "it without the flag to wrap it, or copy from it with copy_h2d_pinned",
                   what, (unsigned long long)address, (unsigned long long)bytes,
                   (unsigned long long)ro_start, (unsigned long long)ro_bytes);
}

void t4a__read_only_unload(void) {
  pthread_mutex_lock(&lock);
  free(spans);
  spans = NULL;
  count = cap = 0;
  pthread_mutex_unlock(&lock);
}
