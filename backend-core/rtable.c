/* backend-core/rtable.c -- the table of runtimes (see rtable.h). */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "common/error.h"
#include "backend-core/rtable.h"

static t4a__rtslot *_Atomic slots[T4A__MAX_RUNTIMES];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t slots_used; /* slots_lock */

const t4a__hkind t4a__runtime_kind = {T4A__TAG_RUNTIME, "runtime", "runtime_create", NULL,
                                      "the runtime was destroyed; create a new one"};

t4a__rtslot *t4a__rtable_slot(uint32_t index) {
  return index < T4A__MAX_RUNTIMES ? atomic_load_explicit(&slots[index], memory_order_acquire)
                                   : NULL;
}

t4a__rtslot *t4a__rtable_take(size_t size) {
  pthread_mutex_lock(&slots_lock);
  t4a__rtslot *rt = NULL;
  for (uint32_t i = 0; i < slots_used && !rt; i++) {
    t4a__rtslot *s = atomic_load(&slots[i]);
    if (!s) /* freed by an unload */
      continue;
    t4a__lock_take(&s->lock);
    if (!s->alive && !s->reserved) {
      rt = s;
      rt->reserved = true;
    }
    t4a__lock_give(&s->lock);
  }
  if (!rt && slots_used < T4A__MAX_RUNTIMES && size >= sizeof *rt) {
    rt = calloc(1, size);
    if (rt) {
      t4a__lock_init(&rt->lock);
      rt->index = slots_used;
      rt->reserved = true;
      /* the slot's handle sequence starts where the plugin's does, so that
       * another plugin's handles name none of its objects */
      rt->seq = t4a__htable_gen_first();
      atomic_store_explicit(&slots[slots_used], rt, memory_order_release);
      slots_used++;
    }
  }
  pthread_mutex_unlock(&slots_lock);
  if (rt)
    t4a__lock_take(&rt->lock);
  return rt;
}

int t4a__rtable_lock(t4a_runtime h, const char *what, t4a__rtslot **out) {
  if (t4a__h_tag(h.bits) != T4A__TAG_RUNTIME)
    return t4a__handle_reject(&t4a__runtime_kind, h.bits, 0, what, true);
  t4a__rtslot *rt = t4a__rtable_slot(t4a__h_rt(h.bits));
  if (!rt)
    return t4a__fail(T4A_EHANDLE, "%s: unknown runtime handle; pass one from runtime_create", what);
  t4a__lock_take(&rt->lock);
  if (!rt->alive || rt->gen != t4a__h_gen(h.bits)) {
    t4a__lock_give(&rt->lock);
    return t4a__handle_reject(&t4a__runtime_kind, h.bits, 0, what, false);
  }
  *out = rt;
  return T4A_OK;
}

void t4a__rtable_defer(t4a__rtslot *s, t4a__call *c) {
  c->next = NULL;
  if (s->due_tail)
    s->due_tail->next = c;
  else
    s->due = c;
  s->due_tail = c;
}

void t4a__rtable_unlock_due(t4a__rtslot *s) {
  t4a__call *c = s->due;
  s->due = s->due_tail = NULL;
  t4a__lock_give(&s->lock);
  while (c) {
    t4a__call *next = c->next; /* c may be freed by its own call */
    c->fn(c->arg);
    c = next;
  }
}

void t4a__rtable_unlock_keep(t4a__rtslot *s, t4a__calls *kept) {
  kept->head = s->due;
  kept->tail = s->due_tail;
  s->due = s->due_tail = NULL;
  t4a__lock_give(&s->lock);
}

void t4a__rtable_relock(t4a__rtslot *s, const t4a__calls *kept) {
  t4a__lock_take(&s->lock);
  if (!kept->head)
    return;
  kept->tail->next = s->due; /* none, unless queued meanwhile: after the kept ones */
  if (!s->due)
    s->due_tail = kept->tail;
  s->due = kept->head;
}

void t4a__rtable_unload(void) {
  pthread_mutex_lock(&slots_lock);
  for (uint32_t i = 0; i < slots_used; i++) {
    t4a__rtslot *rt = atomic_load(&slots[i]);
    if (rt && !rt->alive && !rt->reserved) {
      atomic_store(&slots[i], NULL);
      free(rt);
    }
  }
  pthread_mutex_unlock(&slots_lock);
}
