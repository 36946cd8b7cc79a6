/* plugin-host/guard.c -- checked mode's buffers (T4A_HOST_CHECK=1, memory.c
 * calls in here for a checked runtime): each in a mapping of its own
 * between PROT_NONE guard pages, canaries around the data (check.c watches
 * them), freed ones kept PROT_NONE in a quarantine (docs/design.md,
 * "Checked mode"). The mappings are chunks of the runtime's pool list, so
 * the pool's accounting, limit and teardown cover them. */
#include "config.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "plugin-host/host.h"

#define ALIGN 256u
#define QUARANTINE 1024u /* freed guarded buffers whose addresses stay reserved */

/* Checked mode: a buffer of `bytes` in a mapping of its own, a PROT_NONE
 * guard page at each end, the data against the upper guard as far as the
 * 256-byte alignment allows, the rest of its pages canaries (check.c). Used
 * up at once (nothing is carved from it); unmapped at buffer_free. */
bool t4a__hguard_alloc(t4a__hrt *rt, uint64_t bytes, t4a__block *out) {
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  uint64_t span = (bytes + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
  uint64_t data_pages = (span + page - 1) / page * page, size = data_pages + 2 * page;
  if (size > rt->mem.limit || rt->mem.reserved > rt->mem.limit - size)
    return false;
  t4a__chunk *c = calloc(1, sizeof *c);
  char *p = c ? mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
  if (p == MAP_FAILED || mprotect(p + page, data_pages, PROT_READ | PROT_WRITE) != 0) {
    if (p != MAP_FAILED)
      munmap(p, size);
    free(c);
    return false;
  }
  c->base = p;
  c->size = c->used = c->live = size;
  c->guarded = true;
  c->page = (uint32_t)page;
  c->data = p + page + data_pages - span;
  c->bytes = bytes;
  t4a__hcheck_fill(p + page, c->data);
  t4a__hcheck_fill(c->data + bytes, p + page + data_pages);
  t4a__hcheck_watch(c);
  c->next = rt->mem.chunks;
  rt->mem.chunks = c;
  rt->mem.reserved += size;
  rt->mem.used += bytes;
  if (rt->mem.used > rt->mem.high_water)
    rt->mem.high_water = rt->mem.used;
  rt->c.driver_allocations++;
  out->ptr = c->data;
  out->chunk = c;
  return true;
}

/* A guarded buffer's end: behind every queued use (a kernel still queued
 * may touch it), its pages replaced by PROT_NONE ones (the memory goes
 * back, the addresses stay reserved: a later access faults, where an
 * unmapped range would soon hold the next mapping) in a quarantine of the
 * last QUARANTINE freed buffers; the oldest is unmapped. */
void t4a__hguard_free(t4a__hrt *rt, const t4a__block *b) {
  t4a__hrt_drain(rt, t4a__queue_tail(&rt->q));
  t4a__chunk *c = b->chunk;
  rt->mem.used -= c->bytes;
  for (t4a__chunk **l = &rt->mem.chunks; *l; l = &(*l)->next)
    if (*l == c) {
      *l = c->next;
      break;
    }
  t4a__hcheck_unwatch(c);
  rt->mem.reserved -= c->size;
  rt->c.driver_frees++;
  if (mmap(c->base, c->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
           0) == MAP_FAILED) {
    munmap(c->base, c->size);
    free(c);
    return;
  }
  c->next = NULL;
  if (rt->mem.dead_tail)
    rt->mem.dead_tail->next = c;
  else
    rt->mem.dead = c;
  rt->mem.dead_tail = c;
  if (++rt->mem.dead_count > QUARANTINE) {
    t4a__chunk *old = rt->mem.dead;
    rt->mem.dead = old->next;
    rt->mem.dead_count--;
    munmap(old->base, old->size);
    free(old);
  }
}

void t4a__hguard_fini(t4a__hrt *rt) {
  for (t4a__chunk *c = rt->mem.dead, *next; c; c = next) {
    next = c->next;
    munmap(c->base, c->size);
    free(c);
  }
  rt->mem.dead = rt->mem.dead_tail = NULL;
  rt->mem.dead_count = 0;
}
