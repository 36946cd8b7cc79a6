/* tools/output.c -- what every t4a-gpu command prints with: strings made safe
 * for JSON and the terminal, and the plugin's info structs read safely. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/escape.h"
#include "common/str.h"
#include "tools/cli.h"

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
