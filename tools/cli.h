/* tools/cli.h -- shared by the parts of the t4a-gpu program: main.c parses
 * and dispatches to the commands (info.c, selftest.c, conform.c), which print
 * with output.c. No file calls one above it. */
#ifndef T4A_TOOLS_CLI_H
#define T4A_TOOLS_CLI_H

#include "t4a/gpu_loader.h"

/* Exit status (man t4a-gpu, README.md). */
enum {
  EXIT_USABLE = 0, /* info: usable backend with a device; selftest, conform: every check passed */
  EXIT_FAILED = 1, /* selftest, conform: a check failed (printed) */
  EXIT_USAGE = 2,  /* usage error */
  EXIT_NOBACKEND = 3, /* the backend could not be found or loaded (ENOBACKEND, EABI) */
  EXIT_UNUSABLE = 4   /* the backend loaded but cannot be used here (reason printed) */
};

typedef struct options {
  const char *backend; /* --backend, NULL = the default */
  int json;            /* --json */
  int device;          /* --device, -1 = every device */
} options;

/* Longest string t4a-gpu prints (bytes); loader strings are shorter. */
#define T4A__CLI_STR_MAX 4096

/* Prints s as a JSON string literal: escaped, valid UTF-8 whatever s holds
 * (common/escape.h). */
void t4a__cli_json_str(const char *s);

/* s made safe for the terminal (common/escape.h): control characters and
 * invalid UTF-8 escaped. In one of four static buffers used in turn, so at
 * most four per printf (t4a-gpu is single-threaded). */
const char *t4a__cli_text(const char *s);

/* The calling thread's last failure detail in backend t ("" when none),
 * copied with a bound. */
const char *t4a__cli_backend_error(const t4a_gpu_backend_v1 *t);

/* The plugin's info slots: the struct zeroed and sized before the call, and
 * every string array NUL-terminated after it, since a plugin may fill one
 * completely. Return the slot's status. */
int t4a__cli_backend_info(const t4a_gpu_backend_v1 *t, t4a_backend_info *info);
int t4a__cli_device_info(const t4a_gpu_backend_v1 *t, int32_t ordinal, t4a_device_info *info);
int t4a__cli_compiler_info(const t4a_gpu_backend_v1 *t, t4a_compiler_info *info);

/* The commands: t4a-gpu info (info.c), t4a-gpu selftest (selftest.c),
 * t4a-gpu conform (conform.c and the conform_*.c files below it). */
int t4a__cli_info(const options *o);
int t4a__cli_selftest(const options *o);
int t4a__cli_conform(const options *o);

#endif
