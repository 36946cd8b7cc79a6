/* plugin-host/kscan.c -- the translator's pass over the tokens (ktr.h):
 * what the host refuses (one log line per use), the scopes (namespaces,
 * extern "C" blocks, classes, function bodies), the extern "C" __global__
 * kernel definitions, the nodes of the name graph (function bodies, macro
 * bodies, file-scope initializers) and the extern __shared__ rewrites. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin-host/ktr.h"

/* ---- refusals ---------------------------------------------------------- */

typedef struct refusal {
  const char *word; /* identifier (prefix when it ends with '*') */
  const char *what; /* %s: the spelling */
  const char *todo;
  char after; /* it counts only when the next token is this punctuator (0: any; '(': a
                 call, also of a template: '(' or '<') */
} refusal;

static const refusal REFUSED[] = {
    {"asm", "inline assembly (%s)",
     "write it in C++, or keep it from the host with #ifndef __T4A_HOST__", 0},
    {"__asm__", "inline assembly (%s)",
     "write it in C++, or keep it from the host with #ifndef __T4A_HOST__", 0},
    {"__asm", "inline assembly (%s)",
     "write it in C++, or keep it from the host with #ifndef __T4A_HOST__", 0},
    {"texture", "textures (%s)", "read the data through a pointer", '<'},
    {"surface", "surfaces (%s)", "read and write the data through a pointer", '<'},
    {"cudaTextureObject_t", "texture objects (%s)", "read the data through a pointer", 0},
    {"cudaSurfaceObject_t", "surface objects (%s)", "read and write the data through a pointer", 0},
    {"tex1D*", "texture fetches (%s)", "read the data through a pointer", '('},
    {"tex2D*", "texture fetches (%s)", "read the data through a pointer", '('},
    {"tex3D*", "texture fetches (%s)", "read the data through a pointer", '('},
    {"texCubemap*", "texture fetches (%s)", "read the data through a pointer", '('},
    {"surf1D*", "surface accesses (%s)", "read and write the data through a pointer", '('},
    {"surf2D*", "surface accesses (%s)", "read and write the data through a pointer", '('},
    {"surf3D*", "surface accesses (%s)", "read and write the data through a pointer", '('},
    {"surfCubemap*", "surface accesses (%s)", "read and write the data through a pointer", '('},
    {"this_grid", "grid-wide synchronisation (cooperative_groups::%s)",
     "split the kernel at the grid barrier into two launches", 0},
    {"grid_group", "grid-wide synchronisation (cooperative_groups::%s)",
     "split the kernel at the grid barrier into two launches", 0},
    {"this_multi_grid", "multi-device synchronisation (cooperative_groups::%s)",
     "split the kernel into launches", 0},
    {"multi_grid_group", "multi-device synchronisation (cooperative_groups::%s)",
     "split the kernel into launches", 0},
    {"__cluster_dims__", "thread block clusters (%s)", "use blocks without clusters", 0},
    {"this_cluster", "thread block clusters (cooperative_groups::%s)",
     "use blocks without clusters", 0},
    {"cluster_group", "thread block clusters (cooperative_groups::%s)",
     "use blocks without clusters", 0},
    {"__half", "half-precision types (%s)", "compute in float", 0},
    {"__half2", "half-precision types (%s)", "compute in float", 0},
    {"__nv_bfloat16", "bfloat16 types (%s)", "compute in float", 0},
    {"__nv_bfloat162", "bfloat16 types (%s)", "compute in float", 0},
    {"nv_bfloat16", "bfloat16 types (%s)", "compute in float", 0},
    {"nv_bfloat162", "bfloat16 types (%s)", "compute in float", 0},
    {"__nv_fp8_e4m3", "8-bit floating-point types (%s)", "compute in float", 0},
    {"__nv_fp8_e5m2", "8-bit floating-point types (%s)", "compute in float", 0},
    {"nvcuda", "tensor core matrix operations (%s::wmma)", "write the matrix product with loops",
     0},
};

/* Headers the host cannot offer, by a part of their name. */
static const refusal REFUSED_HEADERS[] = {
    {"cooperative_groups", "cooperative groups (<%s>)",
     "use __syncthreads and the __*_sync warp functions", 0},
    {"cuda_fp16.h", "half-precision types (<%s>)", "compute in float", 0},
    {"cuda_bf16.h", "bfloat16 types (<%s>)", "compute in float", 0},
    {"cuda_fp8.h", "8-bit floating-point types (<%s>)", "compute in float", 0},
    {"mma.h", "tensor core matrix operations (<%s>)", "write the matrix product with loops", 0},
    {"cuda/", "the CUDA C++ library (<%s...>)", "use the prelude's built-in functions", 0},
};

static const refusal *refused_word(const tr *t, size_t i) {
  const t4a__ktok *k = tk(t, i);
  if (k->kind != T4A__KT_ID)
    return NULL;
  const char *w = t->lx->src + k->off;
  for (size_t r = 0; r < sizeof REFUSED / sizeof REFUSED[0]; ++r) {
    const char *word = REFUSED[r].word;
    size_t n = strlen(word);
    int prefix = word[n - 1] == '*';
    if (prefix ? (k->len >= n - 1 && !memcmp(w, word, n - 1))
               : (k->len == n && !memcmp(w, word, n)))
      if (!REFUSED[r].after || punct(t, i + 1, REFUSED[r].after) ||
          (REFUSED[r].after == '(' && punct(t, i + 1, '<')))
        return &REFUSED[r];
  }
  return NULL;
}

static void refuse(tr *t, size_t at, const refusal *r, const char *spelling, size_t len,
                   const char *via) {
  t->refusals++;
  if (t->refusals > 100)
    return;
  const t4a__ktok *k = tk(t, at);
  /* r->what with its %s replaced by the spelling */
  char what[192];
  size_t w = 0;
  for (const char *p = r->what; *p && w + 1 < sizeof what; ++p) {
    if (p[0] == '%' && p[1] == 's') {
      for (size_t c = 0; c < len && c < 64 && w + 1 < sizeof what; ++c)
        what[w++] = spelling[c];
      ++p;
    } else
      what[w++] = *p;
  }
  what[w] = 0;
  t4a__kputf(&t->log, "%s:%u:%u: error: %s%s%s is not supported by the host backend; %s\n", t->name,
             k->line, k->col, what, via ? " through macro " : "", via ? via : "", r->todo);
}

/* ---- scanning ----------------------------------------------------------- */

/* The token matching the bracket at i (its index), or lx->n. */
static size_t match(const tr *t, size_t i, char open, char close, int dir) {
  int depth = 0;
  for (size_t k = i; k<t->lx->n; k = dir> 0 ? k + 1 : k - 1) {
    if (code(t, k)) {
      depth += punct(t, k, open) - punct(t, k, close);
      if (!depth)
        return k;
    }
    if (dir < 0 && k == 0)
      break;
  }
  return t->lx->n;
}

/* Whether k is a token that may follow a function's parameter list before
 * its body (const, noexcept, an attribute...). */
static int trailing_word(const tr *t, size_t k) {
  static const char *const w[] = {"const", "volatile",    "noexcept",      "override",
                                  "final", "mutable",     "__attribute__", "__launch_bounds__",
                                  "throw", "__restrict__"};
  for (size_t i = 0; i < sizeof w / sizeof w[0]; ++i)
    if (is(t, k, w[i]))
      return 1;
  return 0;
}

/* A '{' at i (outside functions): the ')' of the parameter list before it,
 * or SIZE_MAX when it does not open a function body. */
static size_t params_before(const tr *t, size_t i, size_t stmt) {
  size_t k = i;
  while (k > stmt) {
    --k;
    if (!code(t, k))
      continue;
    if (punct(t, k, ')')) {
      size_t o = match(t, k, ')', '(', -1);
      if (o >= t->lx->n || o <= stmt)
        return SIZE_MAX;
      size_t p = o;
      while (p > stmt && !code(t, p - 1))
        --p;
      /* an attribute or exception spec after the parameters: skip it */
      if (p > stmt &&
          (is(t, p - 1, "__attribute__") || is(t, p - 1, "__launch_bounds__") ||
           is(t, p - 1, "noexcept") || is(t, p - 1, "throw") || is(t, p - 1, "__align__"))) {
        k = p - 1;
        continue;
      }
      return k;
    }
    if (punct(t, k, '&') || trailing_word(t, k))
      continue;
    return SIZE_MAX;
  }
  return SIZE_MAX;
}

static int stmt_has(const tr *t, size_t b, size_t e, const char *w) {
  for (size_t k = b; k < e; ++k)
    if (code(t, k) && is(t, k, w))
      return 1;
  return 0;
}

static int in_extern_c(const tr *t) {
  for (size_t d = t->depth; d-- > 0;) {
    if (t->sc[d].kind == S_EXTERNC)
      return 1;
    if (t->sc[d].kind != S_NS)
      return 0;
  }
  return 0;
}

/* The enclosing named namespaces of the current scope, "a::b::". */
static char *qualifier(const tr *t) {
  buf q = {0};
  t4a__kputs(&q, "");
  for (size_t d = 0; d < t->depth; ++d) {
    const scope *s = &t->sc[d];
    if (s->kind != S_NS || s->name_b == s->name_e)
      continue;
    for (size_t k = s->name_b; k < s->name_e; ++k)
      if (code(t, k))
        t4a__kput(&q, t->lx->src + tk(t, k)->off, tk(t, k)->len);
    t4a__kputs(&q, "::");
  }
  if (q.oom) {
    free(q.p);
    return NULL;
  }
  return q.p;
}

/* `__global__` at g, in a declaration starting at stmt: records the kernel
 * when this is the definition of an extern "C" one. */
static void on_global(tr *t, size_t g, size_t stmt) {
  int c_linkage = in_extern_c(t);
  for (size_t k = stmt; k + 1 < g && !c_linkage; ++k)
    c_linkage = code(t, k) && is(t, k, "extern") && tk(t, k + 1)->kind == T4A__KT_STR &&
                tk(t, k + 1)->len == 3 && !memcmp(t->lx->src + tk(t, k + 1)->off, "\"C\"", 3);
  if (!c_linkage)
    return; /* a C++ kernel: no C name to look it up by */
  kernel kr = {0, NULL, 0, 0, 0, 0};
  size_t name = SIZE_MAX, k;
  for (k = stmt; k < t->lx->n; ++k) {
    if (!code(t, k))
      continue;
    if (punct(t, k, ';') || punct(t, k, '{'))
      return;
    if (tk(t, k)->kind != T4A__KT_ID || !punct(t, k + 1, '('))
      continue;
    size_t close = match(t, k + 1, '(', ')', 1);
    if (close >= t->lx->n)
      return;
    if (is(t, k, "__launch_bounds__")) {
      kr.lb_b = k + 2;
      kr.lb_e = kr.lb_b;
      int depth = 0;
      for (size_t a = kr.lb_b; a < close; ++a, kr.lb_e = a) {
        depth += punct(t, a, '(') - punct(t, a, ')');
        if (!depth && punct(t, a, ','))
          break;
      }
      k = close;
      continue;
    }
    if (is(t, k, "__attribute__") || is(t, k, "__align__") || is(t, k, "alignas") ||
        is(t, k, "__declspec") || is(t, k, "decltype")) {
      k = close;
      continue;
    }
    name = k;
    k = close;
    break;
  }
  if (name == SIZE_MAX)
    return;
  for (++k; k < t->lx->n; ++k) {
    if (!code(t, k))
      continue;
    if (punct(t, k, '{'))
      break;
    if (punct(t, k, ';') || punct(t, k, '='))
      return; /* a declaration */
  }
  if (k >= t->lx->n)
    return;
  kr.open = k;
  kr.close = match(t, k, '{', '}', 1);
  if (kr.close >= t->lx->n)
    return; /* unbalanced: the compiler will say */
  kr.name = name;
  kr.qual = qualifier(t);
  if (!kr.qual) {
    t->oom = 1;
    return;
  }
  PUSH_OWNING(t, k, kn, kcap, kr, kr.qual);
}

/* `extern` at i: when it declares an extern __shared__ array, replaces the
 * declaration with a t4a__hk::dynshared (same lines). Returns the index of
 * its ';' (or i). */
static size_t on_extern(tr *t, size_t i) {
  size_t e = i, shared = SIZE_MAX;
  for (; e < t->lx->n; ++e) {
    if (!code(t, e))
      continue;
    if (punct(t, e, ';'))
      break;
    if (punct(t, e, '{') || punct(t, e, '}'))
      return i;
    if (is(t, e, "__shared__"))
      shared = e;
  }
  if (shared == SIZE_MAX || e >= t->lx->n)
    return i;
  static const refusal not_array = {
      "", "an extern __shared__ declaration that is not one array of unknown size (%s)",
      "declare each as `extern __shared__ T name[];`", 0};
  /* the kept tokens: type ... name [ ] dims */
  size_t keep[64], nk = 0;
  for (size_t k = i + 1; k < e; ++k) {
    if (!code(t, k) || is(t, k, "__shared__") || is(t, k, "extern") || is(t, k, "static"))
      continue;
    if ((is(t, k, "__align__") || is(t, k, "__attribute__") || is(t, k, "alignas")) &&
        punct(t, k + 1, '(')) {
      k = match(t, k + 1, '(', ')', 1);
      continue;
    }
    if (nk == sizeof keep / sizeof keep[0] || punct(t, k, ',')) {
      refuse(t, i, &not_array, "", 0, NULL);
      return e;
    }
    keep[nk++] = k;
  }
  size_t nm = SIZE_MAX;
  for (size_t a = 0; a + 2 < nk; ++a)
    if (tk(t, keep[a])->kind == T4A__KT_ID && punct(t, keep[a + 1], '[') &&
        punct(t, keep[a + 2], ']')) {
      nm = a;
      break;
    }
  if (nm == SIZE_MAX || nm == 0) {
    refuse(t, i, &not_array, "", 0, NULL);
    return e;
  }
  buf r = {0};
  t4a__kputs(&r, "const t4a__hk::dynshared<");
  for (size_t a = 0; a < nk; ++a) {
    if (a == nm) {
      a += 2; /* the name and [] */
      continue;
    }
    if (a && keep[a - 1] + 1 == keep[a] && t4a__klex_adjacent(t->lx, keep[a - 1]))
      ;
    else if (a)
      t4a__kputs(&r, " ");
    t4a__kput(&r, t->lx->src + tk(t, keep[a])->off, tk(t, keep[a])->len);
  }
  t4a__kputs(&r, "> ");
  t4a__kput(&r, t->lx->src + tk(t, keep[nm])->off, tk(t, keep[nm])->len);
  t4a__kputs(&r, "{};");
  for (uint32_t l = tk(t, i)->line; l < tk(t, e)->line; ++l)
    t4a__kputs(&r, "\n");
  if (r.oom) {
    free(r.p);
    t->oom = 1;
    return e;
  }
  repl rp = {tk(t, i)->off, tk(t, e)->off + 1, r.p};
  PUSH_OWNING(t, r, rn, rcap, rp, rp.text);
  return e;
}

/* A directive at i: #include of a header the host lacks; #define: a node. */
static void on_directive(tr *t, size_t i) {
  size_t e = i;
  while (e < t->lx->n && tk(t, e)->kind != T4A__KT_PPEND)
    e++;
  if (!tk(t, i)->active)
    return;
  if (is(t, i + 1, "include") && i + 2 < e) {
    size_t b = tk(t, i + 2)->off, n = tk(t, e - 1)->off + tk(t, e - 1)->len - b;
    const char *h = t->lx->src + b;
    for (size_t r = 0; r < sizeof REFUSED_HEADERS / sizeof REFUSED_HEADERS[0]; ++r) {
      size_t wl = strlen(REFUSED_HEADERS[r].word);
      for (size_t o = 0; o + wl <= n; ++o)
        if (!memcmp(h + o, REFUSED_HEADERS[r].word, wl)) {
          refuse(t, i + 2, &REFUSED_HEADERS[r], REFUSED_HEADERS[r].word, wl, NULL);
          o = n;
          r = sizeof REFUSED_HEADERS / sizeof REFUSED_HEADERS[0] - 1;
        }
    }
  }
  if (is(t, i + 1, "define") && i + 2 < e && tk(t, i + 2)->kind == T4A__KT_ID) {
    node nd = {t->nm.tok_name[i + 2], i + 3, e, -1, 1};
    for (size_t k = i + 3; k < e && nd.refused < 0; ++k)
      if (refused_word(t, k) ||
          (punct(t, k, '<') && t4a__klex_adjacent(t->lx, k) && punct(t, k + 1, '<') &&
           t4a__klex_adjacent(t->lx, k + 1) && punct(t, k + 2, '<')))
        nd.refused = (int)k;
    PUSH(t, nodes, nn, ncap, nd);
  }
}

static const refusal LAUNCH = {"", "dynamic parallelism (a %s launch in device code)",
                               "launch the kernel from the host", 0};

/* A macro used at i whose body holds a refused construct: say so there. */
static void via_macro(tr *t, size_t i) {
  uint32_t id = t->nm.tok_name[i];
  for (size_t n = 0; n < t->nn; ++n) {
    const node *nd = &t->nodes[n];
    if (nd->refused < 0 || nd->name != id)
      continue;
    size_t r = (size_t)nd->refused;
    const refusal *rf = refused_word(t, r);
    char via[64];
    size_t len = tk(t, i)->len < sizeof via - 1 ? tk(t, i)->len : sizeof via - 1;
    memcpy(via, t->lx->src + tk(t, i)->off, len);
    via[len] = 0;
    if (rf)
      refuse(t, i, rf, t->lx->src + tk(t, r)->off, tk(t, r)->len, via);
    else
      refuse(t, i, &LAUNCH, "<<<", 3, via);
    return;
  }
}

void t4a__kscan(tr *t) {
  size_t stmt = 0;
  size_t func = SIZE_MAX; /* depth of the function scope we are in */
  size_t init = SIZE_MAX; /* a file-scope initializer started here: its node */
  for (size_t i = 0; i < t->lx->n && !t->oom; ++i) {
    const t4a__ktok *k = tk(t, i);
    if (k->kind == T4A__KT_PP) {
      on_directive(t, i);
      continue;
    }
    if (!code(t, i))
      continue;
    const refusal *rf = refused_word(t, i);
    if (rf)
      refuse(t, i, rf, t->lx->src + k->off, k->len, NULL);
    else if (punct(t, i, '<') && t4a__klex_adjacent(t->lx, i) && punct(t, i + 1, '<') &&
             t4a__klex_adjacent(t->lx, i + 1) && punct(t, i + 2, '<')) {
      refuse(t, i, &LAUNCH, "<<<", 3, NULL);
      i += 2;
      continue;
    } else if (k->kind == T4A__KT_ID)
      via_macro(t, i);
    if (is(t, i, "extern") && tk(t, i + 1)->kind != T4A__KT_STR) {
      size_t e = on_extern(t, i);
      if (e != i) {
        i = e;
        stmt = i + 1;
        continue;
      }
    }
    if (func != SIZE_MAX) { /* inside a function: only its braces matter */
      if (punct(t, i, '{')) {
        scope s = {S_OTHER, i, 0, 0, 0};
        PUSH(t, sc, depth, sccap, s);
      } else if (punct(t, i, '}') && t->depth) {
        scope s = t->sc[--t->depth];
        if (s.kind == S_FUNC) {
          t->nodes[s.node].e = i;
          func = SIZE_MAX;
          stmt = i + 1;
        }
      }
      continue;
    }
    if (is(t, i, "__global__"))
      on_global(t, i, stmt);
    if (punct(t, i, '=') && init == SIZE_MAX && !punct(t, i + 1, '=') &&
        !(i && (punct(t, i - 1, '=') || punct(t, i - 1, '!') || punct(t, i - 1, '<') ||
                punct(t, i - 1, '>')))) {
      node nd = {UINT32_MAX, i + 1, i + 1, -1, 0};
      init = t->nn;
      PUSH(t, nodes, nn, ncap, nd);
    }
    if (punct(t, i, ';')) {
      if (init != SIZE_MAX)
        t->nodes[init].e = i;
      init = SIZE_MAX;
      stmt = i + 1;
    } else if (punct(t, i, '{')) {
      scope s = {S_OTHER, i, 0, 0, 0};
      size_t p;
      if (init != SIZE_MAX)
        s.kind = S_OTHER; /* braces of an initializer */
      else if (i >= 2 && is(t, i - 2, "extern") && tk(t, i - 1)->kind == T4A__KT_STR)
        s.kind = S_EXTERNC;
      else if (stmt_has(t, stmt, i, "namespace")) {
        s.kind = S_NS;
        size_t b = stmt;
        while (b < i && !is(t, b, "namespace"))
          b++;
        s.name_b = b + 1;
        s.name_e = i;
      } else if ((p = params_before(t, i, stmt)) != SIZE_MAX) {
        size_t o = match(t, p, ')', '(', -1);
        size_t nmt = o;
        while (nmt > stmt && !code(t, nmt - 1))
          nmt--;
        node nd = {UINT32_MAX, i + 1, i + 1, -1, 0};
        if (nmt > stmt && tk(t, nmt - 1)->kind == T4A__KT_ID && !is(t, nmt - 1, "operator"))
          nd.name = t->nm.tok_name[nmt - 1];
        s.kind = S_FUNC;
        s.node = t->nn;
        PUSH(t, nodes, nn, ncap, nd);
        func = t->depth;
      } else if (stmt_has(t, stmt, i, "struct") || stmt_has(t, stmt, i, "class") ||
                 stmt_has(t, stmt, i, "union"))
        s.kind = S_CLASS;
      PUSH(t, sc, depth, sccap, s);
      if (s.kind != S_OTHER)
        stmt = i + 1;
    } else if (punct(t, i, '}') && t->depth) {
      scope s = t->sc[--t->depth];
      if (s.kind != S_OTHER)
        stmt = i + 1;
    }
  }
  if (init != SIZE_MAX && t->nodes[init].e == t->nodes[init].b)
    t->nodes[init].e = t->lx->n;
}
