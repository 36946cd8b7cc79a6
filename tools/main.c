/* tools/main.c -- t4a-gpu, the loader's command-line front end: arguments and
 * dispatch to the commands (info.c, selftest.c, conform.c).
 *
 *   t4a-gpu info     [--backend NAME|PATH] [--json]
 *   t4a-gpu selftest [--backend NAME|PATH] [--device N] [--json]
 *   t4a-gpu conform  [--backend NAME|PATH] [--device N] [--json]
 *   t4a-gpu bench
 *
 * Exit status (man t4a-gpu, README.md): see tools/cli.h. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t4a-paths.h"
#include "tools/cli.h"

static void usage(FILE *f) {
  fputs("usage: t4a-gpu info     [--backend NAME|PATH] [--json]\n"
        "       t4a-gpu selftest [--backend NAME|PATH] [--device N] [--json]\n"
        "       t4a-gpu conform  [--backend NAME|PATH] [--device N] [--json]\n"
        "       t4a-gpu bench\n"
        "       t4a-gpu help | --help | --version\n"
        "exit status: 0 usable (info) or passed (selftest, conform), 1 a check failed,\n"
        "             2 usage error, 3 backend not found or invalid,\n"
        "             4 backend present but unusable here (reason printed)\n",
        f);
}

/* Which options a command takes. */
static int takes(const char *cmd, const char *opt) {
  int checks = strcmp(cmd, "selftest") == 0 || strcmp(cmd, "conform") == 0;
  if (strcmp(opt, "--device") == 0)
    return checks;
  return checks || strcmp(cmd, "info") == 0; /* --backend, --json */
}

/* "t4a-gpu: <what>" and the usage on stderr; the usage error status. */
static int usage_error(const char *what) {
  fprintf(stderr, "t4a-gpu: %s\n", what);
  usage(stderr);
  return EXIT_USAGE;
}

int main(int argc, char **argv) {
  options o = {NULL, 0, -1};
  const char *cmd = NULL;
  for (int i = 1; i < argc; i++) /* the command first, wherever it stands */
    if (argv[i][0] != '-' && (i == 1 || (strcmp(argv[i - 1], "--backend") != 0 &&
                                         strcmp(argv[i - 1], "--device") != 0))) {
      cmd = argv[i];
      break;
    }
  if (!cmd)
    cmd = "info";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a == cmd)
      continue;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return EXIT_USABLE;
    } else if (strcmp(a, "--version") == 0) {
      printf("t4a-gpu %s\n", PACKAGE_VERSION);
      return EXIT_USABLE;
    } else if (strcmp(a, "--json") == 0 || strcmp(a, "--backend") == 0 ||
               strcmp(a, "--device") == 0) {
      if (!takes(cmd, a))
        return usage_error(strcmp(a, "--device") == 0
                               ? "--device: only selftest and conform take it (info lists every "
                                 "device)"
                               : "only info, selftest and conform take --backend and --json");
      if (strcmp(a, "--json") == 0) {
        o.json = 1;
        continue;
      }
      if (i + 1 >= argc || argv[i + 1][0] == '\0')
        return usage_error(strcmp(a, "--backend") == 0
                               ? "--backend needs a value: a backend name (cuda) or a plugin path"
                               : "--device needs a value: a device ordinal (0, 1, ...)");
      const char *v = argv[++i];
      if (strcmp(a, "--backend") == 0) {
        o.backend = v;
        continue;
      }
      char *end;
      long d = strtol(v, &end, 10);
      if (*end || end == v || d < 0 || d > 1023) {
        fprintf(stderr, "t4a-gpu: --device takes a device ordinal (0, 1, ...), not '%s'\n",
                t4a__cli_text(v));
        return EXIT_USAGE;
      }
      o.device = (int)d;
    } else {
      fprintf(stderr, "t4a-gpu: unexpected argument '%s'\n", t4a__cli_text(a));
      usage(stderr);
      return EXIT_USAGE;
    }
  }
  if (strcmp(cmd, "info") == 0)
    return t4a__cli_info(&o);
  if (strcmp(cmd, "selftest") == 0)
    return t4a__cli_selftest(&o);
  if (strcmp(cmd, "conform") == 0)
    return t4a__cli_conform(&o);
  if (strcmp(cmd, "help") == 0) {
    usage(stdout);
    return EXIT_USABLE;
  }
  if (strcmp(cmd, "bench") == 0) {
    printf("t4a-gpu bench: the benchmarks pair the runtime with the raw CUDA Driver API in one\n"
           "process; they live in the source tree, not in the installed program:\n"
           "  ./configure && make bench BENCH_ARGS=\"--json results.json\"   (on a GPU host)\n"
           "The measured results are in %s/performance.md.\n",
           T4A_DOC_DIR);
    return EXIT_USABLE;
  }
  fprintf(stderr, "t4a-gpu: unknown command '%s'\n", t4a__cli_text(cmd));
  usage(stderr);
  return EXIT_USAGE;
}
