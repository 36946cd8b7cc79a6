/* common/error.h -- the thread-local "last error" of a library.
 *
 * Each shared object that compiles this file (the loader, each plugin) gets
 * its own thread-local record: failures in one never overwrite another's. A
 * message has the form "<what failed>; <what to do>". */
#ifndef T4A_COMMON_ERROR_H
#define T4A_COMMON_ERROR_H

#include <stdint.h>

#define T4A__ERROR_MESSAGE_MAX 1024
#define T4A__ERROR_NAME_MAX 64

typedef struct t4a__error {
  int status;
  int64_t native_code;
  char native_name[T4A__ERROR_NAME_MAX];
  char message[T4A__ERROR_MESSAGE_MAX];
} t4a__error;

/* Records status and the formatted message for this thread. */
void t4a__record(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* As t4a__record, with a native (driver/compiler) code and its name. The
 * message gets " [NAME=code]" appended. */
void t4a__record_native(int status, int64_t native_code, const char *native_name, const char *fmt,
                        ...) __attribute__((format(printf, 4, 5)));

/* Record a failure and evaluate to its status, so that callers write
 * `return t4a__fail(T4A_EINVAL, "...")`. Macros, so that static analysis
 * sees the (non-zero) value at each call site. `status` must be free of
 * side effects. */
static inline int t4a__status(int status) { return status; }
#define t4a__fail(status, ...) (t4a__record((status), __VA_ARGS__), t4a__status(status))
#define t4a__fail_native(status, code, name, ...)                                                  \
  (t4a__record_native((status), (code), (name), __VA_ARGS__), t4a__status(status))

/* The calling thread's record (never NULL). */
const t4a__error *t4a__error_get(void);

/* Replaces the calling thread's record with a copy of *e. */
void t4a__error_set(const t4a__error *e);

#endif
