/* plugin-cuda/module.h -- a runtime's loaded modules and the functions looked
 * up in them (module.c); launches (launch.c). */
#ifndef T4A_PLUGIN_CUDA_MODULE_H
#define T4A_PLUGIN_CUDA_MODULE_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin-cuda/backend.h"
#include "plugin-cuda/handle.h"

typedef struct t4a__runtime t4a__runtime;

typedef struct t4a__module {
  t4a__hslot h;
  t4a__CUmodule mod;
  char name[64];
} t4a__module;

typedef struct t4a__function {
  t4a__hslot h;
  t4a__CUfunction fn;
  uint32_t module;     /* index of its module */
  int32_t max_threads; /* per block, for this kernel */
  int32_t static_shared;
  int32_t max_dynamic; /* dynamic shared memory allowed now */
  char name[64];
} t4a__function;

typedef struct t4a__modules {
  t4a__htable mods;  /* of t4a__module */
  t4a__htable funcs; /* of t4a__function */
} t4a__modules;

void t4a__modules_init(t4a__runtime *rt);

/* Destroy: idle unloads every module and frees the bookkeeping; after a
 * fault modules are kept (kernels may still run). */
void t4a__modules_fini(t4a__runtime *rt, bool idle);

/* Validates a function handle of rt. */
int t4a__function_get(t4a__runtime *rt, t4a_function h, const char *what, t4a__function **out);

#endif
