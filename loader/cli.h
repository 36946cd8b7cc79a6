/* loader/cli.h -- shared by the parts of the t4a-gpu program. */
#ifndef T4A_LOADER_CLI_H
#define T4A_LOADER_CLI_H

#include "t4a/gpu_loader.h"

/* Exit status (man t4a-gpu, README.md). */
enum {
  EXIT_USABLE = 0,    /* info: usable backend with a device; selftest: every check passed */
  EXIT_FAILED = 1,    /* selftest: a check failed (printed) */
  EXIT_USAGE = 2,     /* usage error */
  EXIT_NOBACKEND = 3, /* the backend could not be found or loaded (ENOBACKEND, EABI) */
  EXIT_UNUSABLE = 4   /* the backend loaded but cannot be used here (reason printed) */
};

typedef struct options {
  const char *backend; /* --backend, NULL = the default */
  int json;            /* --json */
  int device;          /* --device, -1 = every device */
} options;

/* Prints s as a JSON string literal. */
void t4a__cli_json_str(const char *s);

/* The calling thread's last failure detail in backend t ("" when none). */
const char *t4a__cli_backend_error(const t4a_gpu_backend_v1 *t);

/* t4a-gpu selftest. */
int t4a__cli_selftest(const options *o);

#endif
