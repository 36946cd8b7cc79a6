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
        "       t4a-gpu help [COMMAND] | COMMAND --help | --help | --version\n"
        "exit status: 0 usable (info) or passed (selftest, conform), 1 a check failed,\n"
        "             2 usage error, 3 backend not found or invalid,\n"
        "             4 backend present but unusable here (reason printed)\n",
        f);
}

/* Each command's own help: t4a-gpu CMD --help, t4a-gpu help CMD. */
static const struct {
  const char *name, *text;
} command_help[] = {
    {"info", "usage: t4a-gpu info [--backend NAME|PATH] [--json]\n"
             "The default command. Prints the loader's version and backend ABI, the plugin search\n"
             "path and the backends found there, then opens the chosen backend and prints its\n"
             "version and file, whether it can be used here (the reason when not), the driver,\n"
             "NVRTC, every device and, with two or more, the peer-access matrix.\n"
             "  --backend NAME|PATH  a backend name (cuda) or a plugin file (default:\n"
             "                       $T4A_GPU_BACKEND, else cuda)\n"
             "  --json               one JSON document on stdout instead of text\n"
             "exit status: 0 usable (initialised, at least one device), 2 usage error, 3 backend\n"
             "             not found or invalid, 4 backend present but unusable here (reason\n"
             "             printed)\n"},
    {"selftest",
     "usage: t4a-gpu selftest [--backend NAME|PATH] [--device N] [--json]\n"
     "An end-to-end check on every device (or device N): runtime, device and pinned\n"
     "memory, pageable and pinned copies both ways, an NVRTC-compiled axpy kernel,\n"
     "launch, seal and witness wait, the result against the CPU, and the release of\n"
     "everything. One line per step and device (the backend's reason when one fails).\n"
     "  --backend NAME|PATH  a backend name (cuda) or a plugin file (default:\n"
     "                       $T4A_GPU_BACKEND, else cuda)\n"
     "  --device N           only the device with ordinal N (as t4a-gpu info numbers them)\n"
     "  --json               one JSON document on stdout instead of text\n"
     "exit status: 0 every check passed, 1 a check failed, 2 usage error, 3 backend not\n"
     "             found or invalid, 4 backend present but unusable here (reason printed)\n"},
    {"conform",
     "usage: t4a-gpu conform [--backend NAME|PATH] [--device N] [--json]\n"
     "The conformance suite of the backend ABI: about fifty checks, each a promise of\n"
     "<t4a/gpu_backend_v1.h>, made through the backend's public table only, so that any\n"
     "backend can validate itself against the header. One line per check: PASS name,\n"
     "SKIP name: why, or FAIL name: what went wrong (and the header's words), then the\n"
     "counts and the slots the backend leaves NULL (their checks are skipped).\n"
     "  --backend NAME|PATH  a backend name (cuda) or a plugin file, e.g. a vendor's\n"
     "                       /path/to/libt4a_mybackend.so (default: $T4A_GPU_BACKEND, else cuda)\n"
     "  --device N           the device to check (default 0)\n"
     "  --json               one JSON document on stdout instead of text\n"
     "exit status: 0 every check that ran passed (skips allowed), 1 a check failed,\n"
     "             2 usage error, 3 backend not found or invalid, 4 backend present but\n"
     "             unusable here (the checks that need no init still run and are printed)\n"},
    {"bench",
     "usage: t4a-gpu bench\n"
     "Prints where the benchmarks are: they pair the runtime with the raw CUDA Driver API\n"
     "and are built and run from the source tree (make bench, on a GPU host); the\n"
     "measured results are in the installed documentation.\n"
     "exit status: 0\n"},
    {"help",
     "usage: t4a-gpu help [COMMAND]\n"
     "Prints the usage of every command, or COMMAND's own help (as t4a-gpu COMMAND --help).\n"
     "exit status: 0, or 2 for an unknown COMMAND\n"},
};

/* Prints command cmd's help; 0, or -1 when there is no such command. */
static int command_usage(const char *cmd, FILE *f) {
  for (size_t i = 0; i < sizeof command_help / sizeof command_help[0]; i++)
    if (strcmp(cmd, command_help[i].name) == 0) {
      fputs(command_help[i].text, f);
      fputs("(man t4a-gpu has the details)\n", f);
      return 0;
    }
  return -1;
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
  int named = cmd != NULL; /* a command was given (else info, and --help is the general one) */
  if (!cmd)
    cmd = "info";
  const char *topic = NULL; /* t4a-gpu help COMMAND */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a == cmd)
      continue;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      if (named && command_usage(cmd, stdout) == 0)
        return EXIT_USABLE;
      usage(stdout);
      return EXIT_USABLE;
    } else if (strcmp(cmd, "help") == 0 && a[0] != '-' && !topic) {
      topic = a;
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
    if (!topic) {
      usage(stdout);
      return EXIT_USABLE;
    }
    if (command_usage(topic, stdout) == 0)
      return EXIT_USABLE;
    fprintf(stderr, "t4a-gpu: help: unknown command '%s'\n", t4a__cli_text(topic));
    usage(stderr);
    return EXIT_USAGE;
  }
  if (strcmp(cmd, "bench") == 0) {
    printf("t4a-gpu bench: the benchmarks pair the runtime with the raw CUDA Driver API in one\n"
           "process; they live in the source tree, not in the installed program:\n"
           "  ./configure && make bench BENCH_ARGS=\"--json results.json\"   (on a GPU host)\n"
           "The measured results are in %s/docs/performance.md.\n",
           T4A_DOC_DIR);
    return EXIT_USABLE;
  }
  fprintf(stderr, "t4a-gpu: unknown command '%s'\n", t4a__cli_text(cmd));
  usage(stderr);
  return EXIT_USAGE;
}
