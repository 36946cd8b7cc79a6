/* backend-core/rtable.h -- the table of runtimes every backend keeps (rtable.c):
 * runtime structs by slot, looked up and locked from a handle, and the
 * calls due once a runtime's lock is let go.
 *
 * A backend's runtime struct begins with a t4a__rtslot (its identity and
 * lock); the table holds pointers to those heads and never frees one while
 * the plugin is loaded (a destroyed runtime's slot is reused with the next
 * generation), so that a stale handle can always be checked safely. The
 * handle's tag, slot and generation are checked here; what makes a live
 * runtime unusable (a device fault) is the backend's to check after.
 *
 * Each plugin links its own copy of backend-core/ (hidden), so two backends in one
 * process keep two tables. */
#ifndef T4A_CORE_RTABLE_H
#define T4A_CORE_RTABLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend-core/handle.h"
#include "backend-core/lock.h"
#include "t4a/gpu_backend_v1.h"

/* A call due once the runtime's lock is let go (t4a__rtable_defer):
 * consumer code (external memory's release callbacks, DLPack deleters)
 * never runs under our lock, so it may call back into the runtime. The
 * node is its owner's memory.
 *
 * The calls run with nothing of the backend held: no runtime lock and no
 * pinned completion record (a callback may destroy the runtime, which waits
 * for every pin). So a thread that queued calls lets the lock go with
 * t4a__rtable_unlock only when it holds nothing else; one that must keep
 * something (a pin) runs them first and looks again, and one that lets the
 * lock go for a moment keeps them its own (t4a__rtable_unlock_keep). Hence
 * the calls due on a runtime are always those of the thread holding its
 * lock: another thread's unlock never runs them. */
typedef struct t4a__call {
  void (*fn)(void *arg);
  void *arg;
  struct t4a__call *next;
} t4a__call;

/* Calls taken off a runtime while its lock is let go for a moment. */
typedef struct t4a__calls {
  t4a__call *head, *tail;
} t4a__calls;

/* The head of every backend's runtime struct. */
typedef struct t4a__rtslot {
  t4a__lock lock; /* guards the whole runtime struct (lock.h) */
  uint32_t index, gen;
  bool alive;
  bool reserved; /* taken by a runtime_create in progress */
  /* Generations for tables of this slot that publish with
   * t4a__htable_publish_seq: never reset, so a later runtime in the slot
   * continues the sequence and no dead runtime's handle names its objects. */
  uint32_t seq;
  /* Calls due at the next unlock, oldest first. In the head, not the
   * backend's state: destroy resets the state before its unlock runs them. */
  t4a__call *due, *due_tail;
} t4a__rtslot;

extern const t4a__hkind t4a__runtime_kind;

/* The head in slot `index`, or NULL (never used, or out of range). */
t4a__rtslot *t4a__rtable_slot(uint32_t index);

/* Takes a dead slot (or a new one of `size` bytes, zeroed, the head first:
 * every struct of one table has the same size) for a runtime being created:
 * locked and reserved. NULL when none is left or memory is short. */
t4a__rtslot *t4a__rtable_take(size_t size);

/* Looks up and locks the runtime of handle h: T4A_EHANDLE naming `what`
 * when it is not a live runtime's. */
int t4a__rtable_lock(t4a_runtime h, const char *what, t4a__rtslot **out);

static inline t4a_runtime t4a__rtable_handle(const t4a__rtslot *s) {
  t4a_runtime h = {t4a__h_make(T4A__TAG_RUNTIME, s->index, 0, s->gen)};
  return h;
}

/* Queues c to run once s's lock is let go (s locked). */
void t4a__rtable_defer(t4a__rtslot *s, t4a__call *c);

/* Unlocks s, then runs the calls that became due meanwhile. */
void t4a__rtable_unlock_due(t4a__rtslot *s);
static inline void t4a__rtable_unlock(t4a__rtslot *s) {
  if (s->due)
    t4a__rtable_unlock_due(s);
  else
    t4a__lock_give(&s->lock);
}

/* Lets s's lock go for a moment without running the calls due: they go to
 * *kept, and t4a__rtable_relock takes the lock again and queues them again,
 * first. For a holder that waits unlocked in the middle of its work
 * (destroy waiting for pins), whose calls must wait for its end. */
void t4a__rtable_unlock_keep(t4a__rtslot *s, t4a__calls *kept);
void t4a__rtable_relock(t4a__rtslot *s, const t4a__calls *kept);

/* Plugin teardown: frees the structs of destroyed runtimes (live ones are
 * left: what they own cannot be released safely from a destructor). */
void t4a__rtable_unload(void);

#endif
