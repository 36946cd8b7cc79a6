/* backend-core/handle.h -- handles and the tables behind them, for every object
 * kind (runtime, buffer, host buffer, witness, artifact, module, function,
 * graph).
 *
 * A handle is 64 bits: tag 4 | runtime slot 12 | index 20 | generation 28.
 * The tag says the kind, the runtime slot the owner (0 for process-wide
 * kinds), the index the entry in its table, and the generation which use of
 * that entry: an entry's generation advances when it is released, so a
 * stale handle, one of another runtime, one of another kind, or a forged one
 * is rejected (T4A_EHANDLE, or T4A_EINVAL for the null handle) before
 * anything is dereferenced. No live handle is all-zero (generations skip 0).
 *
 * A table is a growable array of entries of one type whose first member is
 * a t4a__hslot; free entries form a list through `next_free`. The table
 * does no locking: its owner's lock guards it. */
#ifndef T4A_CORE_HANDLE_H
#define T4A_CORE_HANDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "t4a/gpu_backend_v1.h"

enum t4a__tag {
  T4A__TAG_RUNTIME = 1,
  T4A__TAG_BUFFER = 2,
  T4A__TAG_HOST = 3,
  T4A__TAG_WITNESS = 4,
  T4A__TAG_ARTIFACT = 5,
  T4A__TAG_MODULE = 6,
  T4A__TAG_FUNCTION = 7,
  T4A__TAG_GRAPH = 8
};

#define T4A__MAX_RUNTIMES 4096u
#define T4A__MAX_INDEX (1u << 20)
#define T4A__GEN_MASK ((1u << 28) - 1)

static inline uint64_t t4a__h_make(unsigned tag, uint32_t rt, uint32_t index, uint32_t gen) {
  return (uint64_t)tag << 60 | (uint64_t)(rt & 0xfffu) << 48 |
         (uint64_t)(index & (T4A__MAX_INDEX - 1)) << 28 | (uint64_t)(gen & T4A__GEN_MASK);
}
static inline unsigned t4a__h_tag(uint64_t h) { return (unsigned)(h >> 60); }
static inline uint32_t t4a__h_rt(uint64_t h) { return (uint32_t)(h >> 48) & 0xfffu; }
static inline uint32_t t4a__h_index(uint64_t h) {
  return (uint32_t)(h >> 28) & (T4A__MAX_INDEX - 1);
}
static inline uint32_t t4a__h_gen(uint64_t h) { return (uint32_t)h & T4A__GEN_MASK; }

/* Next generation of an entry: never 0, so no live handle is all-zero. */
static inline uint32_t t4a__gen_next(uint32_t gen) {
  gen = (gen + 1) & T4A__GEN_MASK;
  return gen ? gen : 1;
}

/* Takes one more reference on a 32-bit count; false (nothing changed) when
 * the count is saturated, so it can never wrap to a premature free. */
static inline bool t4a__ref_take(uint32_t *refs) {
  if (*refs == UINT32_MAX)
    return false;
  ++*refs;
  return true;
}

/* What a kind of handle is called in messages: "<what>: the handle is not a
 * <noun> handle; pass one from <origin>", "<what>: the <noun> belongs to
 * runtime #a, not #b; <foreign>", "<what>: <stale>". */
typedef struct t4a__hkind {
  unsigned tag;
  const char *noun;
  const char *origin;
  const char *foreign; /* what to do with another runtime's handle; NULL: process-wide */
  const char *stale;
} t4a__hkind;

/* The head of every table entry. */
typedef struct t4a__hslot {
  uint32_t gen;
  uint32_t next_free; /* index + 1 of the next free entry, 0 = none */
  bool live;
} t4a__hslot;

typedef struct t4a__htable {
  char *items;
  uint32_t item_size;
  uint32_t count, cap; /* entries ever used, allocated */
  uint32_t free_head;  /* index + 1 of the first free entry, 0 = none */
  uint32_t live;       /* entries published and not released */
} t4a__htable;

/* An empty table of entries of item_size bytes (a t4a__hslot first). */
static inline void t4a__htable_init(t4a__htable *t, size_t item_size) {
  *t = (t4a__htable){.item_size = (uint32_t)item_size};
}

/* Frees the entries' array (what entries point to is their owner's). */
void t4a__htable_fini(t4a__htable *t);

static inline void *t4a__htable_at(const t4a__htable *t, uint32_t index) {
  return t->items + (size_t)index * t->item_size;
}

/* Whether entry `index` (< count) is published and not yet released. */
static inline bool t4a__htable_live(const t4a__htable *t, uint32_t index) {
  return ((const t4a__hslot *)t4a__htable_at(t, index))->live;
}

/* Takes a free entry (growing the table), zeroed except for its head;
 * T4A_ENOMEM naming `what` when the table cannot grow. */
int t4a__htable_take(t4a__htable *t, const char *what, uint32_t *index);

/* Gives back an entry taken but never published. */
void t4a__htable_untake(t4a__htable *t, uint32_t index);

/* Starts this copy of core's generation sequence at `first` instead of 1,
 * once, before any publication (a plugin's init): two plugins in one
 * process start apart, so a handle of one never names an object of the
 * other (the host's start at 2^27, as its runtime generations do). */
void t4a__htable_gen_start(uint32_t first);

/* Where this copy's sequences start (1 unless t4a__htable_gen_start moved
 * it): an owner's own sequence (t4a__htable_publish_seq) starts there too. */
uint32_t t4a__htable_gen_first(void);

/* Makes a taken entry live under a new generation; returns its handle. */
uint64_t t4a__htable_publish(t4a__htable *t, uint32_t index, const t4a__hkind *kind,
                             uint32_t owner);

/* t4a__htable_publish with a generation from `*seq`, a sequence the
 * owner keeps for good and guards with its lock (a runtime slot's
 * t4a__rtslot.seq, which outlives the runtimes made in the slot), for a
 * table whose handles all name that owner and all come from this call: a
 * value drawn never recurs in the owner's handles until 2^28 more, the
 * guarantee of the process-wide sequence, without its thread-local block
 * (a TLS look-up per call in a dlopen()ed plugin; buffer_alloc's hot path). */
static inline uint64_t t4a__htable_publish_seq(t4a__htable *t, uint32_t index,
                                               const t4a__hkind *kind, uint32_t owner,
                                               uint32_t *seq) {
  t4a__hslot *s = t4a__htable_at(t, index);
  uint32_t gen = *seq = t4a__gen_next(*seq);
  if (gen == s->gen) /* only after a wrap */
    gen = *seq = t4a__gen_next(gen);
  s->gen = gen;
  s->live = true;
  s->next_free = 0;
  t->live++;
  return t4a__h_make(kind->tag, owner, index, gen);
}

/* Ends a live entry: its handles are stale from now on, the entry is free. */
void t4a__htable_release(t4a__htable *t, uint32_t index);

/* Fails a lookup with the standard message (cold path of t4a__htable_find);
 * never returns 0. */
int t4a__handle_reject(const t4a__hkind *kind, uint64_t h, uint32_t owner, const char *what,
                       bool wrong_kind);
static inline int t4a__handle_rejected(const t4a__hkind *kind, uint64_t h, uint32_t owner,
                                       const char *what, bool wrong_kind) {
  int rc = t4a__handle_reject(kind, h, owner, what, wrong_kind);
  return rc ? rc : T4A_EINTERNAL; /* tells the compiler a failure is never 0 */
}

/* Validates handle h of `kind` owned by `owner`: its entry, else NULL with
 * the status in *rc (0 on success). Returns void *, so the typed getters
 * assign the entry without a cast that would alias their pointers. */
static inline void *t4a__htable_find(const t4a__htable *t, const t4a__hkind *kind, uint32_t owner,
                                     uint64_t h, const char *what, int *rc) {
  if (t4a__h_tag(h) != kind->tag) {
    *rc = t4a__handle_rejected(kind, h, owner, what, true);
    return NULL;
  }
  uint32_t i = t4a__h_index(h);
  t4a__hslot *s = i < t->count ? t4a__htable_at(t, i) : NULL;
  if (t4a__h_rt(h) != owner || !s || !s->live || s->gen != t4a__h_gen(h)) {
    *rc = t4a__handle_rejected(kind, h, owner, what, false);
    return NULL;
  }
  *rc = 0;
  return s;
}

#endif
