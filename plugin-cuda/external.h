/* plugin-cuda/external.h -- memory the runtime did not allocate, as buffers
 * (external.c): buffer_wrap_external, and the wrapping dlpack.c imports
 * through. */
#ifndef T4A_PLUGIN_CUDA_EXTERNAL_H
#define T4A_PLUGIN_CUDA_EXTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin-cuda/memory.h"

/* Wraps [address, address + bytes) as a new buffer of rt (rt locked): the
 * range is checked with the driver (device memory of rt's device, or with
 * `host` page-locked host memory the device can address); release(user)
 * runs once when the runtime lets the memory go. `what` names the call in a
 * failure's detail. */
int t4a__external_wrap(t4a__runtime *rt, const char *what, uint64_t address, uint64_t bytes,
                       bool host, void (*release)(void *user), void *user, t4a_buffer *out);

/* Whether b wraps page-locked host memory (T4A_EXTERNAL_HOST); *host_address
 * then receives its host address. */
bool t4a__external_host(const t4a__buffer *b, uint64_t *host_address);

#endif
