/* backend-core/keep.c -- what is kept for good (see keep.h). */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend-core/keep.h"

static void **quarantine;
static uint32_t quarantine_count;
/* The first kept handles need no allocation: a handle kept during the
 * plugin's own unload (a spare's part whose release failed at dlclose) would
 * otherwise sit in a heap list whose only pointer is unmapped with the
 * plugin (LeakSanitizer reported it in the fault sweep). Volatile: nothing
 * reads the array, so an optimiser could drop the stores, and what it keeps
 * would be lost after all (valgrind saw a kept event "definitely lost" in a
 * gcc -O2 build). */
#define KEPT_STATIC 64u
static const void *volatile kept_first[KEPT_STATIC];
static const void **kept_more;
static uint32_t kept_count;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

void t4a__plugin_pin(void) {
  Dl_info info;
  if (dladdr((void *)(uintptr_t)t4a__plugin_pin, &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

void t4a__keep(const void *handle) {
  pthread_mutex_lock(&kept_lock);
  if (kept_count < KEPT_STATIC) {
    kept_first[kept_count++] = handle;
  } else if (kept_count < UINT32_MAX) { /* the count never wraps (then: leaked, not listed) */
    const void **list = realloc(kept_more, (kept_count - KEPT_STATIC + 1) * sizeof *list);
    if (list) {
      kept_more = list;
      kept_more[kept_count++ - KEPT_STATIC] = handle;
    }
  }
  pthread_mutex_unlock(&kept_lock);
  t4a__plugin_pin();
}

void t4a__quarantine(const void *state, size_t size) {
  void *copy = malloc(size);
  pthread_mutex_lock(&kept_lock);
  void **list = copy && quarantine_count < UINT32_MAX
                    ? realloc(quarantine, (quarantine_count + 1) * sizeof *list)
                    : NULL;
  if (list) {
    memcpy(copy, state, size);
    quarantine = list;
    quarantine[quarantine_count++] = copy;
  }
  pthread_mutex_unlock(&kept_lock);
  if (!list)
    free(copy); /* out of memory: the blocks are leaked rather than freed */
  t4a__plugin_pin();
}
