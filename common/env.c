/* common/env.c -- see env.h. */
#include "config.h"

#include "common/env.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef HAVE_GETAUXVAL
#include <sys/auxv.h>
#endif

#include "common/error.h"
#include "t4a/gpu_backend_v1.h"

static atomic_int forced = -1;

void t4a__env_force_secure(int mode) { atomic_store(&forced, mode); }

bool t4a__env_is_secure(void) {
  int f = atomic_load(&forced);
  if (f >= 0)
    return f != 0;
#if defined(HAVE_GETAUXVAL) && defined(AT_SECURE)
  if (getauxval(AT_SECURE))
    return true;
#endif
  return getuid() != geteuid() || getgid() != getegid();
}

const char *t4a__getenv(const char *name) {
  if (t4a__env_is_secure())
    return NULL;
  return getenv(name);
}

int t4a__getenv_path(const char *name, size_t size, int status, const char **value) {
  *value = NULL;
  const char *v = t4a__getenv(name);
  if (!v || !*v)
    return T4A_OK;
  size_t n = strlen(v);
  if (n >= size)
    return t4a__fail(status,
                     "%s is %zu bytes long, more than the %zu accepted; shorten it (it is "
                     "refused, not truncated: a shortened path could name another file)",
                     name, n, size - 1);
  *value = v;
  return T4A_OK;
}
