/* backend-core/handle.c -- handle tables: taking, publishing and releasing
 * entries, and the messages for rejected handles. */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/error.h"
#include "backend-core/handle.h"
#include "t4a/gpu_backend_v1.h"

#define FIRST_CAP 16u

void t4a__htable_fini(t4a__htable *t) {
  free(t->items);
  t4a__htable_init(t, t->item_size);
}

int t4a__htable_take(t4a__htable *t, const char *what, uint32_t *index) {
  t4a__hslot *s;
  if (t->free_head) {
    *index = t->free_head - 1;
    s = t4a__htable_at(t, *index);
    t->free_head = s->next_free;
  } else {
    if (t->count == t->cap) {
      uint64_t cap;
      size_t bytes;
      if (!t4a__grow(t->cap, FIRST_CAP, T4A__MAX_INDEX, t->item_size, &cap, &bytes))
        return t4a__fail(T4A_ENOMEM, "%s: %u live objects of this kind; release some", what,
                         T4A__MAX_INDEX);
      char *p = realloc(t->items, bytes);
      if (!p)
        return t4a__fail(T4A_ENOMEM, "%s: out of host memory for the handle table; free memory",
                         what);
      t->items = p;
      t->cap = (uint32_t)cap;
    }
    *index = t->count++;
    s = t4a__htable_at(t, *index);
    s->gen = 0;
  }
  uint32_t gen = s->gen;
  memset(s, 0, t->item_size);
  s->gen = gen;
  return 0;
}

void t4a__htable_untake(t4a__htable *t, uint32_t index) {
  t4a__hslot *s = t4a__htable_at(t, index);
  s->live = false;
  s->next_free = t->free_head;
  t->free_head = index + 1;
}

/* Generations come from one process-wide sequence, not from the entry:
 * a runtime created in a destroyed runtime's slot has fresh tables whose
 * entries would otherwise restart at 1, so the dead runtime's buffer,
 * module or function handles would name the new runtime's objects. Each
 * thread takes the sequence in blocks of 1024, so publishing costs an
 * atomic operation once per 1024 handles, and a generation recurs only
 * after 2^28 publications in the whole process (and then must also land
 * on the same runtime slot, table and index to matter). */
#define GEN_BLOCK 1024u
static _Atomic uint32_t gen_sequence = 1;
typedef struct gen_block {
  uint32_t next, end;
} gen_block;
static _Thread_local gen_block gen_local;

/* A fresh generation from the thread's block. The block's address is taken
 * once: in a plugin (a dlopened library) each access to a thread-local in
 * the default TLS model is a call to __tls_get_addr, and gcc recomputes the
 * address at each access rather than keep it (three calls for one
 * generation); the empty asm hides where the pointer came from, so it is
 * kept in a register. */
static uint32_t gen_fresh(void) {
  gen_block *b = &gen_local;
  __asm__("" : "+r"(b));
  for (;;) {
    if (b->next == b->end) {
      b->next = atomic_fetch_add_explicit(&gen_sequence, GEN_BLOCK, memory_order_relaxed);
      b->end = b->next + GEN_BLOCK;
    }
    uint32_t gen = b->next++ & T4A__GEN_MASK;
    if (gen)
      return gen;
  }
}

static _Atomic uint32_t gen_first = 1;

void t4a__htable_gen_start(uint32_t first) {
  uint32_t untouched = 1;
  if (atomic_compare_exchange_strong(&gen_sequence, &untouched, first & T4A__GEN_MASK))
    atomic_store(&gen_first, first & T4A__GEN_MASK);
}

uint32_t t4a__htable_gen_first(void) { return atomic_load(&gen_first); }

uint64_t t4a__htable_publish(t4a__htable *t, uint32_t index, const t4a__hkind *kind,
                             uint32_t owner) {
  t4a__hslot *s = t4a__htable_at(t, index);
  /* Only the sequence names generations: the entry's last one came from it
   * too, so a fresh value differs from every earlier one (until 2^28 more,
   * then skipped once). Adding one here, or at release, made values the
   * sequence hands out later, and a released handle came back to life. */
  uint32_t gen = gen_fresh();
  while (gen == s->gen)
    gen = gen_fresh();
  s->gen = gen;
  s->live = true;
  s->next_free = 0;
  t->live++;
  return t4a__h_make(kind->tag, owner, index, s->gen);
}

void t4a__htable_release(t4a__htable *t, uint32_t index) {
  /* every handle of this use is stale now: the entry is not live, and its
   * next publication takes a new generation */
  t->live--;
  t4a__htable_untake(t, index);
}

int t4a__handle_reject(const t4a__hkind *kind, uint64_t h, uint32_t owner, const char *what,
                       bool wrong_kind) {
  if (wrong_kind)
    return t4a__fail(h ? T4A_EHANDLE : T4A_EINVAL, "%s: %s is not a%s %s handle; pass one from %s",
                     what, h ? "the handle" : "a null handle",
                     strchr("aeiou", kind->noun[0]) ? "n" : "", kind->noun, kind->origin);
  if (kind->foreign && t4a__h_rt(h) != owner)
    return t4a__fail(T4A_EHANDLE, "%s: the %s belongs to runtime #%u, not #%u; %s", what,
                     kind->noun, t4a__h_rt(h), owner, kind->foreign);
  return t4a__fail(T4A_EHANDLE, "%s: %s", what, kind->stale);
}
