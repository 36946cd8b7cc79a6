/* python/t4a_gpu/_fastcall.h -- the table slots t4a_gpu._fastcall calls,
 * declared as abi/t4a/gpu_backend_v1.h declares them.
 *
 * The extension is built from python/ alone (pip install ./python copies
 * only that folder), so it cannot include the ABI header; these lines
 * repeat what it needs of it. tests/bindings/test_fastcall_decls.c includes
 * the header first and then this file, which then takes the header's own
 * types, and checks at compile time that every prototype here is the
 * type of its slot: a change of the header that these lines miss fails
 * `make check`. */
#ifndef T4A_PY_FASTCALL_H
#define T4A_PY_FASTCALL_H

#include <stdint.h>

#ifndef T4A_GPU_BACKEND_V1_H /* without the header: its handle types, as it defines them */
typedef struct t4a_runtime {
  uint64_t bits;
} t4a_runtime;
typedef struct t4a_buffer {
  uint64_t bits;
} t4a_buffer;
typedef struct t4a_function {
  uint64_t bits;
} t4a_function;
#endif
struct t4a_launch_config; /* built by the ctypes layer; passed by address */

/* The slots, by name. */
typedef int (*t4a_py_launch_fn)(t4a_runtime rt, t4a_function f, const struct t4a_launch_config *cfg,
                                void **args);
typedef int (*t4a_py_buffer_alloc_fn)(t4a_runtime rt, uint64_t bytes, t4a_buffer *out);
typedef int (*t4a_py_buffer_free_fn)(t4a_runtime rt, t4a_buffer buf);

/* A launch's argument block: the parameters' bytes, then this many zero
 * bytes (t4a_gpu._launch._SLACK: a kernel whose parameter is larger than
 * the value given reads zeros of ours, never past them). */
#define T4A_PY_SLACK 4096
/* The most a fast launch packs (larger lists take the Python path). */
#define T4A_PY_FAST_ARGS 64
#define T4A_PY_FAST_BYTES 4096

#endif
