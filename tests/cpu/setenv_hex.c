/* tests/cpu/setenv_hex.c -- an LD_PRELOAD module for test_cli: it sets, inside
 * the t4a-gpu program itself, an environment variable whose value arrives
 * hex-encoded in T4A_TEST_SETENV_HEX ("NAME=68657820..."), before main runs.
 *
 * Why: test_cli checks that t4a-gpu escapes hostile environment values,
 * invalid UTF-8 included. Some CI sandboxes refuse to start a process whose
 * environment holds invalid UTF-8 (the exec is reported through a protocol
 * that requires UTF-8), so such a value cannot be handed across exec; the
 * program is given it here instead. Only the program named *t4a-gpu acts on it
 * (the libtool wrapper and the shell that popen starts inherit LD_PRELOAD as
 * well, and must not carry the decoded value across their own execs). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

__attribute__((constructor)) static void setenv_hex(void) {
  const char *prog = program_invocation_short_name;
  size_t plen = strlen(prog);
  if (plen < 7 || strcmp(prog + plen - 7, "t4a-gpu") != 0)
    return;
  const char *spec = getenv("T4A_TEST_SETENV_HEX");
  if (!spec)
    return;
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec)
    abort();
  char name[128], value[4096];
  size_t nlen = (size_t)(eq - spec), hlen = strlen(eq + 1);
  if (nlen >= sizeof name || hlen % 2 || hlen / 2 >= sizeof value)
    abort();
  memcpy(name, spec, nlen);
  name[nlen] = '\0';
  for (size_t i = 0; i < hlen / 2; i++) {
    int hi = hexval(eq[1 + 2 * i]), lo = hexval(eq[2 + 2 * i]);
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
      abort();
    value[i] = (char)(hi << 4 | lo);
  }
  value[hlen / 2] = '\0';
  if (setenv(name, value, 1) != 0 || unsetenv("T4A_TEST_SETENV_HEX") != 0)
    abort();
}
