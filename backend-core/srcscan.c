/* backend-core/srcscan.c -- whether a compile may be cached (srcscan.h).
 *
 * NVRTC reads files besides the source: headers from include directories,
 * from the directory of `name` (the current directory for a bare name) for
 * #include "x.h", absolute #include paths, pre-included headers,
 * precompiled headers. NVRTC 13 cannot report which files it read (it has
 * no dependency output), so their contents cannot join the key; a compile
 * that could read any is therefore not cached, in memory or on disk. The
 * host C++ compiler reads the same kinds of files, and its caches follow
 * the same rule. The checks below are deliberately coarse: a false alarm
 * costs one compile, a missed include would return stale code. */
#include "config.h"

#include <string.h>

#include "backend-core/srcscan.h"

/* Options that make NVRTC read files, matched on the name without its
 * dashes and by prefix, so "-I/x", "--include-path=/x", "-I" "/x",
 * "-include" and "--pre-include=h" all count. */
static bool option_reads_files(const char *opt) {
  static const char *const prefixes[] = {"I",          "include",   "pre-include",
                                         "preinclude", "isystem",   "system-include",
                                         "iquote",     "idirafter", "imacros"};
  while (*opt == '-')
    opt++;
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(opt, prefixes[i], strlen(prefixes[i])) == 0)
      return true;
  return strstr(opt, "pch") != NULL; /* --pch, --use-pch=f, --pch-dir=d, ... */
}

/* Characters that line splicing can remove from between two letters of a
 * word: backslash-newline (NVRTC also takes backslash-CR-LF), its trigraph
 * ??/ (-std=c++11/14), and blanks, which cost only false alarms. */
static bool splice_char(char c) {
  return c == '\\' || c == '?' || c == '/' || c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* If word occurs at s[i] with only splice characters between its letters,
 * the index just past it; else 0. */
static size_t word_at(const char *s, size_t n, size_t i, const char *word) {
  for (const char *w = word; *w; w++) {
    if (w != word)
      while (i < n && splice_char(s[i]))
        i++;
    if (i >= n || s[i] != *w)
      return 0;
    i++;
  }
  return i;
}

static bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether s[from, to) is a line `#include <name>` whose name is relative.
 * With no include directory given, NVRTC's list for <...> is empty ("no
 * directories in search list"), so such a name can only be one of NVRTC's
 * built-in headers, which its version (in the key) pins; "..." would search
 * the directory of `name`, and an absolute name is opened as is. */
static bool builtin_include_line(const char *s, size_t from, size_t to) {
  size_t i = from;
  while (i < to && (s[i] == ' ' || s[i] == '\t'))
    i++;
  if (i >= to || s[i++] != '#')
    return false;
  while (i < to && (s[i] == ' ' || s[i] == '\t'))
    i++;
  if (to - i < 7 || memcmp(s + i, "include", 7) != 0)
    return false;
  i += 7;
  while (i < to && (s[i] == ' ' || s[i] == '\t'))
    i++;
  if (i >= to || s[i++] != '<' || i >= to || s[i] == '/')
    return false;
  size_t name = i;
  while (i < to && (ident_char(s[i]) || s[i] == '.' || s[i] == '/' || s[i] == '-' || s[i] == '+'))
    i++;
  if (i == name || i >= to || s[i++] != '>')
    return false;
  while (i < to && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
    i++;
  return i == to;
}

const char *t4a__compile_reads_files(const t4a_compile_options *o, uint64_t size) {
  for (uint32_t i = 0; i < o->option_count; i++)
    if (option_reads_files(o->options[i]))
      return "an option names include directories, pre-included or precompiled headers";
  const char *s = o->source;
  size_t n = (size_t)size;
  for (size_t i = 0; i < n; i++) {
    size_t end;
    if (s[i] != 'i' && s[i] != 'e' && s[i] != '_')
      continue; /* no word below starts here (a compile served from memory stays cheap) */
    /* #include, #include_next, __has_include: every occurrence must sit in
     * a `#include <relative>` line (so a comment mentioning "include"
     * costs caching: the preprocessor is NVRTC's, not re-implemented). */
    if ((end = word_at(s, n, i, "include"))) {
      size_t from = i, to = end;
      while (from > 0 && s[from - 1] != '\n')
        from--;
      while (to < n && s[to] != '\n')
        to++;
      if (memchr(s + i, '\n', end - i) || !builtin_include_line(s, from, to))
        return "the source may include a file from disk (any \"include\" outside a plain "
               "#include <relative> line counts)";
    }
    /* #import / import (modules) and #embed, __has_embed: refused by
     * NVRTC 13, but they would read files */
    if (((end = word_at(s, n, i, "import")) || (end = word_at(s, n, i, "embed"))) &&
        (i == 0 || !ident_char(s[i - 1]) || s[i - 1] == '_') && (end == n || !ident_char(s[end])))
      return "the source mentions import or embed, which can read files";
    /* the time of the compile is part of the output */
    if (word_at(s, n, i, "__TIME") || word_at(s, n, i, "__DATE__"))
      return "the source uses __DATE__, __TIME__ or __TIMESTAMP__";
  }
  return NULL;
}
