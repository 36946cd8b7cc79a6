/* common/log.h -- optional diagnostics on stderr.
 *
 * Off by default: t4a never prints unless T4A_LOG is set to error, warn,
 * info or debug (each includes the levels before it). One line per event:
 *   t4a[<component>] <level>: <message>
 * with control characters and invalid UTF-8 in the message escaped
 * (common/escape.h), so that no value can forge or split a line.
 * T4A_LOG is read once per shared object, at its first log call. */
#ifndef T4A_COMMON_LOG_H
#define T4A_COMMON_LOG_H

enum { T4A__LOG_ERROR = 1, T4A__LOG_WARN, T4A__LOG_INFO, T4A__LOG_DEBUG };

/* Whether messages of `level` are printed. */
int t4a__log_enabled(int level);

void t4a__log(int level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Parses a T4A_LOG value; 0 (off) for NULL, "" or unknown words. */
int t4a__log_parse(const char *value);

#endif
