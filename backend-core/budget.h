/* backend-core/budget.h -- a runtime's memory budget and its out-of-memory
 * callback (budget.c), the same for every backend: the limit from
 * t4a_runtime_options.pool_limit_bytes, the callback, and the one call of
 * it per allocation made with the runtime's lock let go.
 *
 * What the runtime holds (its live buffers and its cache, at size class) is
 * the backend's to count, next to its pool: it passes the number in. */
#ifndef T4A_CORE_BUDGET_H
#define T4A_CORE_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "backend-core/rtable.h"
#include "t4a/gpu_backend_v1.h"

typedef struct t4a__budget {
  uint64_t limit; /* bytes; UINT64_MAX: none */
  t4a_out_of_memory_fn fn;
  void *user;
} t4a__budget;

/* The budget of normalised options o. */
void t4a__budget_init(t4a__budget *b, const t4a_runtime_options *o);

/* Whether `more` bytes fit beside the `held` ones. */
static inline bool t4a__budget_fits(const t4a__budget *b, uint64_t held, uint64_t more) {
  return held <= b->limit && more <= b->limit - held;
}

/* Bytes of cache to give back so that `more` fits beside `held`, or
 * UINT64_MAX when even an empty cache would not do (held - cached alone
 * passes the limit). */
uint64_t t4a__budget_shortfall(const t4a__budget *b, uint64_t held, uint64_t more);

/* Whether the callback may be called now: the runtime has one and this
 * thread is not inside one already (an allocation the callback makes gets
 * no nested call). */
bool t4a__budget_can_ask(const t4a__budget *b);

/* Calls the callback of runtime `h` (locked: s) once with `info`, s's lock
 * let go meanwhile (the calls due on it run first: the caller holds
 * nothing else), then locks the runtime again. T4A_OK with *retry set to
 * whether the callback asked for one more try; T4A_EHANDLE when the runtime
 * was destroyed meanwhile. s is locked on return either way (after
 * T4A_EHANDLE only so that the caller's one way out unlocks it: its state
 * is no longer the caller's runtime, touch nothing of it). */
int t4a__budget_ask(t4a__rtslot *s, t4a_runtime h, const t4a__budget *b,
                    const t4a_out_of_memory_info *info, bool *retry);

#endif
