/* plugin-host/module.c -- a runtime's kernel modules and their functions
 * (kernel.h): module_load, module_unload, function_get,
 * function_attributes, function_set_max_dynamic_shared and the occupancy
 * slots.
 *
 * Loading never writes a file another user could replace: the artifact's
 * shared object is written into a memfd (sealed against writes) and opened
 * by dlopen through /proc/self/fd/N; the memfd stays open until the module
 * is closed, since the dynamic linker knows a loaded object by the name it
 * was opened by: a second module opened as the same /proc/self/fd/N (the
 * number reused once the first memfd was closed) would be given the first
 * module's object, code and all. Where memfd_create or /proc is missing,
 * into a fresh 0700 directory of mkdtemp's, unlinked (with the directory)
 * right after dlopen. Each module_load opens its own copy (its static
 * shared memory and statics are its own), so unloading one runtime's
 * module never touches another's. module_unload makes the functions stale
 * at once and closes the module once the queue ran past every launch of
 * it (a retirement, retire.c), as the CUDA plugin retires a driver module.
 *
 * What the slots answer for a CPU (the header's function_attributes and
 * occupancy comments say the same): max_threads_per_block =
 * __launch_bounds__'s value or 1024; max_dynamic_shared_bytes = the current
 * limit (48 KiB, raised by function_set_max_dynamic_shared up to the
 * device's opt-in limit; the module's kernel's, which every handle function_get
 * gave for it shares, as a CUfunction's attribute); registers, static shared and local bytes and
 * the PTX and binary versions are 0 (a CPU has no registers to count, and a module does not report
 * its static shared memory). A "multiprocessor" is one CPU: it runs one block at a time, so
 * occupancy_max_active_blocks is 1 (its checks are the CUDA plugin's, backend-core/geometry.c); the
 * suggested block size is 256 threads (or the limits below it), and the smallest grid that fills
 * the device is one block per CPU. There are no clusters. */
#include "config.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend-core/artifact.h"
#include "backend-core/geometry.h"
#include "backend-core/kinds.h"
#include "backend-core/slots.h"
#include "backend-core/structs.h"
#include "common/env.h"
#include "common/str.h"
#include "plugin-host/host.h"

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#else
#define HOST_MACHINE EM_NONE
#endif
#define MAX_PARAM_BYTES 32764u /* CUDA's limit on a kernel's parameters */

static int module_of(t4a__hrt *rt, t4a_module h, const char *what, t4a__hmodule **out) {
  int rc;
  *out = t4a__htable_find(&rt->mods, &t4a__module_kind, rt->slot.index, h.bits, what, &rc);
  return rc;
}

int t4a__hfunc_get(t4a__hrt *rt, t4a_function h, const char *what, t4a__hfunc **out) {
  int rc;
  *out = t4a__htable_find(&rt->funcs, &t4a__function_kind, rt->slot.index, h.bits, what, &rc);
  return rc;
}

void t4a__hkernels_init(t4a__hrt *rt) {
  t4a__htable_init(&rt->mods, sizeof(t4a__hmodule));
  t4a__htable_init(&rt->funcs, sizeof(t4a__hfunc));
}

void t4a__hkernels_fini(t4a__hrt *rt) {
  for (uint32_t i = 0; i < rt->mods.count; i++) {
    t4a__hmodule *m = t4a__htable_at(&rt->mods, i);
    if (m->h.live) {
      dlclose(m->dl);
      if (m->fd >= 0)
        close(m->fd);
    }
  }
  t4a__htable_fini(&rt->mods);
  t4a__htable_fini(&rt->funcs);
}

/* ---- loading -------------------------------------------------------------------------- */

/* NULL when b is an ELF shared object for this machine; else what it is. */
static const char *elf_check(const unsigned char *b, uint64_t size) {
  if (size < sizeof(Elf64_Ehdr) || memcmp(b, ELFMAG, SELFMAG) != 0)
    return "does not start with an ELF header";
  Elf64_Ehdr h;
  memcpy(&h, b, sizeof h);
  uint16_t one = 1;
  unsigned char native = *(unsigned char *)&one ? ELFDATA2LSB : ELFDATA2MSB;
  if (h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_ident[EI_DATA] != native)
    return "is not a 64-bit ELF file of this machine's byte order";
  if (h.e_type != ET_DYN)
    return "is not a shared object (ET_DYN)";
  if (h.e_machine != HOST_MACHINE)
    return "is built for another machine architecture";
  return NULL;
}

static bool write_all(int fd, const char *p, uint64_t n) {
  while (n) {
    ssize_t w = write(fd, p, n > (1u << 30) ? (1u << 30) : (size_t)n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    p += w;
    n -= (uint64_t)w;
  }
  return true;
}

/* dlopen of the bytes through a sealed memfd, kept open in *memfd while
 * the module is loaded (see the top); NULL with *why when that path is
 * unavailable or failed. */
static void *open_memfd(const t4a__code *code, char *why, size_t why_size, bool *fallback,
                        int *memfd) {
  *fallback = true;
  *memfd = -1;
#ifdef MFD_CLOEXEC
  int fd = memfd_create("t4a-kernel-module", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    snprintf(why, why_size, "memfd_create failed (errno %d)", errno);
    return NULL;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  if (!write_all(fd, code->data, code->size)) {
    snprintf(why, why_size, "writing the memfd failed (errno %d)", errno);
    close(fd);
    return NULL;
  }
  /* nothing can change the image from now on, whoever holds the fd */
  fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  if (access(path, R_OK) != 0) { /* no /proc */
    snprintf(why, why_size, "%s is not reachable (errno %d)", path, errno);
    close(fd);
    return NULL;
  }
  *fallback = false;
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    snprintf(why, why_size, "%s", dlerror());
    close(fd);
  } else {
    *memfd = fd; /* its number, hence the object's name, stays this module's */
  }
  return dl;
#else
  snprintf(why, why_size, "memfd_create is unavailable");
  return NULL;
#endif
}

/* dlopen of the bytes through a file in a fresh private directory,
 * unlinked with the directory right after. */
static void *open_private(const t4a__code *code, char *why, size_t why_size) {
  const char *base = t4a__getenv("TMPDIR");
  char dir[4096], path[4200];
  snprintf(dir, sizeof dir, "%s/t4a-module-XXXXXX", base && base[0] == '/' ? base : "/tmp");
  if (!mkdtemp(dir)) { /* mode 0700: no other user can enter it */
    snprintf(why, why_size, "mkdtemp(%.200s) failed (errno %d)", dir, errno);
    return NULL;
  }
  snprintf(path, sizeof path, "%s/module.so", dir);
  void *dl = NULL;
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0700);
  if (fd < 0 || !write_all(fd, code->data, code->size) || close(fd) != 0) {
    snprintf(why, why_size, "writing %.200s failed (errno %d)", path, errno);
    if (fd >= 0)
      close(fd);
  } else if (!(dl = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
    snprintf(why, why_size, "%s", dlerror());
  }
  unlink(path);
  rmdir(dir);
  return dl;
}

/* Whether the module's descriptors are usable: NULL, else what is wrong. */
static const char *module_check(const t4a_hk_module *m) {
  if (m->kernel_count > (1u << 16) || (m->kernel_count && !m->kernels))
    return "its kernel table is damaged";
  for (uint32_t i = 0; i < m->kernel_count; i++) {
    const t4a_hk_kernel *k = &m->kernels[i];
    uint64_t bytes = 0;
    if (!k->name || !k->run || k->max_threads < 1 || k->max_threads > 1024 ||
        k->param_count > 4096 || (k->param_count && (!k->param_sizes || !k->param_aligns)))
      return "a kernel's descriptor is damaged";
    for (uint32_t p = 0; p < k->param_count; p++) {
      uint32_t a = k->param_aligns[p];
      if (!a || (a & (a - 1)) || a > 4096 || k->param_sizes[p] > MAX_PARAM_BYTES)
        return "a parameter's size or alignment is damaged";
      bytes = ((bytes + a - 1) & ~(uint64_t)(a - 1)) + k->param_sizes[p];
    }
    if (bytes > MAX_PARAM_BYTES)
      return "a kernel's parameters exceed CUDA's 32764 bytes";
  }
  return NULL;
}

int t4a__slot_module_load(t4a_runtime h, t4a_artifact a, t4a_module *out) {
  int rc = t4a__host_require_init();
  if (rc)
    return rc;
  if (!out)
    return t4a__fail(T4A_EINVAL, "module_load: out is NULL; pass a pointer");
  out->bits = 0;
  t4a__code code;
  if ((rc = t4a__artifact_get(a, "module_load", &code)))
    return rc;
  t4a__hrt *rt;
  if ((rc = t4a__hrt_lock(h, "module_load", &rt))) {
    t4a__artifact_put(&code);
    return rc;
  }
  const char *bad = code.kind == T4A_ARTIFACT_HOST
                        ? elf_check((const unsigned char *)code.data, code.size)
                        : "is not a host shared object (T4A_ARTIFACT_HOST)";
  char why[512] = "";
  void *dl = NULL;
  uint32_t i = 0;
  if (bad) {
    rc = t4a__fail(T4A_EINVAL,
                   "module_load: the artifact '%s' %s; load a host shared object "
                   "(artifact_compile on the host backend)",
                   code.name, bad);
    goto out;
  }
  if ((rc = t4a__htable_take(&rt->mods, "module_load", &i)))
    goto out;
  bool fallback;
  int fd;
  dl = open_memfd(&code, why, sizeof why, &fallback, &fd);
  if (!dl && fallback)
    dl = open_private(&code, why, sizeof why);
  if (!dl) {
    t4a__htable_untake(&rt->mods, i);
    rc = t4a__fail(T4A_EINVAL,
                   "module_load: the host shared object '%s' does not load (%s); "
                   "compile it again",
                   code.name, why);
    goto out;
  }
  const t4a_hk_module *m = dlsym(dl, T4A_HK_MODULE_SYMBOL);
  if (!m) {
    rc = t4a__fail(T4A_EINVAL,
                   "module_load: '%s' is not a t4a kernel module (no symbol " T4A_HK_MODULE_SYMBOL
                   "); compile it with artifact_compile on the host backend",
                   code.name);
  } else if (m->abi_version != T4A_HK_ABI_VERSION) {
    rc = t4a__fail(T4A_EABI,
                   "module_load: '%s' is a kernel module of module ABI %u (prelude %.64s), this "
                   "plugin loads module ABI %u; compile it again with this plugin",
                   code.name, m->abi_version, m->prelude_id ? m->prelude_id : "?",
                   T4A_HK_ABI_VERSION);
  } else if ((bad = module_check(m))) {
    rc = t4a__fail(T4A_EINVAL,
                   "module_load: the kernel module '%s' is damaged: %s; compile it "
                   "again",
                   code.name, bad);
  }
  if (rc) {
    dlclose(dl);
    if (fd >= 0)
      close(fd);
    t4a__htable_untake(&rt->mods, i);
    goto out;
  }
  t4a__hmodule *mod = t4a__htable_at(&rt->mods, i);
  mod->dl = dl;
  mod->fd = fd;
  mod->m = m;
  t4a__strcopy(mod->name, sizeof mod->name, code.name);
  out->bits = t4a__htable_publish(&rt->mods, i, &t4a__module_kind, rt->slot.index);
out:
  t4a__hrt_unlock(rt);
  t4a__artifact_put(&code);
  return rc;
}

/* A retirement's release: `bytes` carries the module's memfd + 1 (0: none),
 * closed after the object it names. */
static void close_module(t4a__hrt *rt, void *dl, uint64_t bytes, bool final) {
  (void)rt, (void) final;
  dlclose(dl);
  if (bytes)
    close((int)(bytes - 1));
}

int t4a__slot_module_unload(t4a_runtime h, t4a_module mh) {
  t4a__hrt *rt;
  t4a__hmodule *m;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock_any(h, "module_unload", &rt)))
    return rc;
  if (!(rc = module_of(rt, mh, "module_unload", &m))) {
    uint32_t mi = t4a__h_index(mh.bits);
    for (uint32_t i = 0; i < rt->funcs.count; i++) {
      const t4a__hfunc *f = t4a__htable_at(&rt->funcs, i);
      if (f->h.live && f->module == mi)
        t4a__htable_release(&rt->funcs, i);
    }
    /* launches queued (and graphs replayed) so far may still run its code */
    t4a__hretire r = {t4a__queue_tail(&rt->q), close_module, m->dl,
                      m->fd >= 0 ? (uint64_t)m->fd + 1 : 0};
    t4a__htable_release(&rt->mods, mi);
    rc = t4a__retire_add(rt, &r);
  }
  t4a__hrt_unlock(rt);
  return rc;
}

/* ---- functions ---------------------------------------------------------------------- */

int t4a__slot_function_get(t4a_runtime h, t4a_module mh, const char *name, t4a_function *out) {
  if (!out || !name || !*name)
    return t4a__fail(T4A_EINVAL, "function_get: %s; pass a kernel name and a pointer",
                     out ? "the name is NULL or empty" : "out is NULL");
  out->bits = 0;
  t4a__hrt *rt;
  t4a__hmodule *m;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, "function_get", &rt)))
    return rc;
  if ((rc = module_of(rt, mh, "function_get", &m)))
    goto out;
  const t4a_hk_kernel *k = NULL;
  for (uint32_t i = 0; i < m->m->kernel_count && !k; i++)
    if (strcmp(m->m->kernels[i].name, name) == 0)
      k = &m->m->kernels[i];
  if (!k) {
    rc = t4a__fail(T4A_ENOTFOUND,
                   "function_get: no kernel '%.128s' in module '%s'; check the name (extern "
                   "\"C\" __global__ kernels are found by their name)",
                   name, m->name);
    goto out;
  }
  uint32_t i;
  if ((rc = t4a__htable_take(&rt->funcs, "function_get", &i)))
    goto out;
  t4a__hfunc *f = t4a__htable_at(&rt->funcs, i);
  f->k = k;
  f->module = t4a__h_index(mh.bits);
  /* the limit is the module's kernel's, as a CUfunction's attribute (every
   * handle of it sees one set through another): a sibling's, else 48 KiB */
  f->max_dynamic = (uint32_t)t4a__host_device.max_shared_per_block;
  for (uint32_t j = 0; j < rt->funcs.count; j++) {
    const t4a__hfunc *g = t4a__htable_at(&rt->funcs, j);
    if (j != i && g->h.live && g->module == f->module && g->k == k) {
      f->max_dynamic = g->max_dynamic;
      break;
    }
  }
  uint64_t bytes = 0;
  for (uint32_t p = 0; p < k->param_count; p++) {
    uint32_t a = k->param_aligns[p] < 8 ? 8 : k->param_aligns[p];
    bytes = ((bytes + a - 1) & ~(uint64_t)(a - 1)) + k->param_sizes[p];
  }
  f->args_bytes = (uint32_t)bytes; /* bounded by module_check */
  t4a__strcopy(f->name, sizeof f->name, k->name);
  out->bits = t4a__htable_publish(&rt->funcs, i, &t4a__function_kind, rt->slot.index);
out:
  t4a__hrt_unlock(rt);
  return rc;
}

int t4a__slot_function_attributes(t4a_runtime h, t4a_function fh, t4a_function_attributes *out) {
  int rc = t4a__check_struct(out, T4A_FUNCTION_ATTRIBUTES_V1_0_SIZE, "t4a_function_attributes");
  t4a__hrt *rt;
  t4a__hfunc *f;
  if (rc || (rc = t4a__host_require_init()) || (rc = t4a__hrt_lock(h, "function_attributes", &rt)))
    return rc;
  t4a_function_attributes a = {.struct_size = sizeof a};
  if (!(rc = t4a__hfunc_get(rt, fh, "function_attributes", &f))) {
    a.max_threads_per_block = (int32_t)f->k->max_threads;
    a.max_dynamic_shared_bytes = (int32_t)f->max_dynamic;
  }
  t4a__hrt_unlock(rt);
  if (!rc)
    t4a__fill_struct(out, &a, sizeof a);
  return rc;
}

int t4a__slot_function_set_max_dynamic_shared(t4a_runtime h, t4a_function fh, uint32_t bytes) {
  t4a__hrt *rt;
  t4a__hfunc *f;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, "function_set_max_dynamic_shared", &rt)))
    return rc;
  if (!(rc = t4a__hfunc_get(rt, fh, "function_set_max_dynamic_shared", &f))) {
    uint32_t limit = (uint32_t)t4a__host_device.max_shared_per_block_optin;
    if (bytes > limit)
      rc = t4a__fail(T4A_EINVAL,
                     "function_set_max_dynamic_shared: %u bytes exceeds the device's opt-in "
                     "limit of %u for '%s'; ask for less",
                     bytes, limit, f->name);
    else /* every handle of the module's kernel (see function_get) */
      for (uint32_t j = 0; j < rt->funcs.count; j++) {
        t4a__hfunc *g = t4a__htable_at(&rt->funcs, j);
        if (g->h.live && g->module == f->module && g->k == f->k)
          g->max_dynamic = bytes;
      }
  }
  t4a__hrt_unlock(rt);
  return rc;
}

/* ---- occupancy ------------------------------------------------------------------------ */

int t4a__slot_occupancy_max_active_blocks(t4a_runtime h, t4a_function fh, uint32_t block_threads,
                                          uint32_t shared_bytes, uint32_t *blocks_per_sm) {
  const char *what = "occupancy_max_active_blocks";
  if (!blocks_per_sm)
    return t4a__fail(T4A_EINVAL, "%s: blocks_per_sm is NULL; pass a pointer", what);
  t4a__hrt *rt;
  t4a__hfunc *f;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, what, &rt)))
    return rc;
  if (!(rc = t4a__hfunc_get(rt, fh, what, &f)) &&
      !(rc = t4a__check_occupancy_block(
            &(t4a__limits){NULL, f->name, (int32_t)f->k->max_threads, (int32_t)f->max_dynamic},
            block_threads, shared_bytes, what)))
    *blocks_per_sm = 1; /* a CPU runs one block at a time */
  t4a__hrt_unlock(rt);
  return rc;
}

int t4a__slot_occupancy_suggest_block_size(t4a_runtime h, t4a_function fh, uint32_t shared_bytes,
                                           uint32_t block_limit, uint32_t *block_threads,
                                           uint32_t *min_grid) {
  const char *what = "occupancy_suggest_block_size";
  if (!block_threads || !min_grid)
    return t4a__fail(T4A_EINVAL, "%s: block_threads and min_grid must not be NULL", what);
  t4a__hrt *rt;
  t4a__hfunc *f;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, what, &rt)))
    return rc;
  if (!(rc = t4a__hfunc_get(rt, fh, what, &f)) &&
      !(rc = t4a__check_occupancy_block(
            &(t4a__limits){NULL, f->name, (int32_t)f->k->max_threads, (int32_t)f->max_dynamic},
            block_limit ? block_limit : 1, shared_bytes, what))) {
    /* any block size keeps a CPU busy; 256 threads is the common choice and
     * the most fibers a barrier switches between stays moderate */
    uint32_t n = 256;
    if (n > f->k->max_threads)
      n = f->k->max_threads;
    if (block_limit && n > block_limit)
      n = block_limit;
    *block_threads = n;
    *min_grid = (uint32_t)t4a__host_device.multiprocessors; /* one block per CPU */
  }
  t4a__hrt_unlock(rt);
  return rc;
}
