/* plugin-host/cxxopts.c -- the NVRTC options a consumer passes to
 * artifact_compile, as arguments of the host C++ compiler (kernel.h).
 *
 * Each option is one string, as NVRTC takes them:
 *   passed on: -D<x> and --define-macro=<x>, -U<x> and --undefine-macro=<x>,
 *     -I<dir> and --include-path=<dir>, -include=<h> and --pre-include=<h>
 *     (as -include <h>);
 *   mapped: --use_fast_math -> -ffast-math; --fmad=false -> -ffp-contract=off
 *     (true: -ffp-contract=fast); -G / --device-debug -> -O0 -g; -w /
 *     --disable-warnings -> -w; --Werror=all-warnings -> -Werror; -std=c++03
 *     .. c++17 -> -std=c++17 (the prelude needs C++17; the older dialects are
 *     subsets for kernel code), -std=c++20 -> -std=c++20;
 *   ignored, since they choose what a CPU has no counterpart for: the target
 *     (-arch, --gpu-architecture), -default-device and
 *     --device-as-default-execution-space (every function is a host function
 *     here), -lineinfo / --generate-line-info, --maxrregcount, --ftz,
 *     --prec-div, --prec-sqrt, --restrict, --extra-device-vectorization,
 *     -dopt, the lambda and constexpr extensions, --no-source-include,
 *     -rdc=false, --pch, --minimal, -ewp;
 *   refused with T4A_ECOMPILE and a log line: what the host cannot honour
 *     (-rdc=true and -dc: device code linked across modules;
 *     --create-pch / --use-pch: NVRTC's precompiled headers);
 *   anything else is not an option this backend knows: T4A_EINVAL and a log
 *     line, as NVRTC answers an unknown option (NVRTC_ERROR_INVALID_OPTION). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "plugin-host/kernel.h"

static bool has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

/* The option without its leading dashes ("--fmad=false" and "-fmad=false"
 * alike). */
static const char *bare(const char *o) {
  while (*o == '-')
    o++;
  return o;
}

static bool add(t4a__cxxargs *a, const char *s) {
  if (a->count >= T4A__CXXARGS_MAX)
    return false;
  a->v[a->count++] = s;
  return true;
}

/* Adds a copy of p followed by s (owned by a). */
static bool add_joined(t4a__cxxargs *a, const char *p, const char *s) {
  if (a->owned_count >= T4A__CXXARGS_MAX)
    return false;
  size_t n = strlen(p) + strlen(s) + 1;
  char *c = malloc(n);
  if (!c)
    return false;
  snprintf(c, n, "%s%s", p, s);
  a->owned[a->owned_count++] = c;
  return add(a, c);
}

void t4a__cxxargs_free(t4a__cxxargs *a) {
  for (uint32_t i = 0; i < a->owned_count; i++)
    free(a->owned[i]);
  a->owned_count = a->count = 0;
}

/* A log line for option o of the request named `name`. */
static void note(char **log, const char *name, const char *o, const char *why) {
  size_t old = *log ? strlen(*log) : 0;
  size_t n = old + strlen(name) + strlen(o) + strlen(why) + 64;
  char *p = realloc(*log, n);
  if (!p)
    return; /* the status still says it; only the line is lost */
  snprintf(p + old, n - old, "%s: error: option '%s' %s\n", name, o, why);
  *log = p;
}

static const char *const ignored[] = {"arch=",
                                      "gpu-architecture=",
                                      "default-device",
                                      "device-as-default-execution-space",
                                      "lineinfo",
                                      "generate-line-info",
                                      "maxrregcount=",
                                      "ftz=",
                                      "prec-div=",
                                      "prec-sqrt=",
                                      "restrict",
                                      "extra-device-vectorization",
                                      "dopt=",
                                      "expt-relaxed-constexpr",
                                      "expt-extended-lambda",
                                      "extended-lambda",
                                      "no-source-include",
                                      "relocatable-device-code=false",
                                      "rdc=false",
                                      "pch",
                                      "minimal",
                                      "ewp",
                                      "extensible-whole-program",
                                      "builtin-move-forward=",
                                      "builtin-initializer-list=",
                                      "Wno-deprecated-gpu-targets"};

/* Maps one option; 0, T4A_ECOMPILE (cannot be honoured) or T4A_EINVAL
 * (unknown), with a log line for either. */
static int map_one(t4a__cxxargs *a, const char *name, const char *o, char **log) {
  const char *b = bare(o);
  bool ok = true;
  if (o[0] != '-') {
    note(log, name, o, "is not an option (options start with '-'); pass NVRTC options only");
    return T4A_EINVAL;
  }
  if (has_prefix(o, "-D") && o[2])
    ok = add(a, o);
  else if (has_prefix(b, "define-macro=") && b[13])
    ok = add_joined(a, "-D", b + 13);
  else if (has_prefix(o, "-U") && o[2])
    ok = add(a, o);
  else if (has_prefix(b, "undefine-macro=") && b[15])
    ok = add_joined(a, "-U", b + 15);
  else if (has_prefix(o, "-I") && o[2])
    ok = add(a, o);
  else if (has_prefix(b, "include-path=") && b[13])
    ok = add_joined(a, "-I", b + 13);
  else if ((has_prefix(b, "include=") && b[8]) || (has_prefix(b, "pre-include=") && b[12]))
    ok = add(a, "-include") && add(a, strchr(b, '=') + 1);
  else if (strcmp(b, "use_fast_math") == 0)
    ok = add(a, "-ffast-math");
  else if (strcmp(b, "fmad=false") == 0)
    ok = add(a, "-ffp-contract=off");
  else if (strcmp(b, "fmad=true") == 0)
    ok = add(a, "-ffp-contract=fast");
  else if (strcmp(b, "G") == 0 || strcmp(b, "device-debug") == 0)
    ok = add(a, "-O0") && add(a, "-g");
  else if (strcmp(b, "w") == 0 || strcmp(b, "disable-warnings") == 0)
    ok = add(a, "-w");
  else if (strcmp(b, "Werror=all-warnings") == 0)
    ok = add(a, "-Werror");
  else if (has_prefix(b, "std=")) {
    const char *v = b + 4;
    if (strcmp(v, "c++03") == 0 || strcmp(v, "c++11") == 0 || strcmp(v, "c++14") == 0 ||
        strcmp(v, "c++17") == 0)
      ok = add(a, "-std=c++17");
    else if (strcmp(v, "c++20") == 0)
      ok = add(a, "-std=c++20");
    else {
      note(log, name, o, "names a dialect the host backend does not know; use -std=c++17 or c++20");
      return T4A_EINVAL;
    }
  } else if (strcmp(b, "rdc=true") == 0 || strcmp(b, "relocatable-device-code=true") == 0 ||
             strcmp(b, "dc") == 0) {
    note(log, name, o,
         "is not supported by the host backend: device code is not linked across modules; "
         "compile each module whole (-rdc=false)");
    return T4A_ECOMPILE;
  } else if (has_prefix(b, "create-pch") || has_prefix(b, "use-pch") || has_prefix(b, "pch-dir")) {
    note(log, name, o,
         "is not supported by the host backend (NVRTC's precompiled headers); drop it");
    return T4A_ECOMPILE;
  } else {
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) {
      size_t n = strlen(ignored[i]);
      if (ignored[i][n - 1] == '=' ? has_prefix(b, ignored[i]) : strcmp(b, ignored[i]) == 0)
        return T4A_OK;
    }
    note(log, name, o,
         "is not an NVRTC option the host backend knows; check the spelling (the host backend "
         "takes the NVRTC options, not the host compiler's)");
    return T4A_EINVAL;
  }
  if (!ok) {
    note(log, name, o, "could not be passed on (too many options or out of host memory)");
    return T4A_ENOMEM;
  }
  return T4A_OK;
}

int t4a__cxxargs_map(t4a__cxxargs *a, const char *name, const char *const *options, uint32_t count,
                     char **log) {
  int rc = T4A_OK;
  for (uint32_t i = 0; i < count; i++) {
    int r = map_one(a, name, options[i], log);
    if (r && (!rc || r == T4A_EINVAL))
      rc = r; /* every bad option gets its line; an unknown one decides the status */
  }
  return rc;
}
