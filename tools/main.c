/* tools/main.c -- t4a-gpu, the loader's command-line front end: arguments and
 * dispatch to the commands (info.c, selftest.c).
 *
 *   t4a-gpu info     [--backend NAME|PATH] [--json]
 *   t4a-gpu selftest [--backend NAME|PATH] [--device N] [--json]
 *   t4a-gpu bench
 *
 * Exit status (man t4a-gpu, README.md): see tools/cli.h. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static void usage(FILE *f) {
  fputs("usage: t4a-gpu info     [--backend NAME|PATH] [--json]\n"
        "       t4a-gpu selftest [--backend NAME|PATH] [--device N] [--json]\n"
        "       t4a-gpu bench\n"
        "       t4a-gpu --version | --help\n"
        "exit status: 0 usable (info) or passed (selftest), 1 a selftest check failed,\n"
        "             2 usage error, 3 backend not found or invalid,\n"
        "             4 backend present but unusable here (reason printed)\n",
        f);
}

int main(int argc, char **argv) {
  options o = {NULL, 0, -1};
  const char *cmd = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) {
      o.json = 1;
    } else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      o.backend = argv[++i];
    } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      char *end;
      long d = strtol(argv[++i], &end, 10);
      if (*end || end == argv[i] || d < 0 || d > 1023) {
        fprintf(stderr, "t4a-gpu: --device takes a device ordinal (0, 1, ...), not '%s'\n",
                argv[i]);
        return EXIT_USAGE;
      }
      o.device = (int)d;
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return EXIT_USABLE;
    } else if (strcmp(argv[i], "--version") == 0) {
      printf("t4a-gpu %s\n", PACKAGE_VERSION);
      return EXIT_USABLE;
    } else if (!cmd && argv[i][0] != '-') {
      cmd = argv[i];
    } else {
      fprintf(stderr, "t4a-gpu: unexpected argument '%s'\n", argv[i]);
      usage(stderr);
      return EXIT_USAGE;
    }
  }
  if (!cmd || strcmp(cmd, "info") == 0)
    return t4a__cli_info(&o);
  if (strcmp(cmd, "selftest") == 0)
    return t4a__cli_selftest(&o);
  if (strcmp(cmd, "bench") == 0) {
    puts("t4a-gpu bench: the benchmarks pair the runtime with the raw CUDA Driver API in one\n"
         "process; they live in the source tree, not in the installed program:\n"
         "  ./configure && make bench BENCH_ARGS=\"--json results.json\"   (on a GPU host)\n"
         "docs/performance.md describes the cases and has the H200 results.");
    return EXIT_USABLE;
  }
  fprintf(stderr, "t4a-gpu: unknown command '%s'\n", cmd);
  usage(stderr);
  return EXIT_USAGE;
}
