/* loader/cli.c -- t4a-gpu, the loader's command-line front end.
 *
 *   t4a-gpu info     [--backend NAME|PATH] [--json]
 *   t4a-gpu selftest [--backend NAME|PATH] [--device N] [--json]
 *   t4a-gpu bench
 *
 * Exit status (man t4a-gpu, README.md): see loader/cli.h. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/escape.h"
#include "common/str.h"
#include "loader/cli.h"

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

void t4a__cli_json_str(const char *s) {
  putchar('"');
  t4a__escape_fput(stdout, s ? s : "", T4A__CLI_STR_MAX, T4A__ESCAPE_JSON);
  putchar('"');
}

const char *t4a__cli_text(const char *s) {
  static char buf[4][T4A__ESCAPE_SIZE(T4A__CLI_STR_MAX)];
  static unsigned next;
  char *b = buf[next++ % 4];
  t4a__escape(b, sizeof buf[0], s ? s : "", T4A__CLI_STR_MAX, T4A__ESCAPE_TEXT);
  return b;
}

int t4a__cli_backend_info(const t4a_gpu_backend_v1 *t, t4a_backend_info *info) {
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  int rc = t->get_info(info);
  t4a__terminate(info->name);
  t4a__terminate(info->version);
  t4a__terminate(info->driver_path);
  return rc;
}

int t4a__cli_device_info(const t4a_gpu_backend_v1 *t, int32_t ordinal, t4a_device_info *info) {
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  int rc = t->device_info(ordinal, info);
  t4a__terminate(info->name);
  t4a__terminate(info->pci_bus_id);
  return rc;
}

int t4a__cli_compiler_info(const t4a_gpu_backend_v1 *t, t4a_compiler_info *info) {
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  int rc = t->compiler_info(info);
  t4a__terminate(info->path);
  t4a__terminate(info->reason);
  return rc;
}

static void uuid_str(const uint8_t u[16], char out[37]) {
  static const int dash[16] = {0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0};
  char *p = out;
  for (int i = 0; i < 16; i++) {
    p += sprintf(p, "%02x", u[i]);
    if (dash[i])
      *p++ = '-';
  }
  *p = '\0';
}

const char *t4a__cli_backend_error(const t4a_gpu_backend_v1 *t) {
  static char message[1024]; /* the plugin's string need not be terminated */
  t4a_error_info e;
  memset(&e, 0, sizeof e);
  e.struct_size = sizeof e;
  if (t->last_error(&e) != T4A_OK || !e.message)
    return "";
  t4a__strcopy(message, sizeof message, e.message); /* reads at most 1023 bytes */
  return message;
}

static void print_list(const options *o) {
  t4a_gpu_backend_entry list[32];
  size_t n = 0;
  if (t4a_gpu_list(list, 32, &n) != T4A_OK)
    n = 0;
  if (n > 32)
    n = 32;
  if (o->json) {
    printf("\"installed\":[");
    for (size_t i = 0; i < n; i++) {
      printf("%s{\"name\":", i ? "," : "");
      t4a__cli_json_str(list[i].name);
      printf(",\"path\":");
      t4a__cli_json_str(list[i].path);
      putchar('}');
    }
    printf("],");
  } else {
    printf("installed backends:%s\n", n ? "" : " none");
    for (size_t i = 0; i < n; i++)
      printf("  %-8s %s\n", list[i].name, t4a__cli_text(list[i].path));
  }
}

static void print_compiler(const t4a_gpu_backend_v1 *t, const options *o) {
  if (!t->compiler_info)
    return;
  t4a_compiler_info c;
  if (t4a__cli_compiler_info(t, &c) != T4A_OK)
    return;
  if (o->json) {
    printf(",\"compiler\":{\"available\":%s,\"version\":\"%d.%d\",\"path\":",
           c.status == T4A_OK ? "true" : "false", c.version_major, c.version_minor);
    t4a__cli_json_str(c.path);
    printf(",\"reason\":");
    t4a__cli_json_str(c.reason);
    putchar('}');
  } else if (c.status == T4A_OK) {
    printf("NVRTC:        %d.%d (%s)\n", c.version_major, c.version_minor, t4a__cli_text(c.path));
  } else {
    printf("NVRTC:        unavailable: %s\n", t4a__cli_text(c.reason));
  }
}

static void print_devices(const t4a_gpu_backend_v1 *t, int32_t count, const options *o) {
  if (o->json)
    printf(",\"devices\":[");
  for (int32_t d = 0; d < count; d++) {
    t4a_device_info i;
    if (t4a__cli_device_info(t, d, &i) != T4A_OK)
      continue;
    char uuid[37];
    uuid_str(i.uuid, uuid);
    if (o->json) {
      printf("%s{\"ordinal\":%d,\"name\":", d ? "," : "", (int)i.ordinal);
      t4a__cli_json_str(i.name);
      printf(",\"uuid\":\"%s\",\"compute_capability\":\"%d.%d\",\"total_memory\":%llu,"
             "\"pci_bus_id\":",
             uuid, (int)i.cc_major, (int)i.cc_minor, (unsigned long long)i.total_memory);
      t4a__cli_json_str(i.pci_bus_id);
      printf(",\"multiprocessors\":%d,\"memory_pools\":%s}", (int)i.multiprocessors,
             (i.flags & T4A_DEVICE_MEMORY_POOLS) ? "true" : "false");
    } else {
      printf("device %d:     %s\n", (int)i.ordinal, t4a__cli_text(i.name));
      printf("  uuid:               GPU-%s\n", uuid);
      printf("  compute capability: %d.%d\n", (int)i.cc_major, (int)i.cc_minor);
      printf("  memory:             %.1f GiB\n", (double)i.total_memory / (1024.0 * 1024 * 1024));
      printf("  PCI bus id:         %s\n", t4a__cli_text(i.pci_bus_id));
      printf("  multiprocessors:    %d\n", (int)i.multiprocessors);
      printf("  memory pools:       %s\n", (i.flags & T4A_DEVICE_MEMORY_POOLS) ? "yes" : "no");
    }
  }
  if (o->json)
    putchar(']');
  if (!t->peer_access_supported || count < 2)
    return;
  if (o->json)
    printf(",\"peer_access\":[");
  else
    printf("peer access (row reads column):\n");
  for (int32_t s = 0; s < count; s++) {
    if (o->json)
      printf("%s[", s ? "," : "");
    else
      printf("  %2d:", (int)s);
    for (int32_t d = 0; d < count; d++) {
      bool ok = false;
      int rc = t->peer_access_supported(s, d, &ok);
      if (o->json)
        printf("%s%s", d ? "," : "", rc ? "null" : ok ? "true" : "false");
      else
        printf(" %s", rc ? "?" : ok ? "yes" : "no ");
    }
    if (o->json)
      putchar(']');
    else
      putchar('\n');
  }
  if (o->json)
    putchar(']');
}

static int cmd_info(const options *o) {
  int major, minor, patch, abi_major, abi_minor;
  t4a_gpu_loader_version(&major, &minor, &patch);
  t4a_gpu_loader_abi(&abi_major, &abi_minor);
  if (o->json) {
    printf("{\"loader\":{\"version\":\"%d.%d.%d\",\"abi\":\"%d.%d\",\"search_path\":", major, minor,
           patch, abi_major, abi_minor);
    t4a__cli_json_str(t4a_gpu_search_path());
    printf("},");
  } else {
    printf("t4a-gpu loader %d.%d.%d (backend ABI %d.%d)\n", major, minor, patch, abi_major,
           abi_minor);
    printf("search path:  %s\n", t4a__cli_text(t4a_gpu_search_path()));
  }
  print_list(o);
  t4a_gpu_backend *b = NULL;
  int rc = t4a_gpu_open(o->backend, &b);
  if (rc != T4A_OK) {
    if (o->json) {
      printf("\"backend\":{\"status\":\"%s\",\"reason\":", t4a_status_name(rc));
      t4a__cli_json_str(t4a_gpu_last_error());
      printf("}}\n");
    } else {
      printf("backend:      unavailable: %s\n", t4a__cli_text(t4a_gpu_last_error()));
    }
    return EXIT_NOBACKEND;
  }
  const t4a_gpu_backend_v1 *t = t4a_gpu_backend_table(b);
  int init = t->init();
  t4a_backend_info bi;
  t4a__cli_backend_info(t, &bi);
  int32_t count = 0;
  if (init == T4A_OK)
    t->device_count(&count);
  if (o->json) {
    printf("\"backend\":{\"name\":");
    t4a__cli_json_str(bi.name);
    printf(",\"version\":");
    t4a__cli_json_str(bi.version);
    printf(",\"path\":");
    t4a__cli_json_str(t4a_gpu_backend_path(b));
    printf(",\"status\":\"%s\",\"reason\":", t4a_status_name(init));
    t4a__cli_json_str(init == T4A_OK ? "" : t4a__cli_backend_error(t));
    printf(",\"driver_version\":%d,\"driver_path\":", (int)bi.driver_version);
    t4a__cli_json_str(bi.driver_path);
  } else {
    printf("backend:      %s %s (%s)\n", t4a__cli_text(bi.name), t4a__cli_text(bi.version),
           t4a__cli_text(t4a_gpu_backend_path(b)));
    if (bi.driver_version)
      printf("driver:       CUDA %d.%d (%s)\n", (int)bi.driver_version / 1000,
             (int)bi.driver_version % 1000 / 10, t4a__cli_text(bi.driver_path));
    if (init != T4A_OK)
      printf("status:       unusable (%s): %s\n", t4a_status_name(init),
             t4a__cli_text(t4a__cli_backend_error(t)));
  }
  if (init == T4A_OK) {
    print_compiler(t, o);
    print_devices(t, count, o);
  }
  if (o->json)
    printf("}}\n");
  t4a_gpu_close(b);
  return init == T4A_OK && count > 0 ? EXIT_USABLE : EXIT_UNUSABLE;
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
    return cmd_info(&o);
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
