/* tests/loader/fake_backend.c -- fake backend plugins for the loader tests.
 * Built once per FAKE_VARIANT (see Makefile.am); each variant breaks or
 * bends one rule of the v1 contract. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "t4a/gpu_backend_v1.h"

#define FAKE_GOOD 1
#define FAKE_MAJOR 2    /* reports ABI major 2 */
#define FAKE_NEWER 3    /* minor 7, a bigger table with unknown slots */
#define FAKE_OLDER 4    /* a table covering only the required slots */
#define FAKE_NOENTRY 5  /* no entry symbol */
#define FAKE_NULLSLOT 6 /* init slot NULL */
#define FAKE_INITFAIL 7 /* init fails with ENODEVICE */
#define FAKE_OTHER 8    /* a second good backend, for swapping */
#define FAKE_TINY 9     /* struct_size below the required slots */
#define FAKE_REENTER 10 /* calls back into the loader from its constructor and entry */
#define FAKE_BADSTR 11  /* strings that are unterminated, control bytes, invalid UTF-8 */

#define EXPORT __attribute__((visibility("default")))

static int inits; /* per load: reset when the plugin is unloaded and reloaded */
static _Thread_local t4a_error_info last = {sizeof(t4a_error_info), 0, 0, "", ""};

static int fake_last_error(t4a_error_info *info) {
  if (!info || info->struct_size < T4A_ERROR_INFO_V1_0_SIZE)
    return T4A_EINVAL;
  *info = last;
  return T4A_OK;
}

static int fake_init(void) {
  __atomic_add_fetch(&inits, 1, __ATOMIC_SEQ_CST);
#if FAKE_VARIANT == FAKE_INITFAIL
  last.status = T4A_ENODEVICE;
  last.message = "fake: no device; plug one in";
  return T4A_ENODEVICE;
#else
  return T4A_OK;
#endif
}

#if FAKE_VARIANT == FAKE_REENTER
#include "t4a/gpu_loader.h"

/* What the calls back into the loader returned (get_info reports them). */
static int ctor_rc = 1, entry_rc = 1;
static _Thread_local int in_entry;

/* Opens and closes a backend by name (found in T4A_GPU_BACKEND_PATH, which
 * the test sets). By name, not dladdr()'s file name: that string belongs to
 * the dynamic linker, and TSan cannot see the lock that orders its release. */
static int open_and_close(const char *name) {
  t4a_gpu_backend *b = NULL;
  int rc = t4a_gpu_open(name, &b);
  return rc == T4A_OK ? t4a_gpu_close(b) : rc;
}

/* Runs inside dlopen, while the loader is loading this plugin: another
 * backend. */
__attribute__((constructor)) static void reenter_from_constructor(void) {
  __atomic_store_n(&ctor_rc, open_and_close("fakegood"), __ATOMIC_SEQ_CST);
}

/* Runs inside the loader's call of the entry point: this very plugin. */
static void reenter_from_entry(void) {
  if (in_entry)
    return; /* the nested open calls the entry point too */
  in_entry = 1;
  __atomic_store_n(&entry_rc, open_and_close(FAKE_NAME), __ATOMIC_SEQ_CST);
  in_entry = 0;
}
#endif

#if FAKE_VARIANT == FAKE_BADSTR
/* Fills the whole array dst[size] with the bytes of src, repeated, and no
 * NUL: a reader that trusts it to be terminated reads past its end. */
static void fill_unterminated(char *dst, size_t size, const char *src) {
  size_t n = strlen(src);
  for (size_t i = 0; i < size; i++)
    dst[i] = src[i % n];
}

/* A log/terminal forgery, controls (C0, DEL, C1 as UTF-8), quotes and
 * backslashes, then invalid UTF-8: a stray continuation byte, an overlong
 * NUL, a surrogate, a code point above U+10FFFF, 0xff, and a sequence cut
 * short by the next byte. Valid UTF-8 ("\xc3\xa9", e-acute) stays. */
static const char hostile[] = "\n\x1b[2Jt4a[cuda] error: forged\r\t\x7f\xc2\x9b\"\\\xc3\xa9"
                              "\x80\xc0\x80\xed\xa0\x80\xf4\x90\x80\x80\xff\xe2\x82";

static int fake_compiler_info(t4a_compiler_info *info) {
  if (!info || info->struct_size < T4A_COMPILER_INFO_V1_0_SIZE)
    return T4A_EINVAL;
  info->status = T4A_ENOCOMPILER;
  fill_unterminated(info->path, sizeof info->path, hostile);
  fill_unterminated(info->reason, sizeof info->reason, hostile);
  return T4A_OK;
}
#endif

static int fake_get_info(t4a_backend_info *info) {
  if (!info || info->struct_size < T4A_BACKEND_INFO_V1_0_SIZE)
    return T4A_EINVAL;
  size_t n = info->struct_size < sizeof *info ? info->struct_size : sizeof *info;
  memset((char *)info + 4, 0, n - 4);
  snprintf(info->name, sizeof info->name, "%s", FAKE_NAME);
  info->device_count = __atomic_load_n(&inits, __ATOMIC_SEQ_CST); /* this load's init count */
#if FAKE_VARIANT == FAKE_BADSTR
  fill_unterminated(info->name, sizeof info->name, hostile);
  fill_unterminated(info->version, sizeof info->version, hostile);
  fill_unterminated(info->driver_path, sizeof info->driver_path, hostile);
  info->driver_version = 12080;
#endif
#if FAKE_VARIANT == FAKE_REENTER
  snprintf(info->driver_path, sizeof info->driver_path, "ctor=%d entry=%d",
           __atomic_load_n(&ctor_rc, __ATOMIC_SEQ_CST),
           __atomic_load_n(&entry_rc, __ATOMIC_SEQ_CST));
#endif
  return T4A_OK;
}

static int fake_device_count(int32_t *n) {
#if FAKE_VARIANT == FAKE_BADSTR
  *n = 1;
#else
  *n = 3;
#endif
  return T4A_OK;
}

static int fake_device_info(int32_t ordinal, t4a_device_info *info) {
#if FAKE_VARIANT == FAKE_BADSTR
  if (!info || info->struct_size < T4A_DEVICE_INFO_V1_0_SIZE)
    return T4A_EINVAL;
  info->ordinal = ordinal;
  fill_unterminated(info->name, sizeof info->name, hostile);
  fill_unterminated(info->pci_bus_id, sizeof info->pci_bus_id, hostile);
  return T4A_OK;
#else
  (void)ordinal;
  (void)info;
  return T4A_EUNSUPPORTED;
#endif
}

/* A table with room after the v1.0 slots, so the "newer" variant can claim
 * slots this loader does not know. */
__attribute__((unused)) static struct {
  t4a_gpu_backend_v1 v1;
  void (*future[2])(void);
} table = {
    .v1 =
        {
            .struct_size = sizeof(t4a_gpu_backend_v1),
            .abi_major = T4A_GPU_BACKEND_ABI_MAJOR,
            .abi_minor = T4A_GPU_BACKEND_ABI_MINOR,
            .name = FAKE_NAME,
            .version = "0.0.1",
            .last_error = fake_last_error,
            .init = fake_init,
            .get_info = fake_get_info,
            .device_count = fake_device_count,
            .device_info = fake_device_info,
        },
};

__attribute__((unused)) static void
poison(void) { /* never called: a non-NULL pointer in a slot the table hides */
}

#if FAKE_VARIANT != FAKE_NOENTRY
EXPORT int t4a_gpu_backend_v1_entry(uint16_t major, uint16_t minor, const t4a_gpu_backend_v1 **out);
int t4a_gpu_backend_v1_entry(uint16_t major, uint16_t minor, const t4a_gpu_backend_v1 **out) {
  (void)minor;
  if (major != T4A_GPU_BACKEND_ABI_MAJOR)
    return T4A_EABI;
#if FAKE_VARIANT == FAKE_REENTER
  reenter_from_entry();
#endif
#if FAKE_VARIANT == FAKE_MAJOR
  table.v1.abi_major = 2;
#elif FAKE_VARIANT == FAKE_BADSTR
  table.v1.name = hostile; /* the loader logs these */
  table.v1.version = hostile;
  table.v1.compiler_info = fake_compiler_info;
#elif FAKE_VARIANT == FAKE_NEWER
  table.v1.abi_minor = 7;
  table.v1.struct_size = sizeof table;
  table.future[0] = poison;
  table.future[1] = poison;
#elif FAKE_VARIANT == FAKE_OLDER
  table.v1.struct_size = T4A_SIZE_THROUGH(t4a_gpu_backend_v1, device_info);
  table.v1.compiler_info = (int (*)(t4a_compiler_info *))poison; /* beyond struct_size */
  table.v1.launch = (int (*)(t4a_runtime, t4a_function, const t4a_launch_config *, void **))poison;
#elif FAKE_VARIANT == FAKE_NULLSLOT
  table.v1.init = NULL;
#elif FAKE_VARIANT == FAKE_TINY
  table.v1.struct_size = 24;
#endif
  *out = &table.v1;
  return T4A_OK;
}
#else
EXPORT int not_the_entry(void);
int not_the_entry(void) { return (int)(uintptr_t)poison; }
#endif
