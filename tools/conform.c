/* tools/conform.c -- t4a-gpu conform: runs the conformance checks of every
 * area (conform_*.c) against one backend, in phases (before init, after a
 * failed or a successful init, with runtimes on a device), and reports one
 * line per check (or one JSON document) and a summary: counts, and the slots
 * the backend leaves NULL (the checks needing them are skipped).
 *
 * Exit status (tools/cli.h): 0 every check that ran passed (skips allowed),
 * 1 a check failed, 2 usage, 3 no backend, 4 init failed (the checks that
 * need no init still ran and are reported). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/conform.h"

typedef struct slot {
  const char *name;
  bool present;
} slot;

#define T4A__CF_SLOT(s)                                                                            \
  { #s, t->s != NULL }

#define MAX_SLOTS 96 /* at least the table's */

/* Every slot of the table (v1.0 and v1.1), by name, and whether the backend
 * fills it (the loader's copy reads NULL beyond the plugin's struct_size);
 * returns how many. */
static size_t slots_of(const t4a_gpu_backend_v1 *t, slot *out, size_t cap) {
  const slot all[] = {
      T4A__CF_SLOT(last_error), T4A__CF_SLOT(init), T4A__CF_SLOT(get_info),
      T4A__CF_SLOT(device_count), T4A__CF_SLOT(device_info), T4A__CF_SLOT(compiler_info),
      T4A__CF_SLOT(peer_access_supported), T4A__CF_SLOT(runtime_create),
      T4A__CF_SLOT(runtime_destroy), T4A__CF_SLOT(runtime_counters), T4A__CF_SLOT(buffer_alloc),
      T4A__CF_SLOT(buffer_free), T4A__CF_SLOT(buffer_size), T4A__CF_SLOT(cache_trim),
      T4A__CF_SLOT(cache_stats), T4A__CF_SLOT(host_alloc), T4A__CF_SLOT(host_free),
      T4A__CF_SLOT(copy_h2d_pinned), T4A__CF_SLOT(copy_d2h_pinned), T4A__CF_SLOT(copy_h2d),
      T4A__CF_SLOT(copy_d2h), T4A__CF_SLOT(copy_d2d), T4A__CF_SLOT(copy_from_runtime),
      T4A__CF_SLOT(copy_from_peer), T4A__CF_SLOT(copy_from_peer_via_host), T4A__CF_SLOT(seal),
      T4A__CF_SLOT(witness_query), T4A__CF_SLOT(witness_wait), T4A__CF_SLOT(witness_retain),
      T4A__CF_SLOT(witness_release), T4A__CF_SLOT(runtime_wait_witness),
      T4A__CF_SLOT(artifact_compile), T4A__CF_SLOT(artifact_from_bytes), T4A__CF_SLOT(artifact_log),
      T4A__CF_SLOT(artifact_data), T4A__CF_SLOT(artifact_release),
      T4A__CF_SLOT(compile_cache_stats), T4A__CF_SLOT(compile_cache_clear),
      T4A__CF_SLOT(module_load), T4A__CF_SLOT(module_unload), T4A__CF_SLOT(function_get),
      T4A__CF_SLOT(function_attributes), T4A__CF_SLOT(function_set_max_dynamic_shared),
      T4A__CF_SLOT(launch), T4A__CF_SLOT(raw_runtime), T4A__CF_SLOT(buffer_device_address),
      T4A__CF_SLOT(raw_function), T4A__CF_SLOT(raw_begin), T4A__CF_SLOT(raw_end),
      /* v1.1 (listed when NULL; no check uses them yet) */
      T4A__CF_SLOT(memset), T4A__CF_SLOT(copy_2d_h2d_pinned), T4A__CF_SLOT(copy_2d_d2h_pinned),
      T4A__CF_SLOT(copy_2d_d2d), T4A__CF_SLOT(copy_2d_h2d), T4A__CF_SLOT(copy_2d_d2h),
      T4A__CF_SLOT(runtime_memory_info), T4A__CF_SLOT(host_register), T4A__CF_SLOT(host_unregister),
      T4A__CF_SLOT(witness_elapsed), T4A__CF_SLOT(runtime_info), T4A__CF_SLOT(launch_ex),
      T4A__CF_SLOT(occupancy_max_active_blocks), T4A__CF_SLOT(occupancy_suggest_block_size),
      T4A__CF_SLOT(occupancy_max_active_clusters), T4A__CF_SLOT(graph_begin),
      T4A__CF_SLOT(graph_end), T4A__CF_SLOT(graph_launch), T4A__CF_SLOT(graph_set_kernel_args),
      T4A__CF_SLOT(graph_info), T4A__CF_SLOT(graph_release), T4A__CF_SLOT(buffer_wrap_external),
      T4A__CF_SLOT(stream_wait_witness), T4A__CF_SLOT(runtime_wait_event),
      T4A__CF_SLOT(runtime_wait_stream), T4A__CF_SLOT(dlpack_export), T4A__CF_SLOT(dlpack_import),
      /* v1.2 */
      T4A__CF_SLOT(alloc_log_read)};
  size_t n = sizeof all / sizeof all[0];
  if (n > cap)
    n = cap;
  memcpy(out, all, n * sizeof all[0]);
  return n;
}

typedef struct area {
  const t4a__cf_check *checks;
  const size_t *count;
} area;

static const area areas[] = {
    {t4a__cf_backend_checks, &t4a__cf_backend_count},
    {t4a__cf_runtime_checks, &t4a__cf_runtime_count},
    {t4a__cf_errors_checks, &t4a__cf_errors_count},
    {t4a__cf_transfer_checks, &t4a__cf_transfer_count},
    {t4a__cf_completion_checks, &t4a__cf_completion_count},
    {t4a__cf_code_checks, &t4a__cf_code_count},
    {t4a__cf_launch_checks, &t4a__cf_launch_count},
    {t4a__cf_threads_checks, &t4a__cf_threads_count},
    {t4a__cf_memory_checks, &t4a__cf_memory_count},
};

typedef struct report {
  unsigned passed, failed, skipped;
  bool first; /* no check printed yet (JSON commas) */
} report;

/* The first slot of `needs` the backend leaves NULL (or that this program
 * does not know: a mistake in the registry), copied into buf; NULL if none. */
static const char *missing_slot(const slot *slots, size_t n, const char *needs, char *buf,
                                size_t size) {
  for (const char *p = needs; *p;) {
    size_t len = strcspn(p, " ");
    if (len) {
      bool found = false, present = false;
      for (size_t i = 0; i < n; i++)
        if (strlen(slots[i].name) == len && strncmp(slots[i].name, p, len) == 0) {
          found = true;
          present = slots[i].present;
        }
      if (!present) {
        snprintf(buf, size, "%.*s%s", (int)len, p, found ? "" : " (unknown to conform)");
        return buf;
      }
    }
    p += len + (p[len] == ' ');
  }
  return NULL;
}

static uint64_t seed_of(const char *name) { /* FNV-1a: the same data every run */
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char *p = name; *p; p++)
    h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  return h;
}

static void print_result(t4a__cf *c, report *r, double ms) {
  static const char *const words[] = {"PASS", "FAIL", "SKIP"};
  static const char *const json_words[] = {"pass", "fail", "skip"};
  const t4a__cf_check *k = c->check;
  if (c->o->json) {
    printf("%s{\"name\":", r->first ? "" : ",");
    t4a__cli_json_str(k->name);
    printf(",\"result\":\"%s\",\"promise\":", json_words[c->result]);
    t4a__cli_json_str(k->promise);
    printf(",\"detail\":");
    t4a__cli_json_str(c->result == T4A__CF_PASS ? "" : c->detail);
    printf(",\"failures\":%u,\"also\":[", c->failures);
    for (unsigned i = 1; i < c->failures && i <= 4; i++) {
      printf("%s", i > 1 ? "," : "");
      t4a__cli_json_str(c->also[i - 1]);
    }
    printf("],\"ms\":%.3f}", ms);
  } else {
    printf("%s %s", words[c->result], k->name);
    if (c->result != T4A__CF_PASS)
      printf(": %s", t4a__cli_text(c->detail));
    putchar('\n');
    for (unsigned i = 1; i < c->failures && i <= 4; i++)
      printf("     also: %s\n", t4a__cli_text(c->also[i - 1]));
    if (c->failures > 5)
      printf("     and %u more failures\n", c->failures - 5);
    if (c->result == T4A__CF_FAIL)
      printf("     header: %s\n", t4a__cli_text(k->promise));
  }
  r->first = false;
  if (c->result == T4A__CF_PASS)
    r->passed++;
  else if (c->result == T4A__CF_FAIL)
    r->failed++;
  else
    r->skipped++;
  fflush(stdout);
}

/* Runs the checks of one phase. */
static void run_phase(t4a__cf *c, int phase, report *r) {
  slot slots[MAX_SLOTS];
  size_t nslots = slots_of(c->t, slots, MAX_SLOTS);
  for (size_t a = 0; a < sizeof areas / sizeof areas[0]; a++)
    for (size_t i = 0; i < *areas[a].count; i++) {
      const t4a__cf_check *k = &areas[a].checks[i];
      if (k->phase != phase)
        continue;
      c->check = k;
      c->result = T4A__CF_PASS;
      c->failures = 0;
      c->detail[0] = '\0';
      c->seed = seed_of(k->name);
      char buf[96];
      const char *missing = missing_slot(slots, nslots, k->needs, buf, sizeof buf);
      uint64_t start = t4a__cf_now_ns();
      if (missing) {
        t4a__cf_skip(c, "slot %s is NULL (unsupported)", missing);
      } else {
        k->fn(c);
        t4a__cf_cleanup(c);
      }
      print_result(c, r, (double)(t4a__cf_now_ns() - start) / 1e6);
    }
}

static void print_null_slots(const t4a__cf *c) {
  slot slots[MAX_SLOTS];
  size_t n = slots_of(c->t, slots, MAX_SLOTS), none = 1;
  if (c->o->json)
    printf(",\"null_slots\":[");
  else
    printf("conform: NULL slots (their checks skipped):");
  for (size_t i = 0; i < n; i++)
    if (!slots[i].present) {
      printf(c->o->json ? "%s\"%s\"" : "%s%s", c->o->json && !none ? "," : " ", slots[i].name);
      none = 0;
    }
  if (c->o->json)
    putchar(']');
  else
    printf("%s\n", none ? " none" : "");
}

/* Reads what the device checks need; EXIT_USABLE, or why they cannot run. */
static int prepare_device(t4a__cf *c) {
  int rc = c->t->device_count(&c->device_count);
  if (rc != T4A_OK || c->device_count < 1)
    return EXIT_UNUSABLE;
  c->device = c->o->device >= 0 ? c->o->device : 0;
  if (c->device >= c->device_count)
    return EXIT_USAGE;
  t4a__cli_device_info(c->t, c->device, &c->dev);
  memset(&c->ci, 0, sizeof c->ci);
  if (c->t->compiler_info)
    t4a__cli_compiler_info(c->t, &c->ci);
  else
    snprintf(c->ci.reason, sizeof c->ci.reason, "the compiler_info slot is NULL");
  c->compiler = c->t->compiler_info && c->ci.status == T4A_OK && c->t->artifact_compile;
  return EXIT_USABLE;
}

static void say(const t4a__cf *c, const char *key, const char *value) {
  if (c->o->json) {
    printf(",\"%s\":", key);
    t4a__cli_json_str(value);
  } else {
    printf("conform: %s: %s\n", key, t4a__cli_text(value));
  }
}

int t4a__cli_conform(const options *o) {
  uint64_t start = t4a__cf_now_ns();
  t4a_gpu_backend *backend = NULL;
  int rc = t4a_gpu_open(o->backend, &backend);
  if (rc != T4A_OK) {
    if (o->json) {
      printf("{\"conform\":{\"status\":\"%s\",\"reason\":", t4a_status_name(rc));
      t4a__cli_json_str(t4a_gpu_last_error());
      printf(",\"passed\":false}}\n");
    } else {
      printf("conform: not run: %s: %s\n", t4a_status_name(rc),
             t4a__cli_text(t4a_gpu_last_error()));
    }
    return EXIT_NOBACKEND;
  }
  t4a__cf c;
  memset(&c, 0, sizeof c);
  c.t = t4a_gpu_backend_table(backend);
  c.o = o;
  c.device = o->device >= 0 ? o->device : 0;
  t4a_backend_info bi;
  t4a__cli_backend_info(c.t, &bi); /* before init: allowed, and checked below */
  if (o->json) {
    printf("{\"conform\":{\"backend\":");
    t4a__cli_json_str(bi.name);
    printf(",\"version\":");
    t4a__cli_json_str(bi.version);
    printf(",\"path\":");
    t4a__cli_json_str(t4a_gpu_backend_path(backend));
    printf(",\"checks\":[");
  } else {
    printf("t4a-gpu conform: backend %s %s (%s)\n", t4a__cli_text(bi.name),
           t4a__cli_text(bi.version), t4a__cli_text(t4a_gpu_backend_path(backend)));
  }
  report r = {.first = true};
  run_phase(&c, T4A__CF_PRE_INIT, &r);
  t4a__cf_first_init(&c);
  int result = EXIT_USABLE;
  char why[700] = "";
  if (c.init_status != T4A_OK) {
    run_phase(&c, T4A__CF_INIT_FAILED, &r);
    if (c.deferred.bits) /* a -1 compile's artifact: the backend may take it back now */
      c.t->artifact_release(c.deferred);
    result = EXIT_UNUSABLE;
    snprintf(why, sizeof why, "init: %s: %s", t4a_status_name(c.init_status), c.init_detail);
  } else {
    run_phase(&c, T4A__CF_INIT, &r);
    result = prepare_device(&c);
    if (result == EXIT_USABLE) {
      t4a__cf_code_setup(&c);
      run_phase(&c, T4A__CF_DEVICE, &r);
      t4a__cf_code_release(&c);
    } else if (result == EXIT_USAGE) {
      snprintf(why, sizeof why, "--device %d: there are %d devices (0 .. %d)", (int)c.device,
               (int)c.device_count, (int)c.device_count - 1);
    } else {
      snprintf(why, sizeof why, "device_count: %d devices after a successful init",
               (int)c.device_count);
    }
  }
  free(c.objs);
  if (result == EXIT_USABLE && r.failed)
    result = EXIT_FAILED;
  double seconds = (double)(t4a__cf_now_ns() - start) / 1e9;
  if (o->json)
    putchar(']');
  if (c.device_count > 0 && result != EXIT_USAGE) {
    char dev[400];
    snprintf(dev, sizeof dev, "%d: %s", (int)c.device, c.dev.name);
    say(&c, "device", dev);
    say(&c, "code", c.code_why);
  }
  if (*why)
    say(&c, "not run further", why);
  if (o->json) {
    printf(",\"passed\":%u,\"failed\":%u,\"skipped\":%u,\"seconds\":%.3f", r.passed, r.failed,
           r.skipped, seconds);
    print_null_slots(&c);
    printf(",\"exit\":%d,\"ok\":%s}}\n", result, result == EXIT_USABLE ? "true" : "false");
  } else {
    printf("conform: %u passed, %u failed, %u skipped (%u checks, %.2f s)\n", r.passed, r.failed,
           r.skipped, r.passed + r.failed + r.skipped, seconds);
    print_null_slots(&c);
    printf("conform: %s\n", result == EXIT_USABLE   ? "passed"
                            : result == EXIT_FAILED ? "FAILED"
                                                    : "not run on a device");
  }
  t4a_gpu_close(backend);
  return result;
}
