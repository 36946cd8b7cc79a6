/* plugin-cuda/witness.h -- the process-wide witness table (witness.c). */
#ifndef T4A_PLUGIN_CUDA_WITNESS_H
#define T4A_PLUGIN_CUDA_WITNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin-cuda/cuda_decls.h"
#include "t4a/gpu_backend_v1.h"

typedef struct t4a__runtime t4a__runtime;

/* Destroy: every live witness of rt gets its final status (T4A_OK for
 * completed epochs, `status` for the rest), kept after rt is gone. */
void t4a__witness_finalise(t4a__runtime *rt, int status);

/* A timing runtime's seal seq completed at ns (since its creation): its
 * witnesses keep the time (completion.c calls this under rt's lock). */
void t4a__witness_time(t4a__runtime *rt, uint64_t seq, uint64_t ns);

/* A GPU-side wait for a witness: the event of its seal, pinned (kept and
 * not re-recorded) while its runtime is unlocked. */
typedef struct t4a__wpin {
  t4a__runtime *src; /* the witness's runtime, while e is pinned */
  uint32_t gen;
  struct t4a__event *e; /* NULL: nothing to wait for (the work completed) */
  t4a__CUevent ev;
  int32_t ordinal;
} t4a__wpin;

/* Pins the event w's work completes with (p->e NULL when it completed);
 * T4A_EDEVICEFAULT when it failed, T4A_EHANDLE for a bad witness. No lock
 * is held on return. Release callbacks that become due on the way run
 * before the pin is taken (they may destroy w's runtime). While the pin
 * is held the caller may lock a runtime (w's too) as long as it queues no
 * call there: only the lock's holder has calls due (runtime.h). */
int t4a__witness_pin(t4a_witness w, const char *what, t4a__wpin *p);

/* T4A_EDEVICEFAULT (with the detail) when the pinned event's device
 * faulted after the pin: a wait for it would never end. */
int t4a__witness_pin_check(const t4a__wpin *p, const char *what);

/* Lets the pinned event go (takes the witness's runtime's lock). */
void t4a__witness_unpin(t4a__wpin *p);

/* Locks w's runtime when it is alive: T4A_OK with *rt (locked), *seq (the
 * epoch) and *ordinal (its device). Else *rt is NULL and the status is the
 * witness's final one (T4A_OK: its work completed before its runtime went;
 * *seq and *ordinal set), or T4A_EHANDLE for a bad witness. */
int t4a__witness_locate(t4a_witness w, const char *what, uint64_t *seq, int32_t *ordinal,
                        t4a__runtime **rt);

/* Whether w names a witness not yet released (no lock of a runtime taken;
 * callable under one). */
bool t4a__witness_live(t4a_witness w);

/* Plugin teardown: witnesses the consumer did not release go. */
void t4a__witnesses_unload(void);

#endif
