/* plugin-cuda/handle.c -- handle tables: taking, publishing and releasing
 * entries, and the messages for rejected handles. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "plugin-cuda/handle.h"
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
      uint32_t cap = t->cap ? t->cap * 2 : FIRST_CAP;
      if (cap > T4A__MAX_INDEX)
        return t4a__fail(T4A_ENOMEM, "%s: %u live objects of this kind; release some", what,
                         T4A__MAX_INDEX);
      char *p = realloc(t->items, (size_t)cap * t->item_size);
      if (!p)
        return t4a__fail(T4A_ENOMEM, "%s: out of host memory for the handle table; free memory",
                         what);
      t->items = p;
      t->cap = cap;
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

uint64_t t4a__htable_publish(t4a__htable *t, uint32_t index, const t4a__hkind *kind,
                             uint32_t owner) {
  t4a__hslot *s = t4a__htable_at(t, index);
  s->gen = t4a__gen_next(s->gen);
  s->live = true;
  s->next_free = 0;
  t->live++;
  return t4a__h_make(kind->tag, owner, index, s->gen);
}

void t4a__htable_release(t4a__htable *t, uint32_t index) {
  t4a__hslot *s = t4a__htable_at(t, index);
  s->gen = t4a__gen_next(s->gen); /* every handle of this use is stale now */
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
