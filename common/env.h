/* common/env.h -- environment access that respects setuid/setgid.
 *
 * Every environment variable t4a reads goes through t4a__getenv: in a
 * process running with elevated privileges (AT_SECURE, or real and
 * effective ids differing) it returns NULL, so an unprivileged user cannot
 * make a privileged program load a library of their choosing. */
#ifndef T4A_COMMON_ENV_H
#define T4A_COMMON_ENV_H

#include <stdbool.h>
#include <stddef.h>

/* NULL when unset or when the process is privileged (see above). */
const char *t4a__getenv(const char *name);

/* t4a__getenv for a value that must fit a `size`-byte buffer (a path). *value
 * is NULL when the variable is unset, empty or ignored. A value of `size`
 * bytes or more is refused: `status` is returned with a message naming the
 * variable, and *value stays NULL. Never truncate such a value instead: a
 * cut path can name another file or directory (issue #19). */
int t4a__getenv_path(const char *name, size_t size, int status, const char **value);

/* Whether environment overrides are ignored in this process. */
bool t4a__env_is_secure(void);

/* Tests only: -1 = decide from the process (default), 0 = not secure,
 * 1 = secure. Not exported from any shared object. */
void t4a__env_force_secure(int mode);

#endif
