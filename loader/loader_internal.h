/* loader/loader_internal.h -- shared between the loader's source files and
 * its unit tests. Nothing here is exported from libt4a_gpu. */
#ifndef T4A_LOADER_INTERNAL_H
#define T4A_LOADER_INTERNAL_H

#include <stddef.h>

#include "t4a/gpu_loader.h"

/* Longest path the loader handles. */
#define T4A__PATH_MAX 4096

/* Longest backend name ("cuda"); names are [a-z0-9_]+. */
#define T4A__NAME_MAX 32

/* The search path as the environment makes it: $T4A_GPU_BACKEND_PATH, or
 * the configured plugin directory. Writes a NUL-terminated colon-separated
 * list into buf. A value that does not fit is refused (T4A_EINVAL, buf
 * ""), never truncated. */
int t4a__search_path(char *buf, size_t size);

/* Whether `name` is a valid backend name. */
int t4a__valid_name(const char *name);

/* Finds libt4a_<name>.so in the search path; T4A_ENOBACKEND naming the
 * directories when absent. */
int t4a__find_backend(const char *name, char *path, size_t size);

/* Resolves the default spec: $T4A_GPU_BACKEND when set (and permitted),
 * else "cuda". */
const char *t4a__default_spec(void);

#endif
