/* plugin-host/ktranslate.h -- CUDA C to the C++ translation unit the host
 * C++ compiler builds into a kernel module (kernel_abi.h).
 *
 * The unit is: the prelude (host_kernel.h, embedded in the plugin, so the
 * compiler never reads a file another user could replace), then `#line 1
 * "<name>"` and the consumer's source with the few rewrites the prelude
 * cannot do with macros, then the registration of every `extern "C"
 * __global__` kernel found in it (the module's T4A_HK_MODULE_SYMBOL).
 * Diagnostics therefore carry the consumer's file name and line numbers.
 *
 * Constructs the host cannot run (inline PTX asm, textures and surfaces,
 * dynamic parallelism, grid-wide cooperative sync, clusters, half types)
 * are refused here, before any compiler runs, with a log line per use:
 * "<name>:<line>:<col>: error: <construct> is not supported by the host
 * backend; <what to do>".
 *
 * The unit needs no include path and no file but itself; compile it as C++17
 * into a shared object: `-std=c++17 -O2 -fPIC -shared -fno-exceptions
 * -fno-rtti -fno-math-errno ... -lm` (the prelude's math calls the C
 * library's libm; -fno-math-errno lets the compiler inline sqrtf...). */
#ifndef T4A_PLUGIN_HOST_KTRANSLATE_H
#define T4A_PLUGIN_HOST_KTRANSLATE_H

#include <stdint.h>

typedef struct t4a__ktu {
  char *text; /* the unit, NUL-terminated (size bytes before the NUL) */
  uint64_t size;
  char *log; /* NUL-terminated refusals, or NULL */
  uint32_t kernel_count;
} t4a__ktu;

/* Translates size bytes of src (name: the file name for diagnostics). T4A_OK
 * with out->text; T4A_ECOMPILE with out->log (out->text NULL) when the
 * source uses what the host cannot run; T4A_ENOMEM. out is always
 * initialised: release it with t4a__ktu_free. */
int t4a__ktranslate(const char *src, uint64_t size, const char *name, t4a__ktu *out);
void t4a__ktu_free(t4a__ktu *t);

/* The prelude's identity, for the compile caches' key and the module's
 * check: "t4a-host-prelude <abi> <hash of its text>". */
const char *t4a__kprelude_id(void);

#endif
