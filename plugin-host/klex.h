/* plugin-host/klex.h -- the translator's (ktranslate.c) view of CUDA C
 * source: tokens with their positions, and which of them the preprocessor
 * would keep.
 *
 * Not a preprocessor: no macro is expanded and no file included. It lexes
 * (comments, strings, raw strings, character literals, numbers, one-char
 * punctuators), marks the tokens of each directive, and evaluates #if,
 * #ifdef, #elif... as far as it can know: __CUDA_ARCH__ is undefined on the
 * host, the prelude's macros (__CUDACC__, __CUDACC_RTC__, __T4A_HOST__,
 * __cplusplus) are defined, and the source's own #define of a number is
 * followed. A condition it cannot know (a macro from the compile options,
 * the compiler's own) keeps its tokens: the translator refuses what it
 * sees there too, which errs on the side of a message, never a silent run. */
#ifndef T4A_PLUGIN_HOST_KLEX_H
#define T4A_PLUGIN_HOST_KLEX_H

#include <stddef.h>
#include <stdint.h>

enum t4a__ktok_kind {
  T4A__KT_ID,    /* identifier or keyword */
  T4A__KT_NUM,   /* pp-number */
  T4A__KT_STR,   /* string literal (any prefix, raw too) */
  T4A__KT_CHR,   /* character literal */
  T4A__KT_PUNCT, /* one character */
  T4A__KT_PP,    /* the '#' that starts a directive */
  T4A__KT_PPEND  /* the end of a directive (its newline, or the end) */
};

typedef struct t4a__ktok {
  uint8_t kind;   /* t4a__ktok_kind */
  uint8_t active; /* 1: the preprocessor keeps it (or may: unknown condition) */
  uint8_t in_pp;  /* part of a directive */
  uint8_t pad;
  uint32_t off, len; /* bytes of the source */
  uint32_t line, col;
} t4a__ktok;

typedef struct t4a__klex {
  const char *src;
  size_t size;
  t4a__ktok *t;
  size_t n, cap;
} t4a__klex;

/* Lexes and marks src (size bytes, at most 4 GiB). 0, or -1 out of memory
 * (lx released either way by t4a__klex_free). */
int t4a__klex_run(t4a__klex *lx, const char *src, size_t size);
void t4a__klex_free(t4a__klex *lx);

/* Token i is the punctuator c (for i < n; false past the end). */
int t4a__klex_punct(const t4a__klex *lx, size_t i, char c);
/* Token i is the identifier word. */
int t4a__klex_is(const t4a__klex *lx, size_t i, const char *word);
/* Tokens i and i + 1 are adjacent in the source (no space between). */
int t4a__klex_adjacent(const t4a__klex *lx, size_t i);

#endif
