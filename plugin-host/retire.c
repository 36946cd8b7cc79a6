/* plugin-host/retire.c -- what is released behind the queue: freed host
 * buffers, unregistered memory, external memory, released graphs. An entry
 * is released at a natural point (the header's list: seal,
 * witness_query/_wait/_elapsed and runtime_wait_witness for a witness of
 * the runtime, the frees, graph_release, destroy) once the queue ran past
 * its position and a seal covered it, or at once when its work had
 * completed already. */
#include "config.h"

#include <stdlib.h>

#include "common/checked.h"
#include "plugin-host/host.h"

int t4a__retire_add(t4a__hrt *rt, const t4a__hretire *r) {
  if (t4a__timeline_reached(rt->q.tl, r->seq)) { /* nothing queued uses it */
    r->release(rt, r->ptr, r->bytes, false);
    return T4A_OK;
  }
  if (rt->retire_count == rt->retire_cap) {
    uint64_t n;
    size_t bytes;
    t4a__hretire *p = t4a__grow(rt->retire_cap, 16, UINT32_MAX, sizeof *p, &n, &bytes)
                          ? realloc(rt->retire, bytes)
                          : NULL;
    if (!p) { /* wait for the work instead of failing a free */
      t4a__hrt_drain(rt, r->seq);
      r->release(rt, r->ptr, r->bytes, false);
      return T4A_OK;
    }
    rt->retire = p;
    rt->retire_cap = (uint32_t)n;
  }
  rt->retire[rt->retire_count++] = *r;
  atomic_store(&rt->q.tl->retiring, true);
  return T4A_OK;
}

void t4a__retire_due(t4a__hrt *rt) {
  uint32_t kept = 0;
  for (uint32_t i = 0; i < rt->retire_count; i++) {
    t4a__hretire r = rt->retire[i];
    if (r.seq <= rt->sealed && t4a__timeline_reached(rt->q.tl, r.seq))
      r.release(rt, r.ptr, r.bytes, false);
    else
      rt->retire[kept++] = r;
  }
  rt->retire_count = kept;
  if (!kept)
    atomic_store(&rt->q.tl->retiring, false);
}

void t4a__retire_fini(t4a__hrt *rt) {
  for (uint32_t i = 0; i < rt->retire_count; i++)
    rt->retire[i].release(rt, rt->retire[i].ptr, rt->retire[i].bytes, true);
  free(rt->retire);
  rt->retire = NULL;
  rt->retire_count = rt->retire_cap = 0;
}
