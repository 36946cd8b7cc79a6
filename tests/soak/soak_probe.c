/* tests/soak/soak_probe.c -- what the process holds, for the drift check:
 * resident memory (/proc/self/statm), open file descriptors (/proc/self/fd),
 * device memory in use per device, and on the fake driver the number of live
 * driver objects of each kind.
 *
 * Device memory: the real driver is asked through the raw seam, as a
 * consumer would: a runtime on the device (from the spare parts, so taking
 * it changes nothing), raw_begin to make its context current, cuMemGetInfo,
 * raw_end. The figure is the device's, so other processes' use shows in it;
 * run the soak on an otherwise idle GPU. The fake driver has no
 * cuMemGetInfo; it reports its own count of device bytes in use. */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/soak/soak.h"

const char *const soak_fake_live_names[6] = {"device", "host", "stream", "event", "pool", "module"};

static void *driver;
static uint64_t (*fake_used)(int);
static uint64_t (*fake_live)(const char *);
static int (*mem_get_info)(size_t *, size_t *); /* CUresult cuMemGetInfo_v2(size_t *, size_t *) */

long soak_rss_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, resident = -1;
  if (!f)
    return -1;
  if (fscanf(f, "%ld %ld", &size, &resident) != 2)
    resident = -1;
  fclose(f);
  return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int soak_open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    n += e->d_name[0] != '.';
  closedir(d);
  return n - 1; /* the directory's own */
}

/* The driver library the plugin loaded (already in the process). */
static void open_driver(void) {
  if (driver)
    return;
  t4a_backend_info info = {.struct_size = sizeof info};
  if (G.t->get_info(&info) == T4A_OK && info.driver_path[0]) {
    info.driver_path[sizeof info.driver_path - 1] = '\0';
    driver = dlopen(info.driver_path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  }
  if (!driver)
    driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!driver)
    return;
  *(void **)&fake_used = dlsym(driver, "fake_cuda_device_used");
  *(void **)&fake_live = dlsym(driver, "fake_cuda_live");
  if (!fake_used)
    *(void **)&mem_get_info = dlsym(driver, "cuMemGetInfo_v2");
}

void soak_probe_close(void) {
  if (driver)
    dlclose(driver);
  driver = NULL;
  fake_used = NULL;
  fake_live = NULL;
  mem_get_info = NULL;
}

/* A fresh runtime on device d: its live handle counts (must be 0) and,
 * on the real driver, the device's memory in use. */
static int probe_device(soak_probe *p, unsigned d) {
  const t4a_gpu_backend_v1 *t = G.t;
  t4a_runtime_options o = {.struct_size = sizeof o, .staging_bytes = G.o.staging_bytes};
  t4a_runtime rt = {0};
  int rc = t->runtime_create((int32_t)d, &o, &rt);
  if (rc)
    return rc;
  t4a_runtime_counters c = {.struct_size = sizeof c};
  if ((rc = t->runtime_counters(rt, &c)) == T4A_OK) {
    p->live_buffers += c.live_buffers;
    p->live_host_buffers += c.live_host_buffers;
  }
  if (!rc && mem_get_info) {
    t4a_raw_section s = {.struct_size = sizeof s};
    size_t free_b = 0, total_b = 0;
    if ((rc = t->raw_begin(rt, &s)) == T4A_OK) {
      int r = mem_get_info(&free_b, &total_b);
      rc = t->raw_end(rt, &s);
      if (r != 0 && !rc)
        rc = T4A_EDRIVER;
    }
    p->device_used[d] = total_b - free_b;
  }
  int rd = t->runtime_destroy(rt, T4A_WAIT_FOREVER);
  return rc ? rc : rd;
}

void soak_probe_take(soak_probe *p) {
  memset(p, 0, sizeof *p);
  open_driver();
  p->rss_kib = soak_rss_kib();
  p->fds = soak_open_fds();
  p->fake = fake_live != NULL;
  p->device_known = fake_used || mem_get_info;
  p->device_how = fake_used      ? "the fake driver's count"
                  : mem_get_info ? "cuMemGetInfo through the raw seam"
                                 : "unknown (no cuMemGetInfo)";
  for (unsigned d = 0; d < G.ndev && !p->status; d++) {
    p->status = probe_device(p, d);
    if (fake_used)
      p->device_used[d] = fake_used((int)d);
  }
  for (int k = 0; k < 6 && p->fake; k++)
    p->fake_live[k] = fake_live(soak_fake_live_names[k]);
  /* what the probe itself opened is closed again; measure after it */
  p->rss_kib = soak_rss_kib();
  p->fds = soak_open_fds();
}
