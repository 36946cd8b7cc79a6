/* common/error.c -- see error.h. */
#include "config.h"

#include "common/error.h"
#include "common/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local t4a__error t4a__last_error;

static int record(int status, int64_t code, const char *name, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

static int record(int status, int64_t code, const char *name, const char *fmt, va_list ap) {
  t4a__error *e = &t4a__last_error;
  e->status = status;
  e->native_code = code;
  e->native_name[0] = '\0';
  if (name)
    t4a__strcopy(e->native_name, sizeof e->native_name, name);
  int n = vsnprintf(e->message, sizeof e->message, fmt, ap);
  if (n >= 0 && name && *name && (size_t)n < sizeof e->message)
    snprintf(e->message + n, sizeof e->message - (size_t)n, " [%s=%lld]", name, (long long)code);
  return status;
}

void t4a__record(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record(status, 0, NULL, fmt, ap);
  va_end(ap);
}

void t4a__record_native(int status, int64_t native_code, const char *native_name, const char *fmt,
                        ...) {
  va_list ap;
  va_start(ap, fmt);
  record(status, native_code, native_name, fmt, ap);
  va_end(ap);
}

const t4a__error *t4a__error_get(void) { return &t4a__last_error; }

void t4a__error_set(const t4a__error *e) { memcpy(&t4a__last_error, e, sizeof *e); }
