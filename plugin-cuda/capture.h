/* plugin-cuda/capture.h -- a runtime's graphs (v1.1): the capture in progress
 * between graph_begin and graph_end, and the graphs it produced.
 *
 * capture.c keeps the bookkeeping: what the table's calls record while the
 * runtime's stream is capturing (the node of each kernel launch, for
 * graph_set_kernel_args; the handles of the functions, buffers and host
 * buffers the captured work names, checked live at each replay), the
 * refusal of calls that cannot be captured, and the graphs' release at
 * destroy. graph.c has the graph slots; the slots that enqueue work record
 * it here (launch.c, launch_ex.c, transfer.c, copy2d.c, memory.c). */
#ifndef T4A_PLUGIN_CUDA_CAPTURE_H
#define T4A_PLUGIN_CUDA_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin-cuda/backend.h"
#include "backend-core/handle.h"

typedef struct t4a__runtime t4a__runtime;

/* A captured kernel launch: its node, and what replacing its arguments
 * needs (cuGraphExecKernelNodeSetParams takes the whole launch). */
typedef struct t4a__gkernel {
  t4a__CUgraphNode node;
  t4a__CUfunction fn;
  uint32_t grid[3], block[3], shared;
} t4a__gkernel;

/* Distinct handle values (bits), in the order first seen. */
typedef struct t4a__hlist {
  uint64_t *bits;
  uint32_t count, cap;
} t4a__hlist;

/* What a capture recorded; moves into its graph at graph_end. */
typedef struct t4a__recorded {
  t4a__gkernel *kernels;
  uint32_t kernel_count, kernel_cap;
  t4a__hlist functions, buffers, hosts;
  uint64_t copies; /* copies and memsets */
} t4a__recorded;

/* The most entries each list of a capture records: launches, and the
 * distinct functions, buffers and host buffers the captured work names
 * (2^24: a graph of 16,777,216 launches). The next is not recorded: the
 * capture fails and graph_end says so (T4A_ENOMEM). The 32-bit
 * capacities stay far from wrapping. */
#define T4A__CAPTURE_MAX (1u << 24)

/* T4A__CAPTURE_MAX, or less in a test copy of the plugin (entry.c). */
extern uint32_t t4a__capture_max;

typedef struct t4a__capture {
  bool active;
  bool dirty_before;      /* the epoch's dirty flag at graph_begin: captured work does not run */
  int error;              /* the first failure to record (T4A_ENOMEM, a driver status): the
                             capture is discarded at graph_end */
  const char *error_todo; /* what to do about it (static), and what failed: */
  char error_detail[128];
  t4a__recorded rec;
} t4a__capture;

/* A graph of a runtime. */
typedef struct t4a__graph {
  t4a__hslot h;
  t4a__CUgraph graph;    /* the captured template (owns the kernel nodes) */
  t4a__CUgraphExec exec; /* what graph_launch replays */
  uint64_t nodes;
  uint64_t last_use; /* epoch of its last replay, 0 = never replayed */
  uint64_t replays;
  t4a__recorded rec;
} t4a__graph;

#include "backend-core/kinds.h" /* t4a__graph_kind */

/* Runtime creation: no capture, no graph. */
void t4a__capture_init(t4a__runtime *rt);

/* T4A_EBUSY: `what` cannot run while rt captures, because it `why`s. */
int t4a__capture_refused(const char *what, const char *why);

/* 0 when not capturing, else the refusal (hot paths pay one load). */
static inline int t4a__capture_refuse(const t4a__capture *c, const char *what, const char *why) {
  return c->active ? t4a__capture_refused(what, why) : 0;
}

/* Records a kernel launch just captured on rt's stream (function handle
 * bits and what an argument update needs). A failure marks the capture
 * failed. */
void t4a__capture_kernel(t4a__runtime *rt, uint64_t function, t4a__CUfunction fn,
                         const uint32_t grid[3], const uint32_t block[3], uint32_t shared);

/* Records a copy or memset just captured: the buffers and host buffer it
 * names (0 = none). */
void t4a__capture_copy(t4a__runtime *rt, uint64_t buffer_a, uint64_t buffer_b, uint64_t host);

/* Frees a recording. */
void t4a__recorded_free(t4a__recorded *r);

/* Destroy: ends a capture in progress and discards what it recorded. */
void t4a__capture_abort(t4a__runtime *rt);

/* Destroy. Idle: destroys every graph left and frees the bookkeeping;
 * after a fault graphs are kept (replays may still run). */
void t4a__graphs_fini(t4a__runtime *rt, bool idle);

#endif
