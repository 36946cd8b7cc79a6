/* common/escape.h -- untrusted text made safe to print.
 *
 * File names, environment values and strings from plugins end up in log
 * lines (T4A_LOG), on the terminal (t4a-gpu) and in JSON (t4a-gpu --json).
 * Printed raw, a newline forges a log line, an escape sequence drives the
 * terminal, and a control byte or invalid UTF-8 makes the JSON invalid
 * (issue #19). Such text is printed only through t4a__escape. */
#ifndef T4A_COMMON_ESCAPE_H
#define T4A_COMMON_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

typedef enum t4a__escape_mode {
  /* For a log line or a terminal: backslash as \\, control characters as
   * \n \r \t or \xNN (C0, DEL) and \u0080 .. \u009f (C1), each byte of
   * invalid UTF-8 as \xNN; valid UTF-8 text unchanged. */
  T4A__ESCAPE_TEXT,
  /* For the inside of a JSON string: " and \ escaped, control characters
   * (C0, DEL, C1) as \u00XX, each byte of invalid UTF-8 as \ufffd (U+FFFD);
   * the result is always valid UTF-8. */
  T4A__ESCAPE_JSON
} t4a__escape_mode;

/* Bytes a buffer needs for n input bytes escaped in either mode, NUL
 * included (at most 6 output bytes per input byte). */
#define T4A__ESCAPE_SIZE(n) (6 * (size_t)(n) + 1)

/* Escapes src into dst[size] (size >= 7), NUL-terminated. Reads at most max
 * bytes of src, fewer at a NUL: a char array a plugin filled is read only up
 * to its size, terminated or not. Stops before an escape or a character that
 * does not fit, never splitting one. Returns the number of bytes of src
 * consumed (strnlen(src, max) when everything fit). */
size_t t4a__escape(char *dst, size_t size, const char *src, size_t max, t4a__escape_mode mode);

/* Writes src (at most max bytes, fewer at a NUL) to f, escaped. */
void t4a__escape_fput(FILE *f, const char *src, size_t max, t4a__escape_mode mode);

#endif
