/* tools/info.c -- t4a-gpu info: the loader, the installed backends, the
 * driver, the compiler and the devices (text or --json). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tools/cli.h"

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

/* For the CUDA backend unusable with status st: how to check the driver
 * installation ("" when st is not about the driver or the devices). */
static const char *driver_check(const char *backend, int st) {
  if (strcmp(backend, "cuda") != 0)
    return "";
  switch (st) {
  case T4A_ENODRIVER:
  case T4A_ESTUBDRIVER:
    return "nvidia-smi (installed with the NVIDIA driver) lists the GPUs when the driver works; "
           "'/sbin/ldconfig -p | grep libcuda.so.1' shows whether the dynamic linker finds its "
           "library (in a container, the host's driver must be mounted in)";
  case T4A_ENODEVICE:
    return "nvidia-smi lists the GPUs the driver sees; a CUDA_VISIBLE_DEVICES naming none of "
           "them, or a container started without its GPUs (docker run --gpus all), hides them";
  case T4A_EDRIVEROLD:
  case T4A_EDRIVERMISMATCH:
    return "nvidia-smi shows the driver's version and the CUDA version it supports; "
           "a driver and its kernel module from different releases need a reboot or reinstall";
  default: return "";
  }
}

int t4a__cli_info(const options *o) {
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
    if (init != T4A_OK) {
      printf("status:       unusable (%s): %s\n", t4a_status_name(init),
             t4a__cli_text(t4a__cli_backend_error(t)));
      const char *check = driver_check(bi.name, init);
      if (*check)
        printf("check:        %s\n", check);
      if (strcmp(bi.name, "cuda") == 0) /* what runs without a GPU: the same table on the CPU */
        printf("or:           run on the CPU with the host backend: T4A_GPU_BACKEND=host "
               "(t4a-gpu info --backend host)\n");
    }
  }
  print_compiler(t, o); /* compiler_info needs no init: shown without a driver too */
  if (init == T4A_OK)
    print_devices(t, count, o);
  if (o->json)
    printf("}}\n");
  t4a_gpu_close(b);
  return init == T4A_OK && count > 0 ? EXIT_USABLE : EXIT_UNUSABLE;
}
