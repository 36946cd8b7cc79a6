/* plugin-cuda/ipc.h -- a runtime's part in sharing buffers and witnesses
 * with other processes (ABI 1.2, ipc.c): what it exported (interprocess
 * events standing for its witnesses, recorded on a stream of their own) and
 * what it imported (other processes' pools, and their events, opened once
 * and kept).
 *
 * An exported witness's event is recorded on the runtime's `aux` stream
 * behind a wait for the seal's own completion event, so it completes when
 * the witness's work does, however much the runtime enqueued since. It
 * stays the witness's until the witness's last reference is released
 * (seen lazily: a later export reclaims the events of released witnesses),
 * so an importer never waits on a later record of it. */
#ifndef T4A_PLUGIN_CUDA_IPC_H
#define T4A_PLUGIN_CUDA_IPC_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin-cuda/cuda_decls.h"

typedef struct t4a__runtime t4a__runtime;

#define T4A__IPC_ID 16     /* bytes of a runtime's identity in what it exports */
#define T4A__IPC_OPENED 64 /* opened events an importer keeps */

/* An interprocess event of an exporting runtime. */
typedef struct t4a__ipc_event {
  t4a__CUevent ev;
  t4a__CUipcEventHandle handle;
  uint64_t witness; /* the witness handle's bits it stands for; 0: free */
} t4a__ipc_event;

/* A pool of another process, imported. */
typedef struct t4a__ipc_pool {
  uint8_t id[T4A__IPC_ID];
  t4a__CUmemoryPool pool;
} t4a__ipc_pool;

/* An event of another process, opened. */
typedef struct t4a__ipc_opened {
  uint8_t id[T4A__IPC_ID];
  t4a__CUipcEventHandle handle;
  t4a__CUevent ev;
  uint64_t used; /* when it was last waited on (the oldest goes first) */
} t4a__ipc_opened;

typedef struct t4a__ipc {
  bool on;                 /* created with T4A_RUNTIME_IPC */
  bool pool_shared;        /* its pool was exported once: the driver exports allocations
                              only of a pool already shared (CUDA_ERROR_INVALID_VALUE before) */
  uint8_t id[T4A__IPC_ID]; /* this runtime in its exports (random) */
  uint32_t pid;            /* this process, in its exports (no getpid() an export) */
  t4a__CUstream aux;       /* records exported witnesses' events; NULL until the first */
  t4a__ipc_event *events;  /* every event made for exports */
  uint32_t event_count, event_cap;
  t4a__ipc_pool *pools; /* imported */
  uint32_t pool_count, pool_cap;
  t4a__ipc_opened opened[T4A__IPC_OPENED];
  uint32_t opened_count;
  uint64_t clock; /* for `used` */
} t4a__ipc;

/* runtime_create: T4A_EUNSUPPORTED (with the reason) when the device or
 * driver cannot share pools or events; else rt's identity. rt's options
 * are set. */
int t4a__ipc_init(t4a__runtime *rt);

/* runtime_destroy, after memory_fini (the imports unmapped, the stream
 * drained): idle releases every event, stream and imported pool; after a
 * fault they are kept. */
void t4a__ipc_fini(t4a__runtime *rt, bool idle);

#endif
