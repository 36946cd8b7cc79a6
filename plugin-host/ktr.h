/* plugin-host/ktr.h -- the translator's internals, shared by its files:
 * ktranslate.c (names, the fibers decision, the unit, the entry points) and
 * kscan.c (refusals, scopes, kernels, extern __shared__). Not an interface
 * of the plugin: ktranslate.h is. */
#ifndef T4A_PLUGIN_HOST_KTR_H
#define T4A_PLUGIN_HOST_KTR_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "plugin-host/klex.h"

/* A growing NUL-terminated text; oom set once an allocation failed (then
 * every later put is a no-op). */
typedef struct buf {
  char *p;
  size_t n, cap;
  int oom;
} buf;

void t4a__kput(buf *b, const char *s, size_t n);
void t4a__kputs(buf *b, const char *s);
void t4a__kputf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Identifier tokens interned: tok_name[i] is the id of token i's spelling
 * (UINT32_MAX for other tokens). */
typedef struct names {
  uint32_t *slot; /* hash table: token index + 1 of the first spelling, 0 empty */
  uint32_t *id_of_slot;
  size_t mask;
  uint32_t count;
  uint32_t *tok_name;
} names;

typedef struct node {
  uint32_t name; /* UINT32_MAX: anonymous (counts for the whole unit) */
  size_t b, e;   /* body tokens [b, e) */
  int refused;   /* a macro: index of the first refused token in its body, else -1 */
  int macro;     /* a macro's body (else a function's or an initializer's) */
} node;

typedef struct kernel {
  size_t name;        /* token */
  char *qual;         /* the enclosing namespaces, "a::b::" or "" */
  size_t lb_b, lb_e;  /* __launch_bounds__'s first argument, tokens [lb_b, lb_e) (0, 0: none) */
  size_t open, close; /* its body's braces (tokens) */
} kernel;

typedef struct repl {
  size_t off, end; /* source bytes replaced */
  char *text;
} repl;

typedef struct scope {
  int kind; /* S_* */
  size_t open;
  size_t node;           /* S_FUNC: its node */
  size_t name_b, name_e; /* S_NS: tokens of its name */
} scope;

enum { S_NS, S_EXTERNC, S_CLASS, S_FUNC, S_OTHER };

typedef struct tr {
  const t4a__klex *lx;
  const char *name;
  names nm;
  buf log;
  uint32_t refusals;
  node *nodes;
  size_t nn, ncap;
  kernel *k;
  size_t kn, kcap;
  repl *r;
  size_t rn, rcap;
  scope *sc;
  size_t depth, sccap;
  int oom;
} tr;

/* Makes room for one more element of `each` bytes in p (cap elements, n
 * used): the (maybe moved) array, or NULL with *oom set. */
void *t4a__kgrow(void *p, size_t *cap, size_t n, size_t each, int *oom);

#define PUSH(t, arr, n, cap, v)                                                                    \
  do {                                                                                             \
    void *q_ = t4a__kgrow((t)->arr, &(t)->cap, (t)->n, sizeof *(t)->arr, &(t)->oom);               \
    if (q_) {                                                                                      \
      (t)->arr = q_;                                                                               \
      (t)->arr[(t)->n++] = (v);                                                                    \
    }                                                                                              \
  } while (0)

/* As PUSH, for an element owning `owned` (malloc'ed): freed when the element
 * could not be added (out of memory), so nothing leaks. */
#define PUSH_OWNING(t, arr, n, cap, v, owned)                                                      \
  do {                                                                                             \
    void *q_ = t4a__kgrow((t)->arr, &(t)->cap, (t)->n, sizeof *(t)->arr, &(t)->oom);               \
    if (q_) {                                                                                      \
      (t)->arr = q_;                                                                               \
      (t)->arr[(t)->n++] = (v);                                                                    \
    } else                                                                                         \
      free(owned);                                                                                 \
  } while (0)

static inline const t4a__ktok *tk(const tr *t, size_t i) { return &t->lx->t[i]; }
static inline int is(const tr *t, size_t i, const char *w) { return t4a__klex_is(t->lx, i, w); }
static inline int punct(const tr *t, size_t i, char c) { return t4a__klex_punct(t->lx, i, c); }
/* Code the compiler will see: active and outside directives. */
static inline int code(const tr *t, size_t i) {
  return i < t->lx->n && tk(t, i)->active && !tk(t, i)->in_pp;
}

/* Scans the source: refusals into t->log, kernels, function and macro
 * nodes, extern __shared__ rewrites (kscan.c). */
void t4a__kscan(tr *t);

#endif
