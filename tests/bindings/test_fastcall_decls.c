/* tests/bindings/test_fastcall_decls.c -- the declarations of the Python
 * package's compiled fast path (python/t4a_gpu/_fastcall.h, which cannot
 * include the ABI header: the package builds from python/ alone) against
 * the header: included after it, _fastcall.h takes the header's handle
 * types, and each of its slot types must be exactly the slot's. A header
 * change that _fastcall.h misses fails this compile; the program then
 * checks the handle layout the extension relies on when built alone. */
#include "config.h"

#include <stddef.h>
#include <stdio.h>

#include "t4a/gpu_backend_v1.h"

#include "python/t4a_gpu/_fastcall.h"

#define SAME_SLOT(slot, type)                                                                      \
  _Static_assert(__builtin_types_compatible_p(__typeof__(((t4a_gpu_backend_v1 *)0)->slot), type),  \
                 "python/t4a_gpu/_fastcall.h: " #type " is not the type of the " #slot " slot")

SAME_SLOT(launch, t4a_py_launch_fn);
SAME_SLOT(buffer_alloc, t4a_py_buffer_alloc_fn);
SAME_SLOT(buffer_free, t4a_py_buffer_free_fn);

/* What _fastcall.h defines on its own, without the header. */
_Static_assert(sizeof(t4a_runtime) == 8 && offsetof(t4a_runtime, bits) == 0, "t4a_runtime");
_Static_assert(sizeof(t4a_buffer) == 8 && offsetof(t4a_buffer, bits) == 0, "t4a_buffer");
_Static_assert(sizeof(t4a_function) == 8 && offsetof(t4a_function, bits) == 0, "t4a_function");

int main(void) {
  puts("python/t4a_gpu/_fastcall.h declares launch, buffer_alloc and buffer_free as the header");
  return 0;
}
