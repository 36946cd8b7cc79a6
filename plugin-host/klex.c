/* plugin-host/klex.c -- tokens and preprocessor conditions for the
 * translator (klex.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "plugin-host/klex.h"

static int push(t4a__klex *lx, uint8_t kind, size_t off, size_t len, uint32_t line, uint32_t col,
                int in_pp) {
  if (lx->n == lx->cap) {
    size_t cap = lx->cap ? lx->cap * 2 : 256;
    t4a__ktok *t = realloc(lx->t, cap * sizeof *t);
    if (!t)
      return -1;
    lx->t = t;
    lx->cap = cap;
  }
  t4a__ktok *k = &lx->t[lx->n++];
  memset(k, 0, sizeof *k);
  k->kind = kind;
  k->active = 1;
  k->in_pp = (uint8_t)in_pp;
  k->off = (uint32_t)off;
  k->len = (uint32_t)len;
  k->line = line;
  k->col = col;
  return 0;
}

static int is_idc(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c >= 0x80;
}
static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* The lexer's cursor: byte offset, line, and the offset where the line
 * starts (for columns). */
typedef struct cur {
  const char *s;
  size_t n, i, line_start;
  uint32_t line;
} cur;

static void newline(cur *c) {
  c->line++;
  c->line_start = c->i;
}

/* Skips a backslash-newline at c->i (a line splice); 1 if it did. */
static int splice(cur *c) {
  if (c->i + 1 < c->n && c->s[c->i] == '\\' &&
      (c->s[c->i + 1] == '\n' ||
       (c->s[c->i + 1] == '\r' && c->i + 2 < c->n && c->s[c->i + 2] == '\n'))) {
    c->i += c->s[c->i + 1] == '\r' ? 3 : 2;
    newline(c);
    return 1;
  }
  return 0;
}

/* A quoted literal from c->i (at the opening quote q), to the closing one
 * or the end of the line. */
static void quoted(cur *c, char q) {
  c->i++;
  while (c->i < c->n && c->s[c->i] != '\n') {
    if (splice(c))
      continue;
    char ch = c->s[c->i++];
    if (ch == '\\' && c->i < c->n && c->s[c->i] != '\n')
      c->i++;
    else if (ch == q)
      return;
  }
}

/* A raw string R"delim( ... )delim" from c->i (at the quote). */
static void raw_string(cur *c) {
  size_t d0 = ++c->i;
  while (c->i < c->n && c->s[c->i] != '(' && c->s[c->i] != '\n' && c->i - d0 < 16)
    c->i++;
  if (c->i >= c->n || c->s[c->i] != '(')
    return; /* not a raw string after all: the compiler will say */
  size_t dl = c->i - d0;
  c->i++;
  while (c->i < c->n) {
    if (c->s[c->i] == ')' && c->i + 1 + dl < c->n && !memcmp(c->s + c->i + 1, c->s + d0, dl) &&
        c->s[c->i + 1 + dl] == '"') {
      c->i += dl + 2;
      return;
    }
    if (c->s[c->i++] == '\n')
      newline(c);
  }
}

static int lex(t4a__klex *lx) {
  cur c = {lx->src, lx->size, 0, 0, 1};
  int bol = 1, in_pp = 0;
  while (c.i < c.n) {
    if (splice(&c))
      continue;
    unsigned char ch = (unsigned char)c.s[c.i];
    if (ch == '\n') {
      if (in_pp && push(lx, T4A__KT_PPEND, c.i, 0, c.line, (uint32_t)(c.i - c.line_start + 1), 1))
        return -1;
      in_pp = 0;
      c.i++;
      newline(&c);
      bol = 1;
      continue;
    }
    if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\f' || ch == '\v') {
      c.i++;
      continue;
    }
    if (ch == '/' && c.i + 1 < c.n && c.s[c.i + 1] == '/') {
      while (c.i < c.n && c.s[c.i] != '\n')
        if (!splice(&c))
          c.i++;
      continue;
    }
    if (ch == '/' && c.i + 1 < c.n && c.s[c.i + 1] == '*') {
      c.i += 2;
      while (c.i < c.n && !(c.s[c.i] == '*' && c.i + 1 < c.n && c.s[c.i + 1] == '/'))
        if (c.s[c.i++] == '\n')
          newline(&c);
      c.i = c.i < c.n ? c.i + 2 : c.n;
      continue;
    }
    size_t start = c.i;
    uint32_t line = c.line, col = (uint32_t)(c.i - c.line_start + 1);
    uint8_t kind;
    if (ch == '#' && bol) {
      in_pp = 1;
      c.i++;
      kind = T4A__KT_PP;
    } else if (is_idc(ch) && !is_digit(ch)) {
      while (c.i < c.n && is_idc((unsigned char)c.s[c.i]))
        c.i++;
      size_t len = c.i - start;
      const char *w = c.s + start;
      int quote = c.i < c.n && (c.s[c.i] == '"' || c.s[c.i] == '\'');
      int raw =
          quote && c.s[c.i] == '"' && w[len - 1] == 'R' &&
          (len == 1 || (len == 2 && strchr("LuU", w[0])) || (len == 3 && !memcmp(w, "u8", 2)));
      int prefix =
          quote && ((len == 1 && strchr("LuU", w[0])) || (len == 2 && !memcmp(w, "u8", 2)));
      if (raw) {
        raw_string(&c);
        kind = T4A__KT_STR;
      } else if (prefix) {
        char q = c.s[c.i];
        quoted(&c, q);
        kind = q == '"' ? T4A__KT_STR : T4A__KT_CHR;
      } else
        kind = T4A__KT_ID;
    } else if (is_digit(ch) ||
               (ch == '.' && c.i + 1 < c.n && is_digit((unsigned char)c.s[c.i + 1]))) {
      c.i++;
      while (c.i < c.n) {
        unsigned char d = (unsigned char)c.s[c.i];
        if ((d == '+' || d == '-') && strchr("eEpP", c.s[c.i - 1]))
          c.i++;
        else if (is_idc(d) || d == '.' ||
                 (d == '\'' && c.i + 1 < c.n && is_idc((unsigned char)c.s[c.i + 1])))
          c.i++;
        else
          break;
      }
      kind = T4A__KT_NUM;
    } else if (ch == '"' || ch == '\'') {
      quoted(&c, (char)ch);
      kind = ch == '"' ? T4A__KT_STR : T4A__KT_CHR;
    } else {
      c.i++;
      kind = T4A__KT_PUNCT;
    }
    bol = 0;
    if (push(lx, kind, start, c.i - start, line, col, in_pp))
      return -1;
  }
  if (in_pp && push(lx, T4A__KT_PPEND, c.n, 0, c.line, (uint32_t)(c.n - c.line_start + 1), 1))
    return -1;
  return 0;
}

int t4a__klex_punct(const t4a__klex *lx, size_t i, char c) {
  return i < lx->n && lx->t[i].kind == T4A__KT_PUNCT && lx->src[lx->t[i].off] == c;
}

int t4a__klex_is(const t4a__klex *lx, size_t i, const char *word) {
  size_t n = strlen(word);
  return i < lx->n && lx->t[i].kind == T4A__KT_ID && lx->t[i].len == n &&
         !memcmp(lx->src + lx->t[i].off, word, n);
}

int t4a__klex_adjacent(const t4a__klex *lx, size_t i) {
  return i + 1 < lx->n && lx->t[i].off + lx->t[i].len == lx->t[i + 1].off;
}

/* ---- #if conditions ------------------------------------------------ */

typedef struct macro {
  uint32_t off, len; /* its name in the source, or in `names` below */
  const char *name;  /* a predefined one's name (NULL: in the source) */
  int known;         /* 1: defined, value is its number; 0: defined, value unknown; -1: not
                        defined (#undef); -2: may or may not be defined */
  int64_t value;
} macro;

typedef struct pp {
  const t4a__klex *lx;
  macro *m;
  size_t mn, mcap;
  size_t i, end; /* the tokens of the condition being evaluated */
} pp;

typedef struct val {
  int64_t v;
  int known;
} val;

static int name_eq(const pp *p, const macro *m, const t4a__ktok *t) {
  const char *w = p->lx->src + t->off;
  if (m->name)
    return strlen(m->name) == t->len && !memcmp(m->name, w, t->len);
  return m->len == t->len && !memcmp(p->lx->src + m->off, w, t->len);
}

static macro *find(pp *p, const t4a__ktok *t) {
  for (size_t k = p->mn; k-- > 0;)
    if (name_eq(p, &p->m[k], t))
      return &p->m[k];
  return NULL;
}

/* Defined or not, for #ifdef and defined(): 1, 0, or -1 unknown. */
static int defined(pp *p, const t4a__ktok *t) {
  macro *m = find(p, t);
  if (m)
    return m->known == -2 ? -1 : m->known >= 0;
  const char *w = p->lx->src + t->off;
  if ((t->len >= 13 && !memcmp(w, "__CUDA_ARCH__", 13)) ||
      (t->len >= 11 && !memcmp(w, "__CUDA_ARCH", 11)) || (t->len == 8 && !memcmp(w, "__NVCC__", 8)))
    return 0;
  return -1;
}

static int parse_number(const char *s, size_t len, int64_t *out) {
  char buf[40];
  size_t k = 0;
  for (size_t i = 0; i < len && k + 1 < sizeof buf; ++i)
    if (s[i] != '\'')
      buf[k++] = s[i];
  buf[k] = 0;
  char *end;
  unsigned long long v = strtoull(buf, &end, 0);
  while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L')
    end++;
  if (*end)
    return -1;
  *out = (int64_t)v;
  return 0;
}

static int at(pp *p, char c) { return p->i < p->end && t4a__klex_punct(p->lx, p->i, c); }
static int at2(pp *p, char a, char b) {
  return at(p, a) && t4a__klex_adjacent(p->lx, p->i) && t4a__klex_punct(p->lx, p->i + 1, b);
}

static val cond(pp *p);
static val unknown(void) { return (val){0, 0}; }

static val primary(pp *p) {
  if (p->i >= p->end)
    return unknown();
  const t4a__ktok *t = &p->lx->t[p->i];
  if (at(p, '(')) {
    p->i++;
    val v = cond(p);
    if (at(p, ')'))
      p->i++;
    return v;
  }
  if (t->kind == T4A__KT_NUM) {
    p->i++;
    int64_t v;
    return parse_number(p->lx->src + t->off, t->len, &v) ? unknown() : (val){v, 1};
  }
  if (t->kind == T4A__KT_ID) {
    p->i++;
    if (t4a__klex_is(p->lx, p->i - 1, "defined")) {
      int paren = at(p, '(');
      p->i += (size_t)paren;
      if (p->i >= p->end || p->lx->t[p->i].kind != T4A__KT_ID)
        return unknown();
      int d = defined(p, &p->lx->t[p->i++]);
      if (paren && at(p, ')'))
        p->i++;
      return d < 0 ? unknown() : (val){d, 1};
    }
    if (t4a__klex_is(p->lx, p->i - 1, "true"))
      return (val){1, 1};
    if (t4a__klex_is(p->lx, p->i - 1, "false"))
      return (val){0, 1};
    if (at(p, '(')) { /* a function-like macro: skip its arguments */
      int depth = 0;
      do {
        depth += at(p, '(') - at(p, ')');
        p->i++;
      } while (p->i < p->end && depth > 0);
      return unknown();
    }
    macro *m = find(p, t);
    if (m)
      return m->known == 1 ? (val){m->value, 1} : m->known < 0 ? (val){0, 1} : unknown();
    return defined(p, t) == 0 ? (val){0, 1} : unknown();
  }
  p->i++;
  return unknown();
}

static val unary(pp *p) {
  if (at(p, '!') && !at2(p, '!', '=')) {
    p->i++;
    val v = unary(p);
    return (val){!v.v, v.known};
  }
  if (at(p, '~') || at(p, '-') || at(p, '+')) {
    char op = p->lx->src[p->lx->t[p->i++].off];
    val v = unary(p);
    return (val){op == '~' ? ~v.v : op == '-' ? -v.v : v.v, v.known};
  }
  return primary(p);
}

/* Binary operators by precedence level (0 loosest): their spellings. */
static const char *const levels[][5] = {{"||", NULL},
                                        {"&&", NULL},
                                        {"|", NULL},
                                        {"^", NULL},
                                        {"&", NULL},
                                        {"==", "!=", NULL},
                                        {"<=", ">=", "<", ">", NULL},
                                        {"<<", ">>", NULL},
                                        {"+", "-", NULL},
                                        {"*", "/", "%", NULL}};
enum { NLEVELS = sizeof levels / sizeof levels[0] };

/* The operator of level lv at p->i (its spelling), or NULL. */
static const char *op_at(pp *p, int lv) {
  for (int k = 0; levels[lv][k]; ++k) {
    const char *o = levels[lv][k];
    if (o[1] ? at2(p, o[0], o[1])
             : (at(p, o[0]) && !at2(p, o[0], o[0]) && !at2(p, o[0], '=') &&
                !(o[0] == '<' && at2(p, '<', '<')) && !(o[0] == '>' && at2(p, '>', '>'))))
      return o;
  }
  return NULL;
}

static val binary(pp *p, int lv) {
  if (lv == NLEVELS)
    return unary(p);
  val a = binary(p, lv + 1);
  const char *o;
  while ((o = op_at(p, lv))) {
    p->i += o[1] ? 2 : 1;
    val b = binary(p, lv + 1);
    int k = a.known && b.known;
    int64_t x = a.v, y = b.v, r = 0;
    switch (o[0] * 256 + (o[1] ? o[1] : 0)) {
    case '|' * 256 + '|':
      if ((a.known && x) || (b.known && y))
        return a = (val){1, 1}, a;
      r = x || y;
      break;
    case '&' * 256 + '&':
      if ((a.known && !x) || (b.known && !y)) {
        a = (val){0, 1};
        continue;
      }
      r = x && y;
      break;
    case '|' * 256: r = x | y; break;
    case '^' * 256: r = x ^ y; break;
    case '&' * 256: r = x & y; break;
    case '=' * 256 + '=': r = x == y; break;
    case '!' * 256 + '=': r = x != y; break;
    case '<' * 256 + '=': r = x <= y; break;
    case '>' * 256 + '=': r = x >= y; break;
    case '<' * 256: r = x < y; break;
    case '>' * 256: r = x > y; break;
    case '<' * 256 + '<': r = y >= 0 && y < 63 ? (int64_t)((uint64_t)x << y) : 0; break;
    case '>' * 256 + '>': r = y >= 0 && y < 63 ? x >> y : 0; break;
    case '+' * 256: r = (int64_t)((uint64_t)x + (uint64_t)y); break;
    case '-' * 256: r = (int64_t)((uint64_t)x - (uint64_t)y); break;
    case '*' * 256: r = (int64_t)((uint64_t)x * (uint64_t)y); break;
    default: /* / and % */
      if (!y || (x == INT64_MIN && y == -1))
        k = 0;
      else
        r = o[0] == '/' ? x / y : x % y;
    }
    a = (val){r, k};
  }
  return a;
}

static val cond(pp *p) {
  val c = binary(p, 0);
  if (!at(p, '?'))
    return c;
  p->i++;
  val a = cond(p);
  if (at(p, ':'))
    p->i++;
  val b = cond(p);
  if (!c.known)
    return a.known && b.known && a.v == b.v ? a : unknown();
  return c.v ? a : b;
}

static int add_macro(pp *p, macro m) {
  if (p->mn == p->mcap) {
    size_t cap = p->mcap ? p->mcap * 2 : 32;
    macro *n = realloc(p->m, cap * sizeof *n);
    if (!n)
      return -1;
    p->m = n;
    p->mcap = cap;
  }
  p->m[p->mn++] = m;
  return 0;
}

/* One #if nesting level. state: 1 taken, 0 not, -1 unknown. */
typedef struct frame {
  int state;       /* of the current branch */
  int taken;       /* a branch before was known taken */
  int maybe_taken; /* a branch before may have been taken */
} frame;

/* The new branch's state, given the condition's value v (1/0/-1). */
static void branch(frame *f, int v) {
  f->taken |= f->state == 1;
  f->maybe_taken |= f->state == -1;
  f->state = f->taken || v == 0 ? 0 : (f->maybe_taken ? -1 : v);
}

static int mark(t4a__klex *lx) {
  pp p = {lx, NULL, 0, 0, 0, 0};
  static const char *const pre[][2] = {{"__CUDACC__", "1"},
                                       {"__CUDACC_RTC__", "1"},
                                       {"__T4A_HOST__", "1"},
                                       {"__cplusplus", "201703"}};
  for (size_t k = 0; k < sizeof pre / sizeof pre[0]; ++k)
    if (add_macro(&p, (macro){0, 0, pre[k][0], 1, strtoll(pre[k][1], NULL, 10)}))
      return -1;
  frame st[64];
  size_t depth = 0, over = 0; /* levels beyond st's: kept, unknown */
  int active = 1;
  for (size_t i = 0; i < lx->n; ++i) {
    t4a__ktok *t = &lx->t[i];
    if (t->kind != T4A__KT_PP) {
      t->active = (uint8_t)active;
      continue;
    }
    size_t e = i;
    while (e < lx->n && lx->t[e].kind != T4A__KT_PPEND)
      e++;
    for (size_t k = i; k < e && k < lx->n; ++k)
      lx->t[k].active = (uint8_t)active;
    size_t d = i + 1;
    p.i = d + 1;
    p.end = e;
    int is_if = t4a__klex_is(lx, d, "if"), is_ifdef = t4a__klex_is(lx, d, "ifdef"),
        is_ifndef = t4a__klex_is(lx, d, "ifndef"), is_elif = t4a__klex_is(lx, d, "elif"),
        is_elifdef = t4a__klex_is(lx, d, "elifdef"), is_elifndef = t4a__klex_is(lx, d, "elifndef");
    int v = -1;
    if (is_if || is_elif) {
      val c = cond(&p);
      v = c.known ? c.v != 0 : -1;
    } else if ((is_ifdef || is_ifndef || is_elifdef || is_elifndef) && d + 1 < e &&
               lx->t[d + 1].kind == T4A__KT_ID) {
      v = defined(&p, &lx->t[d + 1]);
      if (v >= 0 && (is_ifndef || is_elifndef))
        v = !v;
    }
    if (is_if || is_ifdef || is_ifndef) {
      if (depth == sizeof st / sizeof st[0])
        over++;
      else {
        st[depth] = (frame){0, 0, 0};
        branch(&st[depth], v);
        depth++;
      }
    } else if (is_elif || is_elifdef || is_elifndef || t4a__klex_is(lx, d, "else")) {
      if (!over && depth)
        branch(&st[depth - 1], t4a__klex_is(lx, d, "else") ? 1 : v);
    } else if (t4a__klex_is(lx, d, "endif")) {
      if (over)
        over--;
      else if (depth)
        depth--;
    } else if (active && (t4a__klex_is(lx, d, "define") || t4a__klex_is(lx, d, "undef")) &&
               d + 1 < e && lx->t[d + 1].kind == T4A__KT_ID) {
      /* in a region that may be skipped, a #define makes the name unknown */
      macro m = {lx->t[d + 1].off, lx->t[d + 1].len, NULL, 0, 0};
      int sure = depth == 0 || st[depth - 1].state == 1;
      for (size_t k = 0; k < depth && sure; ++k)
        sure = st[k].state == 1;
      if (!sure)
        m.known = -2;
      else if (t4a__klex_is(lx, d, "undef"))
        m.known = -1;
      else if (d + 3 == e && lx->t[d + 2].kind == T4A__KT_NUM && !t4a__klex_punct(lx, d + 2, '(') &&
               !parse_number(lx->src + lx->t[d + 2].off, lx->t[d + 2].len, &m.value))
        m.known = 1;
      if (add_macro(&p, m)) {
        free(p.m);
        return -1;
      }
    }
    active = 1;
    for (size_t k = 0; k < depth; ++k)
      active &= st[k].state != 0;
    i = e; /* the PPEND takes the directive's own marking */
    if (e < lx->n)
      lx->t[e].active = lx->t[i].active;
  }
  free(p.m);
  return 0;
}

int t4a__klex_run(t4a__klex *lx, const char *src, size_t size) {
  memset(lx, 0, sizeof *lx);
  lx->src = src;
  lx->size = size;
  if (size > UINT32_MAX - 1)
    return -1;
  if (lex(lx) || mark(lx))
    return -1;
  return 0;
}

void t4a__klex_free(t4a__klex *lx) {
  free(lx->t);
  memset(lx, 0, sizeof *lx);
}
