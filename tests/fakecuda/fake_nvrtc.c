/* tests/fakecuda/fake_nvrtc.c -- a test-only stand-in for libnvrtc.so.
 *
 * "Compiles" CUDA C by finding its kernels (`__global__ void NAME(`) and
 * emitting PTX with one `.entry NAME` per kernel, or a minimal ELF64 image
 * holding the NUL-terminated names: exactly what the fake driver's module
 * loader looks for, so a kernel whose name the fake driver implements (the
 * table in fake_kernels.c: t4a_empty, t4a_fill_u32, t4a_axpy_f32, ...) runs
 * on the CPU. This lets the end-to-end flows (t4a-gpu selftest, the Python
 * and Rust examples) run in GPU-less CI; the GPU lane runs them on real
 * NVRTC.
 *
 * A source containing `#error` fails with NVRTC_ERROR_COMPILATION and a
 * log line quoting it; an option starting with `--fake-bad` is rejected
 * with NVRTC_ERROR_INVALID_OPTION. FAKE_NVRTC_VERSION (e.g. 12080, the
 * default) sets the reported version. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef unsigned int nvrtc_result;
enum {
  NVRTC_SUCCESS = 0,
  NVRTC_ERROR_OUT_OF_MEMORY = 1,
  NVRTC_ERROR_INVALID_INPUT = 3,
  NVRTC_ERROR_INVALID_PROGRAM = 4,
  NVRTC_ERROR_INVALID_OPTION = 5,
  NVRTC_ERROR_COMPILATION = 6,
};

typedef struct program {
  char *source;
  char *log; /* NUL-terminated, "" before compiling */
  char *ptx; /* NUL-terminated */
  char *elf; /* ELF64 header + "\0name\0name\0" */
  size_t elf_size;
} program;

EXPORT nvrtc_result nvrtcVersion(int *major, int *minor);
EXPORT const char *nvrtcGetErrorString(nvrtc_result r);
EXPORT nvrtc_result nvrtcCreateProgram(program **p, const char *src, const char *name, int nheaders,
                                       const char *const *headers,
                                       const char *const *include_names);
EXPORT nvrtc_result nvrtcDestroyProgram(program **p);
EXPORT nvrtc_result nvrtcCompileProgram(program *p, int nopts, const char *const *opts);
EXPORT nvrtc_result nvrtcGetProgramLogSize(program *p, size_t *n);
EXPORT nvrtc_result nvrtcGetProgramLog(program *p, char *log);
EXPORT nvrtc_result nvrtcGetPTXSize(program *p, size_t *n);
EXPORT nvrtc_result nvrtcGetPTX(program *p, char *ptx);
EXPORT nvrtc_result nvrtcGetCUBINSize(program *p, size_t *n);
EXPORT nvrtc_result nvrtcGetCUBIN(program *p, char *cubin);

nvrtc_result nvrtcVersion(int *major, int *minor) {
  const char *v = getenv("FAKE_NVRTC_VERSION");
  int version = v ? atoi(v) : 12080;
  *major = version / 1000;
  *minor = version % 1000 / 10;
  return NVRTC_SUCCESS;
}

const char *nvrtcGetErrorString(nvrtc_result r) {
  switch (r) {
  case NVRTC_SUCCESS: return "NVRTC_SUCCESS";
  case NVRTC_ERROR_OUT_OF_MEMORY: return "NVRTC_ERROR_OUT_OF_MEMORY";
  case NVRTC_ERROR_INVALID_INPUT: return "NVRTC_ERROR_INVALID_INPUT";
  case NVRTC_ERROR_INVALID_PROGRAM: return "NVRTC_ERROR_INVALID_PROGRAM";
  case NVRTC_ERROR_INVALID_OPTION: return "NVRTC_ERROR_INVALID_OPTION";
  case NVRTC_ERROR_COMPILATION: return "NVRTC_ERROR_COMPILATION";
  default: return "NVRTC_ERROR_UNKNOWN";
  }
}

nvrtc_result nvrtcCreateProgram(program **p, const char *src, const char *name, int nheaders,
                                const char *const *headers, const char *const *include_names) {
  (void)name, (void)nheaders, (void)headers, (void)include_names;
  if (!p || !src)
    return NVRTC_ERROR_INVALID_INPUT;
  program *prog = calloc(1, sizeof *prog);
  if (!prog || !(prog->source = strdup(src)) || !(prog->log = strdup(""))) {
    if (prog)
      free(prog->source);
    free(prog);
    return NVRTC_ERROR_OUT_OF_MEMORY;
  }
  *p = prog;
  return NVRTC_SUCCESS;
}

nvrtc_result nvrtcDestroyProgram(program **p) {
  if (!p || !*p)
    return NVRTC_ERROR_INVALID_PROGRAM;
  free((*p)->source);
  free((*p)->log);
  free((*p)->ptx);
  free((*p)->elf);
  free(*p);
  *p = NULL;
  return NVRTC_SUCCESS;
}

/* Appends the kernel names of src (`__global__ void NAME(`) to names, each
 * followed by sep; returns the bytes written (names may be NULL: sizing). */
static size_t kernel_names(const char *src, char *names, char sep) {
  static const char key[] = "__global__";
  size_t n = 0;
  for (const char *p = strstr(src, key); p; p = strstr(p + 1, key)) {
    const char *q = p + sizeof key - 1;
    q += strspn(q, " \t\n");
    if (strncmp(q, "void", 4) != 0)
      continue;
    q += 4;
    q += strspn(q, " \t\n");
    size_t len = strspn(q, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
    if (!len)
      continue;
    if (names) {
      memcpy(names + n, q, len);
      names[n + len] = sep;
    }
    n += len + 1;
  }
  return n;
}

static nvrtc_result set_log(program *p, const char *text) {
  char *log = strdup(text);
  if (!log)
    return NVRTC_ERROR_OUT_OF_MEMORY;
  free(p->log);
  p->log = log;
  return NVRTC_SUCCESS;
}

static nvrtc_result build_ptx(program *p, size_t names_size) {
  static const char head[] = "//\n// fake NVRTC\n//\n.version 8.0\n.target sm_90\n"
                             ".address_size 64\n";
  static const char body[] = ".visible .entry %s(\n)\n{\n  ret;\n}\n";
  char *names = malloc(names_size + 1);
  size_t cap = sizeof head + names_size * 2 + 64 * (names_size + 1);
  p->ptx = malloc(cap);
  if (!names || !p->ptx) {
    free(names);
    return NVRTC_ERROR_OUT_OF_MEMORY;
  }
  kernel_names(p->source, names, '\0');
  size_t len = (size_t)snprintf(p->ptx, cap, "%s", head);
  for (size_t i = 0; i < names_size; i += strlen(names + i) + 1)
    len += (size_t)snprintf(p->ptx + len, cap - len, body, names + i);
  free(names);
  return NVRTC_SUCCESS;
}

static nvrtc_result build_elf(program *p, size_t names_size) {
  /* the ELF64 header the fake driver sizes images by: shoff + 0 sections */
  size_t size = 64 + 1 + names_size;
  p->elf = calloc(1, size);
  if (!p->elf)
    return NVRTC_ERROR_OUT_OF_MEMORY;
  memcpy(p->elf,
         "\x7f"
         "ELF",
         4);
  p->elf[4] = 2;          /* ELFCLASS64 */
  p->elf[5] = 1;          /* little endian */
  p->elf[6] = 1;          /* EV_CURRENT */
  p->elf[18] = (char)190; /* EM_CUDA */
  uint64_t shoff = size;
  uint16_t shentsize = 64, shnum = 0;
  memcpy(p->elf + 0x28, &shoff, 8);
  memcpy(p->elf + 0x3a, &shentsize, 2);
  memcpy(p->elf + 0x3c, &shnum, 2);
  kernel_names(p->source, p->elf + 65, '\0'); /* each name NUL-preceded and -terminated */
  p->elf_size = size;
  return NVRTC_SUCCESS;
}

nvrtc_result nvrtcCompileProgram(program *p, int nopts, const char *const *opts) {
  if (!p)
    return NVRTC_ERROR_INVALID_PROGRAM;
  for (int i = 0; i < nopts; i++)
    if (strncmp(opts[i], "--fake-bad", 10) == 0) {
      char line[256];
      snprintf(line, sizeof line, "nvrtc: error: invalid option %s\n", opts[i]);
      set_log(p, line);
      return NVRTC_ERROR_INVALID_OPTION;
    }
  const char *err = strstr(p->source, "#error");
  if (err) {
    char line[256];
    snprintf(line, sizeof line, "fake.cu(1): error: %.*s\n1 error detected\n",
             (int)strcspn(err, "\n"), err);
    set_log(p, line);
    return NVRTC_ERROR_COMPILATION;
  }
  size_t names_size = kernel_names(p->source, NULL, '\0');
  nvrtc_result r = build_ptx(p, names_size);
  return r ? r : build_elf(p, names_size);
}

nvrtc_result nvrtcGetProgramLogSize(program *p, size_t *n) {
  if (!p || !n)
    return NVRTC_ERROR_INVALID_INPUT;
  *n = strlen(p->log) + 1;
  return NVRTC_SUCCESS;
}

nvrtc_result nvrtcGetProgramLog(program *p, char *log) {
  if (!p || !log)
    return NVRTC_ERROR_INVALID_INPUT;
  memcpy(log, p->log, strlen(p->log) + 1);
  return NVRTC_SUCCESS;
}

nvrtc_result nvrtcGetPTXSize(program *p, size_t *n) {
  if (!p || !n || !p->ptx)
    return NVRTC_ERROR_INVALID_PROGRAM;
  *n = strlen(p->ptx) + 1;
  return NVRTC_SUCCESS;
}

nvrtc_result nvrtcGetPTX(program *p, char *ptx) {
  if (!p || !ptx || !p->ptx)
    return NVRTC_ERROR_INVALID_PROGRAM;
  memcpy(ptx, p->ptx, strlen(p->ptx) + 1);
  return NVRTC_SUCCESS;
}

nvrtc_result nvrtcGetCUBINSize(program *p, size_t *n) {
  if (!p || !n || !p->elf)
    return NVRTC_ERROR_INVALID_PROGRAM;
  *n = p->elf_size;
  return NVRTC_SUCCESS;
}

nvrtc_result nvrtcGetCUBIN(program *p, char *cubin) {
  if (!p || !cubin || !p->elf)
    return NVRTC_ERROR_INVALID_PROGRAM;
  memcpy(cubin, p->elf, p->elf_size);
  return NVRTC_SUCCESS;
}
