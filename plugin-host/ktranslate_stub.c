/* plugin-host/ktranslate_stub.c -- TEMPORARY stand-in for the translator
 * (ktranslate.h; the real one, ktranslate.c with the prelude, is built on
 * another branch): the unit is `#line 1 "<name>"` and the source as is, so
 * a source that defines the module symbol itself (a test fixture written
 * in C++ against kernel_abi.h) compiles and loads. Removed when the
 * translator is merged. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin-host/ktranslate.h"
#include "t4a/gpu_backend_v1.h"

int t4a__ktranslate(const char *src, uint64_t size, const char *name, t4a__ktu *out) {
  memset(out, 0, sizeof *out);
  size_t head = strlen(name) + 32;
  out->text = malloc(head + (size_t)size + 2);
  if (!out->text)
    return T4A_ENOMEM;
  int n = snprintf(out->text, head, "#line 1 \"%s\"\n", name);
  memcpy(out->text + n, src, (size_t)size);
  out->text[n + size] = '\n';
  out->text[n + size + 1] = '\0';
  out->size = (uint64_t)n + size + 1;
  return T4A_OK;
}

void t4a__ktu_free(t4a__ktu *t) {
  free(t->text);
  free(t->log);
  memset(t, 0, sizeof *t);
}

const char *t4a__kprelude_id(void) { return "t4a-host-prelude 1 stub"; }
