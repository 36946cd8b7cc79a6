/* plugin-host/capture.c -- what a capture records (graph_begin ..
 * graph_end): each operation the runtime's slots make, in call order, and
 * the handles of the buffers, host buffers and functions it names (checked
 * live at each replay, graph.c). A recorded launch's record (its
 * parameters) belongs to the recording, then to the graph. Recording never fails the call that made
 * the operation: a failure marks the capture failed and graph_end discards it. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "plugin-host/host.h"

static bool grow(void **p, uint32_t *cap, uint32_t count, size_t item) {
  if (count < *cap)
    return true;
  uint64_t n;
  size_t bytes;
  void *q = t4a__grow(*cap, 16, UINT32_MAX, item, &n, &bytes) ? realloc(*p, bytes) : NULL;
  if (!q)
    return false;
  *p = q;
  *cap = (uint32_t)n;
  return true;
}

static bool name(t4a__hcapture *c, uint64_t bits) {
  if (!bits)
    return true;
  for (uint32_t i = 0; i < c->named_count; i++)
    if (c->named[i] == bits)
      return true;
  if (!grow((void **)&c->named, &c->named_cap, c->named_count, sizeof *c->named))
    return false;
  c->named[c->named_count++] = bits;
  return true;
}

void t4a__capture_note(t4a__hrt *rt, const t4a__op *op, uint64_t a, uint64_t b) {
  t4a__hcapture *c = &rt->cap;
  if (c->error)
    return;
  if (!grow((void **)&c->ops, &c->cap, c->count, sizeof *c->ops) || !name(c, a) || !name(c, b)) {
    c->error = t4a__fail(
        T4A_ENOMEM,
        "recording a captured operation: out of host memory; free memory and capture again");
    return;
  }
  c->ops[c->count++] = *op;
}

void t4a__capture_free(t4a__hcapture *c) {
  for (uint32_t i = 0; i < c->count; i++)
    if (c->ops[i].kind == T4A__OP_KERNEL)
      free(c->ops[i].u.kernel); /* a recorded launch's record is the recording's */
  free(c->ops);
  free(c->named);
  memset(c, 0, sizeof *c);
}
