/* common/env.c -- see env.h. */
#include "config.h"

#include "common/env.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>
#ifdef HAVE_GETAUXVAL
#include <sys/auxv.h>
#endif

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
