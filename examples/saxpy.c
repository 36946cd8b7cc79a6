/* examples/saxpy.c -- the shortest complete t4a consumer:
 * loader -> backend -> runtime -> compile -> upload -> launch -> download ->
 * verify against the CPU.
 *
 *   cc saxpy.c $(pkg-config --cflags --libs t4a-gpu) -o saxpy && ./saxpy
 *   ./saxpy --help
 *
 * Exit status, as t4a-gpu's: 0 verified, 1 a call failed or the result is
 * wrong, 2 usage error, 3 no backend found, 4 the backend cannot be used
 * here (no driver, no GPU, no compiler: the reason is printed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <t4a/gpu_loader.h>

static const char source[] =
    "extern \"C\" __global__ void saxpy(unsigned long long n, float a, const float *x, float *y) "
    "{\n"
    "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "       i < n; i += (unsigned long long)gridDim.x * blockDim.x)\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n";

static const t4a_gpu_backend_v1 *t;

/* Prints the failure and exits: 4 for what the host lacks, else 1. */
static void check(int rc, const char *what) {
  if (rc == T4A_OK)
    return;
  t4a_error_info e = {.struct_size = sizeof e};
  t->last_error(&e);
  fprintf(stderr, "saxpy: %s: %s: %s\n", what, t4a_status_name(rc), e.message);
  int unusable = rc == T4A_ENODRIVER || rc == T4A_ESTUBDRIVER || rc == T4A_ENODEVICE ||
                 rc == T4A_EDRIVEROLD || rc == T4A_EDRIVERMISMATCH || rc == T4A_ENOCOMPILER;
  exit(unusable ? 4 : 1);
}

static void usage(FILE *f) {
  fputs("usage: saxpy [--help]\n"
        "y = 2.5 * x + y on 1 Mi floats, compiled with NVRTC and run on device 0 of the default\n"
        "backend ($T4A_GPU_BACKEND, else cuda), checked against the CPU.\n"
        "exit status: 0 verified, 1 a call failed or the result is wrong, 2 usage error,\n"
        "             3 no backend found, 4 the backend cannot be used here (reason printed)\n",
        f);
}

int main(int argc, char **argv) {
  if (argc > 1) {
    int help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
    if (help && argc == 2) {
      usage(stdout);
      return 0;
    }
    fprintf(stderr, "saxpy: unexpected argument '%s'\n", argv[help ? 2 : 1]);
    usage(stderr);
    return 2;
  }
  t4a_gpu_backend *backend;
  if (t4a_gpu_open(NULL, &backend) != T4A_OK) {
    fprintf(stderr, "saxpy: %s\n", t4a_gpu_last_error());
    return 3;
  }
  t = t4a_gpu_backend_table(backend);
  check(t->init(), "init");

  t4a_runtime rt;
  check(t->runtime_create(0, NULL, &rt), "runtime_create");
  t4a_compile_options opts = {.struct_size = sizeof opts, .source = source, .name = "saxpy.cu"};
  t4a_artifact code;
  check(t->artifact_compile(&opts, &code), "artifact_compile");
  t4a_module module;
  t4a_function saxpy;
  check(t->module_load(rt, code, &module), "module_load");
  check(t->function_get(rt, module, "saxpy", &saxpy), "function_get");
  check(t->artifact_release(code), "artifact_release");

  unsigned long long n = 1 << 20;
  float a = 2.5f, *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  for (unsigned long long i = 0; i < n; i++) {
    x[i] = (float)(i % 1000) / 1000.0f;
    y[i] = (float)(i % 77);
  }
  t4a_buffer dx, dy;
  check(t->buffer_alloc(rt, n * sizeof *x, &dx), "buffer_alloc");
  check(t->buffer_alloc(rt, n * sizeof *y, &dy), "buffer_alloc");
  check(t->copy_h2d(rt, dx, 0, x, n * sizeof *x), "copy_h2d");
  check(t->copy_h2d(rt, dy, 0, y, n * sizeof *y), "copy_h2d");

  uint64_t px, py;
  check(t->buffer_device_address(rt, dx, &px), "buffer_device_address");
  check(t->buffer_device_address(rt, dy, &py), "buffer_device_address");
  void *args[] = {&n, &a, &px, &py};
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {256, 1, 1}, .block = {256, 1, 1}};
  check(t->launch(rt, saxpy, &cfg, args), "launch");

  float *out = malloc(n * sizeof *out);
  check(t->copy_d2h(rt, out, dy, 0, n * sizeof *out), "copy_d2h"); /* waits for the launch */
  unsigned long long bad = 0;
  for (unsigned long long i = 0; i < n; i++) {
    double want = (double)a * (double)x[i] + (double)y[i];
    bad += fabs((double)out[i] - want) > 1e-5 * (fabs(want) + 1);
  }
  printf("saxpy: %llu elements, %llu wrong\n", n, bad);

  check(t->runtime_destroy(rt, T4A_WAIT_FOREVER), "runtime_destroy");
  t4a_gpu_close(backend);
  free(x);
  free(y);
  free(out);
  return bad ? 1 : 0;
}
