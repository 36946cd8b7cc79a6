/* plugin-cuda/artifact.c -- consumer bytes (artifact_from_bytes): PTX,
 * CUBIN or fatbin, checked here before they become an artifact
 * (backend-core/artifact.c keeps the artifacts, their log and the memory
 * cache). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "plugin-cuda/artifact.h"
#include "plugin-cuda/slots.h"

/* ---- consumer bytes ------------------------------------------------------------------ */

/* The driver's module load takes no length: it finds a CUBIN's or fatbin's
 * extent in the image's own headers. So every extent those headers name is
 * checked against `size` first, or a truncated image would make the driver
 * read past the copy. */

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) {
  return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16;
}
static uint64_t rd64(const unsigned char *p) {
  return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* True when [off, off + count * each) lies within size bytes. */
static bool table_fits(uint64_t off, uint64_t count, uint64_t each, uint64_t size) {
  uint64_t bytes;
  return t4a__mul_u64(count, each, &bytes) && t4a__range_ok(off, bytes, size);
}

#define ELF_HEADER 64u /* ELF64 */
#define ELF_SHT_NOBITS 8u

/* NULL when the ELF64 image's header, section and program tables and every
 * section's and segment's bytes lie within size; else what is wrong. */
static const char *elf_check(const unsigned char *b, uint64_t size) {
  if (size < ELF_HEADER || memcmp(b,
                                  "\x7f"
                                  "ELF",
                                  4) != 0)
    return "does not start with an ELF header (\\x7fELF); pass nvcc -cubin output";
  if (b[4] != 2 || b[5] != 1)
    return "is not a 64-bit little-endian ELF file; pass nvcc -cubin output";
  uint64_t phoff = rd64(b + 32), shoff = rd64(b + 40);
  uint16_t phentsize = rd16(b + 54), phnum = rd16(b + 56);
  uint16_t shentsize = rd16(b + 58), shnum = rd16(b + 60);
  if ((phnum && phentsize < 56) || (shnum && shentsize < 64))
    return "has ELF table entries smaller than ELF64's; the file is damaged";
  if (!table_fits(phoff, phnum, phentsize, size) || !table_fits(shoff, shnum, shentsize, size))
    return "is truncated: its ELF section or program table lies past the end";
  for (uint32_t i = 0; i < shnum; i++) {
    const unsigned char *sh = b + shoff + (uint64_t)i * shentsize;
    if (rd32(sh + 4) != ELF_SHT_NOBITS && !t4a__range_ok(rd64(sh + 24), rd64(sh + 32), size))
      return "is truncated: an ELF section lies past the end";
  }
  for (uint32_t i = 0; i < phnum; i++) {
    const unsigned char *ph = b + phoff + (uint64_t)i * phentsize;
    if (!t4a__range_ok(rd64(ph + 8), rd64(ph + 32), size))
      return "is truncated: an ELF segment lies past the end";
  }
  return NULL;
}

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_HEADER 16u /* magic, version, header size, size of the entries */
#define FATBIN_ENTRY 16u  /* kind, version, header size, payload size, ... */

/* NULL when the fatbin's header and its chain of entries lie within size. */
static const char *fatbin_check(const unsigned char *b, uint64_t size) {
  if (size < FATBIN_HEADER || rd32(b) != FATBIN_MAGIC)
    return "does not start with the fatbin magic 0xBA55ED50; pass nvcc -fatbin output";
  uint64_t at = rd16(b + 6), end;
  if (at < FATBIN_HEADER || !t4a__add_u64(at, rd64(b + 8), &end) || end > size)
    return "is truncated: its fatbin header names more bytes than were passed";
  while (at < end) {
    uint64_t next;
    if (end - at < FATBIN_ENTRY || rd32(b + at + 4) < FATBIN_ENTRY ||
        !t4a__add_u64(at + rd32(b + at + 4), rd64(b + at + 8), &next) || next > end)
      return "is truncated or damaged: a fatbin entry lies past the end";
    at = next;
  }
  return NULL;
}

int t4a__slot_artifact_from_bytes(t4a_artifact_kind kind, const void *data, uint64_t size,
                                  const char *name, t4a_artifact *out) {
  T4A__FORK_CHECK("artifact_from_bytes");
  if (!out)
    return t4a__fail(T4A_EINVAL, "artifact_from_bytes: out is NULL; pass a pointer");
  out->bits = 0;
  if (!data || !size || size > (1ull << 31))
    return t4a__fail(T4A_EINVAL, "artifact_from_bytes: %s; pass 1 byte to 2 GiB of code",
                     data ? "the size is 0 or above 2 GiB" : "data is NULL");
  const unsigned char *b = data;
  switch (kind) {
  case T4A_ARTIFACT_PTX:
    if (memchr(b, 0, (size_t)size) && strnlen(data, (size_t)size) + 1 != size)
      return t4a__fail(T4A_EINVAL, "artifact_from_bytes: PTX text has a NUL byte inside; pass "
                                   "the text (a final NUL is fine)");
    if (b[size - 1] == 0)
      size--; /* keep the text; we add our own NUL */
    break;
  case T4A_ARTIFACT_CUBIN:
  case T4A_ARTIFACT_FATBIN: {
    const char *bad = kind == T4A_ARTIFACT_CUBIN ? elf_check(b, size) : fatbin_check(b, size);
    if (bad)
      return t4a__fail(T4A_EINVAL, "artifact_from_bytes: the %s of %llu bytes %s",
                       kind == T4A_ARTIFACT_CUBIN ? "CUBIN" : "fatbin", (unsigned long long)size,
                       bad);
    break;
  }
  case T4A_ARTIFACT_HOST:
    return t4a__fail(T4A_EUNSUPPORTED,
                     "artifact_from_bytes: a host shared object (T4A_ARTIFACT_HOST) is CPU code "
                     "of the host backend, which a GPU cannot run; compile the CUDA C source "
                     "with artifact_compile on this backend, or load the bytes on the host "
                     "backend");
  default:
    return t4a__fail(T4A_EINVAL,
                     "artifact_from_bytes: unknown kind %d; use T4A_ARTIFACT_PTX, "
                     "_CUBIN or _FATBIN",
                     (int)kind);
  }
  return t4a__artifact_from_copy(kind, data, size, name, out);
}
