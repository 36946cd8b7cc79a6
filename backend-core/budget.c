/* backend-core/budget.c -- the memory budget and the out-of-memory callback
 * (see budget.h). */
#include "config.h"

#include "backend-core/budget.h"

/* Set while this thread runs an out-of-memory callback of this backend. */
static _Thread_local bool in_callback;

void t4a__budget_init(t4a__budget *b, const t4a_runtime_options *o) {
  b->limit = o->pool_limit_bytes ? o->pool_limit_bytes : UINT64_MAX;
  b->fn = o->out_of_memory;
  b->user = o->out_of_memory_user;
}

uint64_t t4a__budget_shortfall(const t4a__budget *b, uint64_t held, uint64_t more) {
  if (more > b->limit)
    return UINT64_MAX;
  uint64_t room = b->limit - more; /* what may be held beside it */
  return held > room ? held - room : 0;
}

bool t4a__budget_can_ask(const t4a__budget *b) { return b->fn && !in_callback; }

int t4a__budget_ask(t4a__rtslot *s, t4a_runtime h, const t4a__budget *b,
                    const t4a_out_of_memory_info *info, bool *retry) {
  t4a_out_of_memory_fn fn = b->fn; /* b is the runtime's: read before letting it go */
  void *user = b->user;
  t4a_out_of_memory_info copy = *info;
  t4a__rtable_unlock(s);
  in_callback = true;
  int answer = fn(&copy, user);
  in_callback = false;
  *retry = answer == T4A_OUT_OF_MEMORY_RETRY;
  t4a__rtslot *again;
  int rc = t4a__rtable_lock(h, "buffer_alloc (after its out-of-memory callback)", &again);
  if (rc) /* destroyed: the slot (never freed) is locked all the same, see budget.h */
    t4a__lock_take(&s->lock);
  return rc;
}
