/* tests/cpu/test_host_compile.c -- CUDA C on the host backend through the
 * table: finding the host C++ compiler (T4A_HOST_CXX absolute only, PATH's
 * absolute directories only, T4A_ENOCOMPILER with what to do), the compile
 * log with the consumer's file name and line numbers, NVRTC's options
 * mapped or refused, the memory and disk caches (hits counted, the host's
 * own subdirectory, T4A_COMPILE_NO_CACHE, what is never cached), a
 * compiled artifact's bytes loaded back, and real kernels launched over
 * the pool against CPU references, a trap and a failed assert faulting
 * the device. The kernels are compiled once per run: the tests run in
 * forked children that share one disk cache (T4A_CACHE_DIR), so all but
 * the first get a disk hit. Skips (77) without a host C++ compiler. */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin-host/test_gate.h"
#include "tests/cpu/host_fixture.h"

static char root[64];      /* this run's directory: the shared cache, scratch */
static char cxx_path[256]; /* the compiler the plugin found */

/* The kernels every launching test uses: one source, one compile per run. */
static const char kernels[] =
    "#define N_PER 4\n"
    "extern \"C\" __global__ void axpy(unsigned long long n, float a, const float *x, float *y) "
    "{\n"
    "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "       i < n; i += (unsigned long long)gridDim.x * blockDim.x)\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n"
    "extern \"C\" __global__ void sum(unsigned long long n, const float *x, double *out) {\n"
    "  __shared__ double s[256];\n"
    "  double v = 0;\n"
    "  for (unsigned long long i = blockIdx.x * 256ull + threadIdx.x; i < n;\n"
    "       i += gridDim.x * 256ull)\n"
    "    v += x[i];\n"
    "  s[threadIdx.x] = v;\n"
    "  __syncthreads();\n"
    "  for (unsigned w = 128; w > 0; w >>= 1) {\n"
    "    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (threadIdx.x == 0) atomicAdd(out, s[0]);\n"
    "}\n"
    "extern \"C\" __global__ void reverse(const unsigned *x, unsigned *y) {\n"
    "  extern __shared__ unsigned s[];\n"
    "  unsigned span = blockDim.x * N_PER, base = blockIdx.x * span;\n"
    "  for (unsigned k = 0; k < N_PER; k++) s[threadIdx.x * N_PER + k] = x[base + threadIdx.x * "
    "N_PER + k];\n"
    "  __syncthreads();\n"
    "  for (unsigned k = 0; k < N_PER; k++) {\n"
    "    unsigned i = threadIdx.x * N_PER + k;\n"
    "    y[base + i] = s[span - 1 - i];\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void warp_sum(const int *x, int *out) {\n"
    "  int v = x[blockIdx.x * blockDim.x + threadIdx.x];\n"
    "  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);\n"
    "  if ((threadIdx.x & 31) == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = v;\n"
    "}\n"
    "extern \"C\" __global__ void index3d(unsigned *out) {\n"
    "  unsigned b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;\n"
    "  unsigned t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;\n"
    "  unsigned *o = out + 3 * (b * blockDim.x * blockDim.y * blockDim.z + t);\n"
    "  o[0] = blockIdx.x | blockIdx.y << 16; o[1] = blockIdx.z | threadIdx.x << 16;\n"
    "  o[2] = threadIdx.y | threadIdx.z << 16;\n"
    "}\n"
    "extern \"C\" __global__ void checked(int n, int limit) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) assert(i < limit);\n"
    "}\n"
    "extern \"C\" __global__ void boom(int b, int t) {\n"
    "  if (blockIdx.x == b && threadIdx.x == t) __trap();\n"
    "}\n";

static t4a_compile_options request(const char *src, const char *name) {
  t4a_compile_options o = {.struct_size = sizeof o, .source = src, .name = name};
  o.device_ordinal = 0;
  return o;
}

static t4a_compile_cache_stats stats(void) {
  t4a_compile_cache_stats s = {.struct_size = sizeof s};
  OK(T->compile_cache_stats(&s));
  return s;
}

static const char *log_of(t4a_artifact a) {
  const char *log = NULL;
  OK(T->artifact_log(a, &log, NULL));
  return log;
}

/* ---- the compiler ---------------------------------------------------------------------- */

START_TEST(the_compiler_is_found_only_where_it_may_be) {
  t4a_compiler_info ci = {.struct_size = sizeof ci};
  OK(T->compiler_info(&ci));
  ck_assert_int_eq(ci.status, T4A_OK);
  ck_assert_msg(ci.path[0] == '/' && access(ci.path, X_OK) == 0, "path '%s'", ci.path);
  ck_assert_int_gt(ci.version_major, 0);
  ck_assert_str_eq(ci.reason, "");
  t4a_compile_options o = request("extern \"C\" __global__ void k() {}\n", "k.cu");
  o.flags = T4A_COMPILE_NO_CACHE;
  t4a_artifact a = {0};
  /* a relative T4A_HOST_CXX is refused, not resolved */
  setenv("T4A_HOST_CXX", "bin/c++", 1);
  OK(T->compiler_info(&ci));
  ck_assert_int_eq(ci.status, T4A_ENOCOMPILER);
  ck_assert_msg(strstr(ci.reason, "T4A_HOST_CXX=bin/c++ is not an absolute path"), "%s", ci.reason);
  EXPECT(T->artifact_compile(&o, &a), T4A_ENOCOMPILER);
  DETAIL("not an absolute path");
  setenv("T4A_HOST_CXX", "/nonexistent/c++", 1);
  EXPECT(T->artifact_compile(&o, &a), T4A_ENOCOMPILER);
  DETAIL("T4A_HOST_CXX=/nonexistent/c++ is not an executable file");
  setenv("T4A_HOST_CXX", cxx_path, 1); /* absolute: used as is */
  OK(T->compiler_info(&ci));
  ck_assert_int_eq(ci.status, T4A_OK);
  ck_assert_str_eq(ci.path, cxx_path);
  unsetenv("T4A_HOST_CXX");
  /* an empty PATH: nothing is searched, and the status says what to do */
  const char *path = getenv("PATH");
  char *saved = strdup(path ? path : "/usr/bin:/bin");
  setenv("PATH", "", 1);
  OK(T->compiler_info(&ci));
  ck_assert_int_eq(ci.status, T4A_ENOCOMPILER);
  ck_assert(strstr(ci.reason, "install g++ (or clang++) or set T4A_HOST_CXX"));
  EXPECT(T->artifact_compile(&o, &a), T4A_ENOCOMPILER);
  DETAIL("install g++ (or clang++) or set T4A_HOST_CXX");
  ck_assert_uint_eq(a.bits, 0);
  /* the current directory and relative entries are never searched, even
   * when they hold a "compiler" */
  char dir[128], fake[160];
  snprintf(dir, sizeof dir, "%s/cwd", root);
  mkdir(dir, 0700);
  snprintf(fake, sizeof fake, "%s/bin", dir);
  mkdir(fake, 0700);
  static const char *const names[] = {"c++", "bin/c++", "g++", "bin/clang++"};
  for (size_t i = 0; i < 4; i++) {
    snprintf(fake, sizeof fake, "%s/%s", dir, names[i]);
    FILE *f = fopen(fake, "w");
    /* a "compiler" that answers --version: found, it would be used */
    ck_assert(f && fputs("#!/bin/sh\necho 'fake c++ 99.1'\n", f) >= 0 && fclose(f) == 0);
    chmod(fake, 0700);
  }
  char old_cwd[4096];
  ck_assert_ptr_nonnull(getcwd(old_cwd, sizeof old_cwd));
  ck_assert_int_eq(chdir(dir), 0);
  setenv("PATH", ".:bin::", 1);
  OK(T->compiler_info(&ci));
  ck_assert_msg(ci.status == T4A_ENOCOMPILER, "found '%s' in '.:bin::'", ci.path);
  ck_assert_int_eq(chdir(old_cwd), 0);
  setenv("PATH", saved, 1);
  free(saved);
  OK(T->compiler_info(&ci));
  ck_assert_int_eq(ci.status, T4A_OK);
}
END_TEST

/* ---- compiling ----------------------------------------------------------------------------- */

START_TEST(a_failed_compile_logs_the_consumers_lines) {
  static const char bad[] = "extern \"C\" __global__ void k(float *p) {\n"
                            "  int fine = 1;\n"
                            "  p[0] = fine + not_declared_here;\n"
                            "}\n";
  t4a_compile_options o = request(bad, "mine.cu");
  t4a_artifact a = {0};
  EXPECT(T->artifact_compile(&o, &a), T4A_ECOMPILE);
  DETAIL("compiling 'mine.cu' failed");
  ck_assert_msg(a.bits != 0, "a failed compile returns its artifact for the log");
  const char *log = log_of(a);
  ck_assert_msg(strstr(log, "mine.cu:3:"), "the log has no 'mine.cu:3:':\n%s", log);
  ck_assert(strstr(log, "not_declared_here"));
  t4a_runtime rt;
  OK(T->runtime_create(0, NULL, &rt));
  t4a_module m;
  EXPECT(T->module_load(rt, a, &m), T4A_EINVAL); /* no code */
  OK(T->artifact_release(a));
  /* what the host cannot run is refused before any compiler runs, by line */
  static const char asm_src[] = "extern \"C\" __global__ void k(int *p) {\n"
                                "\n"
                                "  asm volatile(\"trap;\");\n"
                                "}\n";
  o = request(asm_src, "asm.cu");
  uint64_t misses = stats().misses;
  EXPECT(T->artifact_compile(&o, &a), T4A_ECOMPILE);
  log = log_of(a);
  ck_assert_msg(strstr(log, "asm.cu:3:") && strstr(log, "not supported by the host backend"), "%s",
                log);
  ck_assert_uint_eq(stats().misses, misses + 1);
  OK(T->artifact_release(a));
  o.source = "extern \"C\" __global__ void k(int *p) {\n  __syncthreads()\n}\n"; /* no ; */
  o.name = "late.cu";
  EXPECT(T->artifact_compile(&o, &a), T4A_ECOMPILE);
  ck_assert_msg(strstr(log_of(a), "late.cu:"), "%s", log_of(a));
  OK(T->artifact_release(a));
  /* a failed compile is never cached: the same request compiles again */
  EXPECT(T->artifact_compile(&o, &a), T4A_ECOMPILE);
  OK(T->artifact_release(a));
  ck_assert_uint_eq(stats().misses, misses + 3);
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(nvrtc_options_are_mapped_or_refused) {
  static const char src[] = "extern \"C\" __global__ void k(int *p) { p[threadIdx.x] = VAL; }\n";
  const char *opts[] = {"-DVAL=5",         "-arch=sm_90", "--use_fast_math", "-lineinfo",
                        "-default-device", "--std=c++17", "--fmad=false"};
  t4a_compile_options o = request(src, "opts.cu");
  o.options = opts;
  o.option_count = 7;
  t4a_artifact a = {0};
  OK(T->artifact_compile(&o, &a));
  t4a_runtime rt;
  OK(T->runtime_create(0, NULL, &rt));
  t4a_module m;
  t4a_function f;
  OK(T->module_load(rt, a, &m));
  OK(T->function_get(rt, m, "k", &f));
  t4a_buffer b;
  OK(T->buffer_alloc(rt, 64 * 4ull, &b));
  uint64_t p;
  OK(T->buffer_device_address(rt, b, &p));
  void *args[] = {&p};
  t4a_launch_config c = {.struct_size = sizeof c, .grid = {1, 1, 1}, .block = {64, 1, 1}};
  OK(T->launch(rt, f, &c, args));
  int out[64];
  OK(T->copy_d2h(rt, out, b, 0, sizeof out));
  for (int i = 0; i < 64; i++)
    ck_assert_int_eq(out[i], 5); /* -D reached the compiler */
  OK(T->artifact_release(a));
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  /* unknown: T4A_EINVAL, as NVRTC's invalid option, with a log line */
  const char *bogus[] = {"-DVAL=1", "--no-such-option"};
  o.options = bogus;
  o.option_count = 2;
  EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
  ck_assert(a.bits != 0);
  ck_assert_msg(strstr(log_of(a), "opts.cu: error: option '--no-such-option' is not an NVRTC "
                                  "option the host backend knows"),
                "%s", log_of(a));
  OK(T->artifact_release(a));
  /* known, but not something the host can do: T4A_ECOMPILE with a line */
  const char *rdc[] = {"-rdc=true"};
  o.options = rdc;
  o.option_count = 1;
  EXPECT(T->artifact_compile(&o, &a), T4A_ECOMPILE);
  ck_assert(strstr(log_of(a), "option '-rdc=true' is not supported by the host backend"));
  OK(T->artifact_release(a));
  /* the request itself */
  o.option_count = 0;
  o.flags = T4A_COMPILE_PTX;
  a.bits = 0;
  EXPECT(T->artifact_compile(&o, &a), T4A_EUNSUPPORTED);
  ck_assert_uint_eq(a.bits, 0);
  o.flags = 0x100;
  EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
  o.flags = 0;
  o.device_ordinal = 1;
  EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
  o.device_ordinal = 0;
  o.source = "";
  EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
  o.source = src;
  o.source_size = sizeof src; /* the NUL inside */
  EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
}
END_TEST

/* Entries of the host's subdirectory of the cache. */
static int host_entries(const char *cache) {
  char dir[256];
  snprintf(dir, sizeof dir, "%s/host", cache);
  struct stat st;
  ck_assert_msg(lstat(dir, &st) == 0 && S_ISDIR(st.st_mode), "no %s", dir);
  ck_assert_uint_eq(st.st_mode & 0777, 0700);
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    n += strlen(de->d_name) == 68 && strcmp(de->d_name + 64, ".t4a") == 0;
  closedir(d);
  return n;
}

START_TEST(the_caches_serve_repeated_compiles) {
  char cache[128];
  snprintf(cache, sizeof cache, "%s/own-cache", root);
  setenv("T4A_CACHE_DIR", cache, 1); /* this test's own: counts from 0 */
  static const char src[] = "extern \"C\" __global__ void k(int *p) { p[threadIdx.x] = 1; }\n";
  t4a_compile_options o = request(src, "c.cu");
  t4a_compile_cache_stats s0 = stats();
  ck_assert_uint_eq(s0.disk_entries, 0);
  t4a_artifact a, b, c;
  OK(T->artifact_compile(&o, &a));
  t4a_compile_cache_stats s1 = stats();
  ck_assert_uint_eq(s1.misses, s0.misses + 1);
  ck_assert_uint_eq(s1.memory_entries, s0.memory_entries + 1);
  ck_assert_uint_eq(s1.disk_entries, 1);
  ck_assert_int_eq(host_entries(cache), 1); /* in the host's own subdirectory */
  OK(T->artifact_compile(&o, &b));          /* a memory hit: the same artifact */
  t4a_compile_cache_stats s2 = stats();
  ck_assert_uint_eq(s2.memory_hits, s1.memory_hits + 1);
  ck_assert_uint_eq(s2.misses, s1.misses);
  ck_assert_uint_eq(b.bits, a.bits);
  OK(T->compile_cache_clear(T4A_CACHE_MEMORY));
  OK(T->artifact_compile(&o, &c)); /* a disk hit */
  t4a_compile_cache_stats s3 = stats();
  ck_assert_uint_eq(s3.disk_hits, s2.disk_hits + 1);
  ck_assert_uint_eq(s3.misses, s2.misses);
  const void *d1, *d2;
  uint64_t n1, n2;
  OK(T->artifact_data(a, NULL, &d1, &n1));
  OK(T->artifact_data(c, NULL, &d2, &n2));
  ck_assert(n1 == n2 && memcmp(d1, d2, n1) == 0);
  OK(T->artifact_release(c));
  /* T4A_COMPILE_NO_CACHE: compiled, neither cache asked nor filled */
  o.flags = T4A_COMPILE_NO_CACHE;
  OK(T->artifact_compile(&o, &c));
  t4a_compile_cache_stats s4 = stats();
  ck_assert_uint_eq(s4.misses, s3.misses + 1);
  ck_assert_uint_eq(s4.memory_hits + s4.disk_hits, s3.memory_hits + s3.disk_hits);
  ck_assert(c.bits != a.bits);
  OK(T->artifact_release(c));
  /* the options, the name and the source are in the key */
  o.flags = 0;
  const char *opt[] = {"-DUNUSED=1"};
  o.options = opt;
  o.option_count = 1;
  OK(T->artifact_compile(&o, &c));
  OK(T->artifact_release(c));
  o.option_count = 0;
  o.name = "other.cu";
  OK(T->artifact_compile(&o, &c));
  OK(T->artifact_release(c));
  ck_assert_uint_eq(stats().misses, s4.misses + 2);
  /* a source that may read a file from disk is compiled every time */
  o.name = "c.cu";
  o.source = "// this line says include\n"
             "extern \"C\" __global__ void k(int *p) { p[threadIdx.x] = 1; }\n";
  OK(T->artifact_compile(&o, &c));
  OK(T->artifact_release(c));
  OK(T->artifact_compile(&o, &c));
  OK(T->artifact_release(c));
  t4a_compile_cache_stats s5 = stats();
  ck_assert_uint_eq(s5.misses, s4.misses + 4);
  ck_assert_uint_eq(s5.disk_entries, 3); /* c.cu, -DUNUSED, other.cu */
  OK(T->compile_cache_clear(T4A_CACHE_DISK));
  ck_assert_uint_eq(stats().disk_entries, 0);
  EXPECT(T->compile_cache_clear(0), T4A_EINVAL);
  EXPECT(T->compile_cache_clear(4), T4A_EINVAL);
  OK(T->artifact_release(a));
  OK(T->artifact_release(b));
}
END_TEST

/* Runs k(unsigned *p) { p[0] = ...; } on one thread; what it wrote at p (b). */
static unsigned run_k(t4a_runtime rt, t4a_function f, t4a_buffer b, uint64_t p) {
  void *args[] = {&p};
  t4a_launch_config c = {.struct_size = sizeof c, .grid = {1, 1, 1}, .block = {1, 1, 1}};
  OK(T->launch(rt, f, &c, args));
  unsigned got = 0;
  OK(T->copy_d2h(rt, &got, b, 0, 4));
  return got;
}

/* A memory-cache hit takes its key from the requests seen lately
 * (plugin-host/keymemo.h) and the compiler as last found, without hashing
 * or a system call: requests one byte apart, in checked mode or not, or
 * built by another compiler must still get artifacts of their own. */
START_TEST(recent_requests_keep_their_own_keys) {
  char cache[128];
  snprintf(cache, sizeof cache, "%s/memo-cache", root);
  setenv("T4A_CACHE_DIR", cache, 1);
  uint64_t seed = t4a_test_seed();
  char src[2][160];
  /* two sources one byte apart, at a random place of the constant */
  unsigned v = 100000 + (unsigned)(seed % 800000), w = v ^ (1u << (seed >> 20) % 3);
  snprintf(src[0], sizeof src[0], "extern \"C\" __global__ void k(unsigned *p) { p[0] = %uu; }\n",
           v);
  snprintf(src[1], sizeof src[1], "extern \"C\" __global__ void k(unsigned *p) { p[0] = %uu; }\n",
           w);
  ck_assert_uint_eq(strlen(src[0]), strlen(src[1]));
  t4a_compile_options o[2] = {request(src[0], "m.cu"), request(src[1], "m.cu")};
  t4a_artifact first[2], again[2];
  t4a_compile_cache_stats s0 = stats();
  for (int i = 0; i < 2; i++)
    OK(T->artifact_compile(&o[i], &first[i]));
  for (int i = 0; i < 2; i++)
    OK(T->artifact_compile(&o[i], &again[i]));
  t4a_compile_cache_stats s1 = stats();
  ck_assert_uint_eq(s1.misses, s0.misses + 2);
  ck_assert_uint_eq(s1.memory_hits, s0.memory_hits + 2);
  ck_assert(first[0].bits != first[1].bits);
  ck_assert_uint_eq(again[0].bits, first[0].bits);
  ck_assert_uint_eq(again[1].bits, first[1].bits);
  /* ... and run the values they were given */
  t4a_runtime rt;
  OK(T->runtime_create(0, NULL, &rt));
  t4a_buffer b;
  uint64_t p;
  OK(T->buffer_alloc(rt, 4, &b));
  OK(T->buffer_device_address(rt, b, &p));
  for (int i = 0; i < 2; i++) {
    t4a_module m;
    t4a_function f;
    OK(T->module_load(rt, again[i], &m));
    OK(T->function_get(rt, m, "k", &f));
    ck_assert_uint_eq(run_k(rt, f, b, p), (i ? w : v));
  }
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  /* checked mode builds other code: a key of its own, then the first again */
  t4a_artifact x;
  setenv("T4A_HOST_CHECK", "1", 1);
  OK(T->artifact_compile(&o[0], &x));
  unsetenv("T4A_HOST_CHECK");
  ck_assert_uint_eq(stats().misses, s1.misses + 1);
  ck_assert(x.bits != first[0].bits);
  OK(T->artifact_release(x));
  OK(T->artifact_compile(&o[0], &x));
  ck_assert_uint_eq(x.bits, first[0].bits);
  OK(T->artifact_release(x));
  /* another compiler (a wrapper of the same one, at another path): compiled
   * by it, not served what the first one built */
  char wrapper[160];
  snprintf(wrapper, sizeof wrapper, "%s/wrapped-c++", root);
  FILE *f = fopen(wrapper, "w");
  ck_assert(f && fprintf(f, "#!/bin/sh\nexec '%s' \"$@\"\n", cxx_path) > 0 && fclose(f) == 0);
  chmod(wrapper, 0700);
  setenv("T4A_HOST_CXX", wrapper, 1);
  uint64_t misses = stats().misses;
  OK(T->artifact_compile(&o[0], &x));
  ck_assert_uint_eq(stats().misses, misses + 1);
  ck_assert(x.bits != first[0].bits);
  OK(T->artifact_release(x));
  unsetenv("T4A_HOST_CXX");
  OK(T->artifact_compile(&o[0], &x));
  ck_assert_uint_eq(x.bits, first[0].bits);
  ck_assert_uint_eq(stats().misses, misses + 1);
  OK(T->artifact_release(x));
  for (int i = 0; i < 2; i++) {
    OK(T->artifact_release(first[i]));
    OK(T->artifact_release(again[i]));
  }
}
END_TEST

/* Modules loaded at once keep their own code, also when their kernels
 * share a name: each is its own object to the dynamic linker (with the
 * memfd closed right after dlopen, the next module opened as the same
 * /proc/self/fd/N was given the first one's object, and ran its code). */
START_TEST(loaded_modules_keep_their_own_code) {
  enum { MODS = 4 };
  uint64_t seed = t4a_test_seed();
  unsigned want[MODS];
  char src[MODS][128];
  t4a_artifact art[MODS];
  for (int i = 0; i < MODS; i++) {
    want[i] = (unsigned)(seed % 1000000) * 8 + (unsigned)i;
    snprintf(src[i], sizeof src[i], "extern \"C\" __global__ void k(unsigned *p) { p[0] = %uu; }\n",
             want[i]);
    t4a_compile_options o = request(src[i], "same-name.cu");
    OK(T->artifact_compile(&o, &art[i]));
  }
  t4a_runtime rt;
  OK(T->runtime_create(0, NULL, &rt));
  t4a_buffer b;
  uint64_t p;
  OK(T->buffer_alloc(rt, 4, &b));
  OK(T->buffer_device_address(rt, b, &p));
  t4a_module m[MODS];
  t4a_function f[MODS];
  for (int i = 0; i < MODS; i++) {
    OK(T->module_load(rt, art[i], &m[i]));
    OK(T->function_get(rt, m[i], "k", &f[i]));
    if (i == 1) /* one unloaded between the loads: its number may come again */
      OK(T->module_unload(rt, m[0]));
  }
  for (int i = 1; i < MODS; i++) {
    unsigned got = run_k(rt, f[i], b, p);
    ck_assert_msg(got == want[i], "module %d ran %u, its source says %u", i, got, want[i]);
  }
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  for (int i = 0; i < MODS; i++)
    OK(T->artifact_release(art[i]));
}
END_TEST

/* ---- kernels ------------------------------------------------------------------------------- */

static t4a_runtime rt_;
static t4a_module mod_;
static t4a_artifact art_;

/* The shared kernels, loaded into a new runtime (a disk hit but for the
 * first test of the run). */
static t4a_function kernel(const char *name) {
  if (!rt_.bits) {
    t4a_compile_options o = request(kernels, "kernels.cu");
    OK(T->artifact_compile(&o, &art_));
    OK(T->runtime_create(0, NULL, &rt_));
    OK(T->module_load(rt_, art_, &mod_));
  }
  t4a_function f;
  OK(T->function_get(rt_, mod_, name, &f));
  return f;
}

static void done(void) {
  OK(T->artifact_release(art_));
  OK(T->runtime_destroy(rt_, T4A_WAIT_FOREVER));
  rt_.bits = 0;
}

static t4a_buffer upload(const void *host, uint64_t bytes, uint64_t *address) {
  t4a_buffer b;
  OK(T->buffer_alloc(rt_, bytes, &b));
  if (host)
    OK(T->copy_h2d(rt_, b, 0, host, bytes));
  OK(T->buffer_device_address(rt_, b, address));
  return b;
}

static void launch(t4a_function f, uint32_t grid, uint32_t block, uint32_t shared, void **args) {
  t4a_launch_config c = {.struct_size = sizeof c, .grid = {grid, 1, 1}, .block = {block, 1, 1}};
  c.shared_bytes = shared;
  OK(T->launch(rt_, f, &c, args));
}

START_TEST(kernels_match_the_cpu) {
  t4a_function fa = kernel("axpy"); /* loads the module into rt_ */
  uint64_t seed = t4a_test_seed();
  enum { N = 1 << 18 };
  uint32_t *bits = malloc(N * 4ull);
  float *x = malloc(N * 4ull), *y = malloc(N * 4ull), *out = malloc(N * 4ull);
  t4a_test_fill_random(bits, N * 4ull, seed);
  for (int i = 0; i < N; i++)
    x[i] = (float)(bits[i] >> 8) / (float)(1u << 24) - 0.5f;
  t4a_test_fill_random(bits, N * 4ull, seed + 1);
  for (int i = 0; i < N; i++)
    y[i] = (float)(bits[i] >> 8) / (float)(1u << 24) - 0.5f;
  /* axpy (grid-stride, loop mode) */
  uint64_t px, py, n = N;
  t4a_buffer bx = upload(x, N * 4ull, &px), by = upload(y, N * 4ull, &py);
  float a = -1.25f;
  void *aargs[] = {&n, &a, &px, &py};
  launch(fa, 300, 128, 0, aargs);
  OK(T->copy_d2h(rt_, out, by, 0, N * 4ull));
  for (int i = 0; i < N; i++) {
    double want = -1.25 * (double)x[i] + (double)y[i]; /* a contracted fma rounds once less */
    ck_assert_msg(fabs((double)out[i] - want) <= 1e-6, "axpy[%d] = %g, want %g", i, (double)out[i],
                  want);
  }
  /* a block reduction with __shared__ and __syncthreads (fibers), across
   * blocks with atomicAdd on a double */
  double zero = 0, got, want = 0;
  uint64_t ps;
  t4a_buffer bs = upload(&zero, 8, &ps);
  void *sargs[] = {&n, &px, &ps};
  launch(kernel("sum"), 37, 256, 0, sargs);
  OK(T->copy_d2h(rt_, &got, bs, 0, 8));
  for (int i = 0; i < N; i++)
    want += (double)x[i];
  ck_assert_msg(fabs(got - want) <= 1e-9 * N, "sum %.17g, want %.17g", got, want);
  /* dynamic shared memory: each block reverses its span */
  t4a_buffer bu = upload(bits, N * 4ull, &px), bv = upload(NULL, N * 4ull, &py);
  void *rargs[] = {&px, &py};
  launch(kernel("reverse"), N / (64 * 4), 64, 64 * 4 * 4, rargs);
  uint32_t *r = malloc(N * 4ull);
  OK(T->copy_d2h(rt_, r, bv, 0, N * 4ull));
  for (int b = 0; b < N / 256; b++)
    for (int i = 0; i < 256; i++)
      ck_assert_uint_eq(r[b * 256 + i], bits[b * 256 + 255 - i]);
  /* warp shuffles: each warp's sum */
  int32_t *ints = (int32_t *)bits, wsum[N / 32];
  for (int i = 0; i < N; i++)
    ints[i] = (int32_t)(bits[i] % 2001) - 1000;
  t4a_buffer bi = upload(ints, N * 4ull, &px), bw = upload(NULL, sizeof wsum, &py);
  void *wargs[] = {&px, &py};
  launch(kernel("warp_sum"), N / 128, 128, 0, wargs);
  OK(T->copy_d2h(rt_, wsum, bw, 0, sizeof wsum));
  for (int w = 0; w < N / 32; w++) {
    int s = 0;
    for (int i = 0; i < 32; i++)
      s += ints[w * 32 + i];
    ck_assert_msg(wsum[w] == s, "warp %d: %d, want %d", w, wsum[w], s);
  }
  OK(T->buffer_free(rt_, bx));
  OK(T->buffer_free(rt_, by));
  OK(T->buffer_free(rt_, bs));
  OK(T->buffer_free(rt_, bu));
  OK(T->buffer_free(rt_, bv));
  OK(T->buffer_free(rt_, bi));
  OK(T->buffer_free(rt_, bw));
  free(bits);
  free(x);
  free(y);
  free(out);
  free(r);
  done();
}
END_TEST

START_TEST(three_d_geometry_is_exact) {
  static const uint32_t shapes[][2][3] = {{{1, 1, 1}, {1, 1, 1}},
                                          {{3, 2, 5}, {4, 3, 2}},
                                          {{2, 2, 2}, {16, 16, 4}},
                                          {{1, 300, 1}, {1, 2, 1}}};
  t4a_function f = kernel("index3d");
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const uint32_t *g = shapes[s][0], *k = shapes[s][1];
    uint64_t per = (uint64_t)k[0] * k[1] * k[2], threads = (uint64_t)g[0] * g[1] * g[2] * per;
    uint64_t p;
    t4a_buffer b = upload(NULL, threads * 12 + 64, &p);
    OK(T->memset(rt_, b, 0, 0xeeeeeeeeu, 4, threads * 3 + 16));
    void *args[] = {&p};
    t4a_launch_config c = {.struct_size = sizeof c};
    memcpy(c.grid, g, sizeof c.grid);
    memcpy(c.block, k, sizeof c.block);
    OK(T->launch(rt_, f, &c, args));
    uint32_t *h = malloc(threads * 12 + 64);
    OK(T->copy_d2h(rt_, h, b, 0, threads * 12 + 64));
    for (uint32_t bz = 0; bz < g[2]; bz++)
      for (uint32_t by = 0; by < g[1]; by++)
        for (uint32_t bx = 0; bx < g[0]; bx++)
          for (uint32_t tz = 0; tz < k[2]; tz++)
            for (uint32_t ty = 0; ty < k[1]; ty++)
              for (uint32_t tx = 0; tx < k[0]; tx++) {
                uint64_t bl = ((uint64_t)bz * g[1] + by) * g[0] + bx;
                uint64_t t = bl * per + ((uint64_t)tz * k[1] + ty) * k[0] + tx;
                uint32_t want[3] = {bx | by << 16, bz | tx << 16, ty | tz << 16};
                ck_assert_msg(memcmp(&h[3 * t], want, 12) == 0, "shape %zu thread %llu", s,
                              (unsigned long long)t);
              }
    for (uint64_t i = threads * 3; i < threads * 3 + 16; i++)
      ck_assert_uint_eq(h[i], 0xeeeeeeeeu);
    free(h);
    OK(T->buffer_free(rt_, b));
  }
  done();
}
END_TEST

/* A compiled artifact's bytes, handed back, load in another runtime. */
START_TEST(artifact_bytes_load_back) {
  kernel("axpy");
  t4a_artifact_kind kind;
  const void *data;
  uint64_t size;
  OK(T->artifact_data(art_, &kind, &data, &size));
  ck_assert_int_eq(kind, T4A_ARTIFACT_HOST);
  ck_assert(size > 4 && memcmp(data, "\177ELF", 4) == 0);
  t4a_artifact copy;
  OK(T->artifact_from_bytes(T4A_ARTIFACT_HOST, data, size, "copy.so", &copy));
  t4a_runtime other;
  OK(T->runtime_create(0, NULL, &other));
  t4a_module m;
  OK(T->module_load(other, copy, &m));
  t4a_function f;
  OK(T->function_get(other, m, "axpy", &f));
  t4a_buffer b;
  OK(T->buffer_alloc(other, 16, &b));
  float v[4] = {1, 2, 3, 4}, a = 2;
  OK(T->copy_h2d(other, b, 0, v, 16));
  uint64_t p, n = 4;
  OK(T->buffer_device_address(other, b, &p));
  void *args[] = {&n, &a, &p, &p};
  t4a_launch_config c = {.struct_size = sizeof c, .grid = {1, 1, 1}, .block = {4, 1, 1}};
  OK(T->launch(other, f, &c, args)); /* y = 2y + y */
  OK(T->copy_d2h(other, v, b, 0, 16));
  ck_assert(v[0] == 3 && v[1] == 6 && v[2] == 9 && v[3] == 12);
  OK(T->artifact_release(copy));
  OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  done();
}
END_TEST

/* A gate on rt_'s queue (plugin-host/test_gate.h): what follows waits
 * until *word is set, so the calls after a faulting launch are made before
 * it faults. */
static void gate(uint32_t *word) {
  t4a_host_buffer hb;
  *word = 0;
  OK(T->host_register(rt_, word, 64, T4A__HOST_REGISTER_TEST_GATE, &hb));
}

START_TEST(a_trap_faults_the_device) {
  t4a_function f = kernel("boom");
  int b = 5, t = 17;
  void *args[] = {&b, &t};
  uint32_t *word = aligned_alloc(64, 64);
  gate(word);
  launch(f, 8, 64, 0, args);
  t4a_witness w;
  OK(T->seal(rt_, &w));
  __atomic_store_n(word, 1, __ATOMIC_RELEASE);
  EXPECT(T->witness_wait(w, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  DETAIL("kernel 'boom' faulted (__trap()) in block (5, 0, 0), thread (17, 0, 0)");
  DETAIL("kernels.cu:");
  OK(T->witness_release(w));
  t4a_buffer x;
  EXPECT(T->buffer_alloc(rt_, 8, &x), T4A_EDEVICEFAULT);
  OK(T->artifact_release(art_));
  EXPECT(T->runtime_destroy(rt_, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  free(word);
}
END_TEST

START_TEST(a_failed_assert_faults_the_device) {
  t4a_function f = kernel("checked");
  int n = 1000, ok_limit = 1000, bad_limit = 700;
  void *fine[] = {&n, &ok_limit}, *bad[] = {&n, &bad_limit};
  launch(f, 4, 256, 0, fine);
  t4a_witness w;
  OK(T->seal(rt_, &w));
  OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  OK(T->witness_release(w));
  uint32_t *word = aligned_alloc(64, 64);
  gate(word);
  launch(f, 4, 256, 0, bad);
  OK(T->seal(rt_, &w));
  __atomic_store_n(word, 1, __ATOMIC_RELEASE);
  EXPECT(T->witness_wait(w, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  DETAIL("kernel 'checked' faulted (a failed assert)");
  DETAIL("i < limit");
  OK(T->witness_release(w));
  OK(T->artifact_release(art_));
  EXPECT(T->runtime_destroy(rt_, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  free(word);
}
END_TEST

int main(void) {
  int found = host_compiler(cxx_path, sizeof cxx_path);
  if (found)
    return found;
  snprintf(root, sizeof root, "/tmp/t4a-hc-XXXXXX");
  if (!mkdtemp(root))
    return 99;
  char cache[128];
  snprintf(cache, sizeof cache, "%s/cache", root);
  setenv("T4A_CACHE_DIR", cache, 1); /* shared by the tests: one compile of `kernels` */
  setenv("T4A_HOST_THREADS", "4", 1);
  setenv(T4A__HOST_TEST_GATE_ENV, "1", 1);
  unsetenv("T4A_HOST_CXX");
  Suite *s = suite_create("host-compile");
  TCase *tc = tcase_create("compile");
  tcase_add_checked_fixture(tc, host_setup, host_teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, the_compiler_is_found_only_where_it_may_be);
  tcase_add_test(tc, a_failed_compile_logs_the_consumers_lines);
  tcase_add_test(tc, nvrtc_options_are_mapped_or_refused);
  tcase_add_test(tc, the_caches_serve_repeated_compiles);
  tcase_add_test(tc, recent_requests_keep_their_own_keys);
  tcase_add_test(tc, loaded_modules_keep_their_own_code);
  suite_add_tcase(s, tc);
  tc = tcase_create("kernels");
  tcase_add_checked_fixture(tc, host_setup, host_teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, kernels_match_the_cpu);
  tcase_add_test(tc, three_d_geometry_is_exact);
  tcase_add_test(tc, artifact_bytes_load_back);
  suite_add_tcase(s, tc);
  tc = tcase_create("faults"); /* each in its own child: the fault is sticky there */
  tcase_add_checked_fixture(tc, host_setup, host_teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, a_trap_faults_the_device);
  tcase_add_test(tc, a_failed_assert_faults_the_device);
  suite_add_tcase(s, tc);
  int rc = t4a_test_run(s);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", root);
  return rc;
}
