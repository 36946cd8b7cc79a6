/* backend-core/structs.h -- the struct_size rules of the header's Versioning
 * section (structs.c), shared by every backend: a caller's struct is
 * accepted from its v1.0 size up and read only as far as the callee knows
 * it; an info struct is filled as far as both sides know it. */
#ifndef T4A_CORE_STRUCTS_H
#define T4A_CORE_STRUCTS_H

#include <stddef.h>

/* Checks the struct_size of a caller-provided struct: T4A_EINVAL (with the
 * message) when s is NULL or its struct_size is below min_size. */
int t4a__check_struct(const void *s, size_t min_size, const char *what);

/* Copies min(caller size, ours) bytes of a filled info struct and sets its
 * struct_size to the bytes written. */
void t4a__fill_struct(void *dst, const void *src, size_t src_size);

#endif
