/* common/log.c -- see log.h. */
#include "config.h"

#include "common/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/env.h"
#include "common/escape.h"

static atomic_int threshold = -1; /* -1: not read yet */

int t4a__log_parse(const char *v) {
  if (!v || !*v)
    return 0;
  static const char *const names[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; i++)
    if (strcasecmp(v, names[i]) == 0)
      return i + 1;
  /* a typo must not silently turn logging off: say so, once per component */
  char safe[T4A__ESCAPE_SIZE(64)];
  t4a__escape(safe, sizeof safe, v, 64, T4A__ESCAPE_TEXT);
  fprintf(stderr,
          "t4a: T4A_LOG='%s' is not one of error, warn, info, debug (any case); logging stays "
          "off\n",
          safe);
  return 0;
}

int t4a__log_enabled(int level) {
  int t = atomic_load_explicit(&threshold, memory_order_relaxed);
  if (t < 0) {
    t = t4a__log_parse(t4a__getenv("T4A_LOG"));
    atomic_store(&threshold, t);
  }
  return level <= t;
}

void t4a__log(int level, const char *component, const char *fmt, ...) {
  if (!t4a__log_enabled(level))
    return;
  static const char *const names[] = {"", "error", "warn", "info", "debug"};
  char line[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  /* Messages carry file names, environment values and plugin strings:
   * escaped, an event stays one line and cannot drive the terminal. */
  char safe[T4A__ESCAPE_SIZE(sizeof line)];
  t4a__escape(safe, sizeof safe, line, sizeof line, T4A__ESCAPE_TEXT);
  fprintf(stderr, "t4a[%s] %s: %s\n", component, names[level], safe);
}
