/* backend-core/readonly.h -- the host ranges this backend registered
 * read-only (readonly.c), across all its runtimes.
 *
 * host_register with T4A_HOST_REGISTER_READ_ONLY promises that the device
 * only reads the memory; a pinned copy into such a host buffer is refused
 * through the buffer (pinned.c), and buffer_wrap_external asks here so
 * that the same memory cannot come back as a writable buffer of any
 * runtime (external.c). A range is listed from its registration until the
 * driver unpinned it (not when its handle went stale: queued work may still
 * read it, and a wrap meanwhile would still be writable memory the device
 * maps read-only). */
#ifndef T4A_CORE_READONLY_H
#define T4A_CORE_READONLY_H

#include <stdbool.h>
#include <stdint.h>

/* Lists [start, start + bytes); T4A_ENOMEM (with the message) if the list
 * cannot grow. */
int t4a__read_only_add(uint64_t start, uint64_t bytes);

/* Drops the range registered at start (after the driver unpinned it). */
void t4a__read_only_remove(uint64_t start);

/* Whether [start, start + bytes) overlaps a listed range; the first one
 * found goes to *found_start, *found_bytes. */
bool t4a__read_only_find(uint64_t start, uint64_t bytes, uint64_t *found_start,
                         uint64_t *found_bytes);

/* T4A_EINVAL naming `what` when a copy would write a host buffer that was
 * registered read-only (`read_only`), else T4A_OK: the check of every
 * device-to-host pinned copy, 1D and 2D, on every backend. */
int t4a__read_only_refuse_write(bool read_only, const char *what);

/* T4A_EINVAL naming `what` when [address, +bytes) overlaps a listed
 * range: wrapping it (buffer_wrap_external, dlpack_import) would make
 * memory the device may only read a writable buffer. */
int t4a__read_only_refuse_wrap(const char *what, uint64_t address, uint64_t bytes);

/* Plugin teardown: frees the list. */
void t4a__read_only_unload(void);

#endif
