/* common/escape.c -- see escape.h. */
#include "config.h"

#include "common/escape.h"

#include <string.h>

/* Length of the well-formed UTF-8 sequence at s, which has n bytes; 0 when
 * it is not one: a stray continuation byte, an overlong form, a surrogate,
 * a code point above U+10FFFF, or a sequence cut short (RFC 3629). */
static size_t utf8_length(const unsigned char *s, size_t n) {
  unsigned char c = s[0], lo = 0x80, hi = 0xbf;
  size_t len;
  if (c < 0x80)
    return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    lo = c == 0xe0 ? 0xa0 : 0x80; /* no overlongs */
    hi = c == 0xed ? 0x9f : 0xbf; /* no surrogates */
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    lo = c == 0xf0 ? 0x90 : 0x80; /* no overlongs */
    hi = c == 0xf4 ? 0x8f : 0xbf; /* nothing above U+10FFFF */
  } else {
    return 0;
  }
  if (len > n || s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 2; i < len; i++)
    if (s[i] < 0x80 || s[i] > 0xbf)
      return 0;
  return len;
}

/* Writes "\\u00XX" for the code point below 0x100. */
static size_t u_escape(char *out, unsigned cp) {
  static const char hex[] = "0123456789abcdef";
  out[0] = '\\';
  out[1] = 'u';
  out[2] = '0';
  out[3] = '0';
  out[4] = hex[(cp >> 4) & 0xf];
  out[5] = hex[cp & 0xf];
  return 6;
}

/* Writes "\\xNN" for the byte. */
static size_t x_escape(char *out, unsigned char b) {
  static const char hex[] = "0123456789abcdef";
  out[0] = '\\';
  out[1] = 'x';
  out[2] = hex[b >> 4];
  out[3] = hex[b & 0xf];
  return 4;
}

size_t t4a__escape(char *dst, size_t size, const char *src, size_t max, t4a__escape_mode mode) {
  if (size == 0)
    return 0;
  const unsigned char *s = (const unsigned char *)src;
  const int json = mode == T4A__ESCAPE_JSON;
  size_t n = strnlen(src, max), i = 0, o = 0;
  while (i < n) {
    char piece[8]; /* one character's output, at most 6 bytes */
    size_t len = 0, used = utf8_length(s + i, n - i);
    unsigned char c = s[i];
    if (used == 0) { /* invalid: replaced (JSON) or shown (text) byte by byte */
      used = 1;
      if (json) {
        static const char replacement[6] = {'\\', 'u', 'f', 'f', 'f', 'd'}; /* U+FFFD */
        memcpy(piece, replacement, sizeof replacement);
        len = sizeof replacement;
      } else {
        len = x_escape(piece, c);
      }
    } else if (used == 1 && (c < 0x20 || c == 0x7f)) {
      const char *name = c == '\n' ? "n" : c == '\r' ? "r" : c == '\t' ? "t" : NULL;
      if (json) {
        len = u_escape(piece, c);
      } else if (name) {
        piece[0] = '\\';
        piece[1] = name[0];
        len = 2;
      } else {
        len = x_escape(piece, c);
      }
    } else if (used == 1 && (c == '\\' || (json && c == '"'))) {
      piece[0] = '\\';
      piece[1] = (char)c;
      len = 2;
    } else if (used == 2 && c == 0xc2 && s[i + 1] < 0xa0) { /* C1: U+0080 .. U+009F */
      len = u_escape(piece, s[i + 1]);
    } else {
      memcpy(piece, s + i, used);
      len = used;
    }
    if (len >= size - o) /* keep room for the NUL */
      break;
    memcpy(dst + o, piece, len);
    o += len;
    i += used;
  }
  dst[o] = '\0';
  return i;
}

void t4a__escape_fput(FILE *f, const char *src, size_t max, t4a__escape_mode mode) {
  char buf[256];
  size_t n = strnlen(src, max);
  while (n > 0) {
    size_t used = t4a__escape(buf, sizeof buf, src, n, mode); /* > 0: buf fits any piece */
    fputs(buf, f);
    src += used;
    n -= used;
  }
}
