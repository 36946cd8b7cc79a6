/* fuzz/model.c -- the model fuzzer (see fuzz/model.h): a libFuzzer target
 * whose inputs are programs over every slot of the v1.1 table, run against
 * the fake driver from a seeded world, each status and each byte read back
 * asserted against the model (or the host backend: fz_on_host in model.h).
 * This file: the input, the world and its seeding and teardown, the
 * expectations, the shadows and the effects.
 *
 * Built by .ci/sanitizers with -fsanitize=fuzzer (and ASan+UBSan); the
 * committed corpus (fuzz/corpus-model) replays under make check
 * (tests/cpu/test_fuzz_model), which also runs a fixed set of generated
 * inputs (tests/cpu/test_fuzz_model_host: the same on the host backend).
 * Environment: T4A_FUZZ_PLUGIN (the plugin file: libt4a_cuda.so or
 * libt4a_host.so), T4A_CUDA_LIBRARY (with the CUDA plugin: the fake driver,
 * two devices). At exit it prints the calls made and the
 * rate ("fuzz_model: N table calls ..."). The seeded world persists across
 * inputs (see seed()): a finding replays from a fresh process all the same,
 * since every input starts from the same model state. */
#include "config.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/ptx_kernels.h"
#include "fuzz/model.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

fz_world W;
const t4a_gpu_backend_v1 *T;
uint64_t fz_calls;
bool fz_on_host;
int fz_devices = 2;

int fz_seeded_device(int r) { return fz_on_host || r < 2 ? 0 : 1; }
static uint64_t inputs;
static struct timespec started;
static uint64_t (*fake_violations)(void);
static unsigned (*fake_device_fault)(int device);
static const char *(*fake_last_violation)(void);

/* The kernels every seeded module holds (the fake driver runs them on the
 * host; the text is valid PTX). */
static const char ptx[] = "//\n" T4A__PTX_HEADER T4A__PTX_SPIN_AND_FILL "\n" T4A__PTX_INDEX3D "\n"
                          ".visible .entry t4a_empty()\n"
                          "{\n"
                          "  ret;\n"
                          "}\n";
static const char *const kernel_names[FZ_KERNELS] = {"t4a_empty", "t4a_fill_u32", "t4a_index3d"};

const char *fz_ptx(uint64_t *size) {
  *size = sizeof ptx - 1;
  return ptx;
}

/* ---- input ------------------------------------------------------------------ */

static const uint8_t *in_p;
static size_t in_n;

uint8_t fz_u8(void) {
  if (!in_n)
    return 0;
  in_n--;
  return *in_p++;
}

uint32_t fz_u32(void) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++)
    v = v << 8 | fz_u8();
  return v;
}

uint64_t fz_u64(void) {
  uint64_t hi = fz_u32();
  return hi << 32 | fz_u32();
}

uint64_t fz_below(uint64_t n) {
  uint32_t v = (uint32_t)fz_u8() << 8;
  v |= fz_u8();
  return n ? v % n : 0;
}

bool fz_chance(unsigned in256) { return fz_u8() < in256; }

/* ---- findings ------------------------------------------------------------------ */

#define TRACE 32
static const char *trace[TRACE];
static unsigned ntrace;

void fz_trace(const char *op) { trace[ntrace++ % TRACE] = op; }

void fz_finding(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fuzz_model: FINDING: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nfuzz_model: the last operations, oldest first:");
  for (unsigned i = ntrace > TRACE ? ntrace - TRACE : 0; i < ntrace; i++)
    fprintf(stderr, " %s", trace[i % TRACE]);
  fprintf(stderr, "\n");
  abort();
}

static const char *allowed_names(uint32_t allowed, char *buf, size_t size) {
  size_t at = 0;
  buf[0] = '\0';
  for (int s = 0; s >= T4A_EINTERNAL && at < size; s--)
    if (allowed & ST(s))
      at += (size_t)snprintf(buf + at, size - at, "%s%s", at ? "|" : "", t4a_status_name(s));
  return buf;
}

bool fz_null_arg;

static int tracing = -1; /* T4A_FUZZ_MODEL_TRACE=1: every call and its status on stderr */

int fz_expect(const char *what, int rc, uint32_t allowed) {
  if (tracing < 0)
    tracing = getenv("T4A_FUZZ_MODEL_TRACE") != NULL;
  if (tracing)
    fprintf(stderr, "fuzz_model: %s -> %s\n", what, t4a_status_name(rc));
  if (fz_null_arg && (allowed & ST(T4A_EHANDLE)))
    allowed |= ST(T4A_EINVAL); /* design.md: a null handle may be EINVAL or EHANDLE */
  if (rc > 0 || rc < T4A_EINTERNAL)
    fz_finding("%s: status %d is not in the list", what, rc);
  if (!(allowed & ST(rc))) {
    char names[512];
    t4a_error_info e = {.struct_size = sizeof e};
    T->last_error(&e);
    fz_finding("%s returned %s ('%s'); the model expected %s", what, t4a_status_name(rc),
               rc ? e.message : "", allowed_names(allowed, names, sizeof names));
  }
  if (rc != T4A_OK && rc != T4A_ENOTREADY && rc != T4A_ETIMEOUT) {
    /* the header: after a failing call last_error tells the same status */
    t4a_error_info e = {.struct_size = sizeof e};
    fz_calls++;
    int lr = T->last_error(&e);
    if (lr != T4A_OK || e.status != rc || !e.message || !e.message[0])
      fz_finding("%s returned %s, but last_error returned %s with status %s and message '%s'", what,
                 t4a_status_name(rc), t4a_status_name(lr), t4a_status_name(e.status),
                 e.message ? e.message : "(null)");
  }
  return rc;
}

/* ---- handles ---------------------------------------------------------------------- */

static bool bits_live(uint64_t bits) {
  for (int r = 0; r < FZ_RTS; r++) {
    if ((W.rt[r].live && W.rt[r].bits == bits) || (W.mod[r].live && W.mod[r].bits == bits))
      return true;
    for (int k = 0; k < FZ_KERNELS; k++)
      if (W.fn[r][k].live && W.fn[r][k].bits == bits)
        return true;
  }
  for (int i = 0; i < FZ_BUFS; i++)
    if (W.buf[i].o.live && W.buf[i].o.bits == bits)
      return true;
  for (int i = 0; i < FZ_HOSTS; i++)
    if (W.host[i].o.live && W.host[i].o.bits == bits)
      return true;
  for (int i = 0; i < FZ_ARTS; i++)
    if (W.art[i].live && W.art[i].bits == bits)
      return true;
  for (int i = 0; i < FZ_GRAPHS; i++)
    if (W.graph[i].o.live && W.graph[i].o.bits == bits)
      return true;
  for (unsigned i = 0; i < W.nwit; i++)
    if (W.wit[i] == bits)
      return true;
  return false;
}

void fz_stale(int kind, uint64_t bits) {
  if (bits)
    W.stale[kind][W.nstale[kind]++ % FZ_STALE] = bits;
}

/* A forged handle: any tag, runtime and index, but generation 0, which no
 * live handle has (handle.c skips it). A forgery must never match a live
 * handle, including ones the model no longer tracks (an earlier
 * function_get's, an artifact the compile cache still holds), which
 * libFuzzer's comparison tracing could learn. */
uint64_t fz_forged(void) {
  uint64_t v = fz_u64() & ~(uint64_t)0xfffffffu;
  return bits_live(v) ? 0 : v;
}

fz_arg fz_pick(int kind, fz_obj *objs, unsigned n, size_t stride) {
  fz_arg a = {0, -1, false};
  uint8_t k = fz_u8();
#define OBJ(i) ((fz_obj *)((char *)objs + (size_t)(i)*stride))
  if (k < 208) { /* a live one when there is one */
    unsigned live = 0;
    for (unsigned i = 0; i < n; i++)
      live += OBJ(i)->live;
    if (live) {
      unsigned want = k % live;
      for (unsigned i = 0; i < n; i++)
        if (OBJ(i)->live && want-- == 0) {
          a = (fz_arg){OBJ(i)->bits, (int)i, true};
          return a;
        }
    }
    k = (uint8_t)(208 + k % 48); /* none live: one of the other kinds below */
  }
  if (k < 224) { /* any slot: live, dead (stale bits) or empty (null) */
    unsigned i = k % n;
    a = (fz_arg){OBJ(i)->bits, (int)i, OBJ(i)->live};
    if (!a.bits) {
      a.slot = -1;
      fz_null_arg = true;
    }
  } else if (k < 240 && W.nstale[kind]) {
    unsigned have = W.nstale[kind] < FZ_STALE ? W.nstale[kind] : FZ_STALE;
    a.bits = W.stale[kind][k % have];
  } else if (k < 250) {
    a.bits = fz_forged();
  }
  /* the same handle may sit in two slots (the compile cache hands out one
   * artifact twice, function_get one function): one live slot makes it live */
  for (unsigned i = 0; a.bits && !a.ok && i < n; i++)
    if (OBJ(i)->live && OBJ(i)->bits == a.bits)
      a = (fz_arg){a.bits, (int)i, true};
#undef OBJ
  fz_null_arg |= a.bits == 0;
  return a;
}

/* Whether objs holds bits in a live slot (another reference). */
static bool held(const fz_obj *objs, unsigned n, size_t stride, uint64_t bits) {
  for (unsigned i = 0; i < n; i++) {
    const fz_obj *o = (const fz_obj *)((const char *)objs + (size_t)i * stride);
    if (o->live && o->bits == bits)
      return true;
  }
  return false;
}

void fz_release(int kind, fz_obj *objs, unsigned n, size_t stride, int slot) {
  fz_obj *o = (fz_obj *)((char *)objs + (size_t)slot * stride);
  o->live = false;
  if (!held(objs, n, stride, o->bits))
    fz_stale(kind, o->bits);
}

fz_arg fz_pick_rt(void) { return fz_pick(K_RT, W.rt, FZ_RTS, sizeof(fz_obj)); }

int fz_free_slot(fz_obj *objs, unsigned n, size_t stride) {
  for (unsigned i = 0; i < n; i++)
    if (!((fz_obj *)((char *)objs + (size_t)i * stride))->live)
      return (int)i;
  return -1;
}

void fz_release_artifact(int slot) {
  if (!W.art_cached[slot]) {
    fz_release(K_ART, W.art, FZ_ARTS, sizeof(fz_obj), slot);
    return;
  }
  W.art[slot].live = false; /* art_cached stays set while the slot keeps these bits */
}

bool fz_art_maybe(uint64_t bits) {
  for (unsigned i = 0; bits && i < FZ_ARTS; i++)
    if (!W.art[i].live && W.art_cached[i] && W.art[i].bits == bits &&
        !held(W.art, FZ_ARTS, sizeof(fz_obj), bits))
      return true;
  return false;
}

/* ---- shadows and effects --------------------------------------------------------------- */

void fz_fill_pattern(uint8_t *p, uint64_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 12345u;
  for (uint64_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p[i] = (uint8_t)x;
  }
}

static void put32(fz_buf *b, uint64_t off, uint32_t v) {
  for (int i = 0; i < 4; i++) {
    b->data[off + (uint64_t)i] = (uint8_t)(v >> (8 * i));
    b->known[off + (uint64_t)i] = 1;
  }
}

/* Copies n bytes of shadow (data and known) from src to dst, through a
 * temporary (the regions may be in one array). */
static void move(uint8_t *dd, uint8_t *dk, const uint8_t *sd, const uint8_t *sk, uint64_t n) {
  static uint8_t td[FZ_BMAX > FZ_HMAX ? FZ_BMAX : FZ_HMAX], tk[sizeof td];
  memcpy(td, sd, n);
  memcpy(tk, sk, n);
  memcpy(dd, td, n);
  memcpy(dk, tk, n);
}

void fz_apply(const fz_effect *e) {
  uint64_t rows = e->two_d ? e->rows : 1;
  switch (e->kind) {
  case E_FILL:
    for (uint64_t i = 0; i < e->n; i++)
      put32(&W.buf[e->dst], e->doff + 4 * i, e->value);
    break;
  case E_INDEX3D: {
    const uint32_t *g = e->grid, *b = e->block;
    uint64_t per = (uint64_t)b[0] * b[1] * b[2];
    for (uint32_t bz = 0; bz < g[2]; bz++)
      for (uint32_t by = 0; by < g[1]; by++)
        for (uint32_t bx = 0; bx < g[0]; bx++)
          for (uint32_t tz = 0; tz < b[2]; tz++)
            for (uint32_t ty = 0; ty < b[1]; ty++)
              for (uint32_t tx = 0; tx < b[0]; tx++) {
                uint64_t blk = ((uint64_t)bz * g[1] + by) * g[0] + bx;
                uint64_t t = blk * per + ((uint64_t)tz * b[1] + ty) * b[0] + tx;
                uint64_t at = e->doff + 12 * t;
                put32(&W.buf[e->dst], at, bx | by << 16);
                put32(&W.buf[e->dst], at + 4, bz | tx << 16);
                put32(&W.buf[e->dst], at + 8, ty | tz << 16);
              }
    break;
  }
  case E_EMPTY: break;
  case E_MEMSET: {
    fz_buf *b = &W.buf[e->dst];
    for (uint64_t i = 0; i < e->n * e->es; i++) {
      b->data[e->doff + i] = (uint8_t)(e->value >> (8 * (i % e->es)));
      b->known[e->doff + i] = 1;
    }
    break;
  }
  case E_D2D:
    for (uint64_t r = 0; r < rows; r++) {
      fz_buf *d = &W.buf[e->dst], *s = &W.buf[e->src];
      uint64_t da = e->doff + r * e->dpitch, sa = e->soff + r * e->spitch;
      move(d->data + da, d->known + da, s->data + sa, s->known + sa, e->n);
    }
    break;
  case E_H2DP:
    for (uint64_t r = 0; r < rows; r++) {
      fz_buf *d = &W.buf[e->dst];
      fz_host *s = &W.host[e->src];
      uint64_t da = e->doff + r * e->dpitch, sa = e->soff + r * e->spitch;
      move(d->data + da, d->known + da, s->data + sa, s->known + sa, e->n);
    }
    break;
  case E_D2HP:
    for (uint64_t r = 0; r < rows; r++) {
      fz_host *d = &W.host[e->dst];
      fz_buf *s = &W.buf[e->src];
      uint64_t da = e->doff + r * e->dpitch, sa = e->soff + r * e->spitch;
      move(d->data + da, d->known + da, s->data + sa, s->known + sa, e->n);
    }
    break;
  default: break;
  }
}

void fz_enqueue(int r, const fz_effect *e, bool is_kernel) {
  if (!W.capturing[r]) {
    fz_apply(e);
    return;
  }
  fz_graph *c = &W.cap[r];
  if (c->neff == FZ_EFFECTS) /* the operations check room before calling */
    fz_finding("a capture recorded more than %d effects", FZ_EFFECTS);
  c->eff[c->neff++] = *e;
  if (is_kernel) {
    c->kernels++;
    if (e->kind != E_EMPTY)
      W.buf[e->dst].kernel_refs++;
  } else {
    c->copies++;
  }
}

/* Whether a replay of g would name a buffer, host buffer or function
 * released since the capture (graph_launch then refuses it). */
const char *fz_graph_names_stale(const fz_graph *g) {
  static char why[128];
  for (unsigned i = 0; i < g->neff; i++) {
    const fz_effect *e = &g->eff[i];
    if (e->kind == E_FILL || e->kind == E_INDEX3D || e->kind == E_EMPTY) {
      /* a function lives as long as its module (function_get may hand out
       * another handle meanwhile: the captured one stays valid) */
      const fz_obj *m = &W.mod[e->fn / FZ_KERNELS];
      if (!m->live || m->bits != e->mod_bits) {
        snprintf(why, sizeof why, "effect %u: function slot %d (0x%llx): module unloaded", i, e->fn,
                 (unsigned long long)e->fn_bits);
        return why;
      }
      continue;
    }
    const fz_obj *d = e->kind == E_D2HP ? &W.host[e->dst].o : &W.buf[e->dst].o;
    const fz_obj *s = e->kind == E_H2DP ? &W.host[e->src].o : &W.buf[e->src].o;
    if (!d->live || d->bits != e->dst_bits ||
        (e->kind != E_MEMSET && (!s->live || s->bits != e->src_bits))) {
      snprintf(why, sizeof why,
               "effect %u (kind %u): dst slot %d 0x%llx, src slot %d 0x%llx released", i, e->kind,
               e->dst, (unsigned long long)e->dst_bits, e->src, (unsigned long long)e->src_bits);
      return why;
    }
  }
  return NULL;
}

void fz_graph_drop(fz_graph *g) {
  for (unsigned i = 0; i < g->neff; i++)
    if (g->eff[i].kind == E_FILL || g->eff[i].kind == E_INDEX3D)
      W.buf[g->eff[i].dst].kernel_refs--;
  g->neff = 0;
  g->o.live = false;
}

void fz_check_buffer(int b, uint64_t off, const uint8_t *got, uint64_t n, const char *what) {
  const fz_buf *s = &W.buf[b];
  if (W.data_unsure)
    return;
  for (uint64_t i = 0; i < n; i++)
    if (s->known[off + i] && got[i] != s->data[off + i])
      fz_finding("%s: byte %llu of buffer slot %d (runtime %d) is 0x%02x, the model says 0x%02x",
                 what, (unsigned long long)off + i, b, s->o.rt, got[i], s->data[off + i]);
}

void fz_check_host(int h) {
  const fz_host *s = &W.host[h];
  if (W.data_unsure)
    return;
  for (uint64_t i = 0; i < s->size; i++)
    if (s->known[i] && s->ptr[i] != s->data[i])
      fz_finding("host buffer slot %d (runtime %d): byte %llu is 0x%02x, the model says 0x%02x", h,
                 s->o.rt, (unsigned long long)i, s->ptr[i], s->data[i]);
}

/* Runtime r was destroyed: everything it owned is stale, its capture
 * discarded. Witnesses stay valid. */
void fz_forget_runtime(int r) {
  W.rt[r].live = false;
  fz_stale(K_RT, W.rt[r].bits);
  if (W.capturing[r])
    fz_graph_drop(&W.cap[r]);
  W.capturing[r] = false;
  for (int g = 0; g < FZ_GRAPHS; g++)
    if (W.graph[g].o.live && W.graph[g].o.rt == r) {
      fz_stale(K_GRAPH, W.graph[g].o.bits);
      fz_graph_drop(&W.graph[g]);
    }
  for (int i = 0; i < FZ_BUFS; i++)
    if (W.buf[i].o.live && W.buf[i].o.rt == r) {
      W.buf[i].o.live = false;
      fz_stale(K_BUF, W.buf[i].o.bits);
    }
  for (int i = 0; i < FZ_HOSTS; i++)
    if (W.host[i].o.live && W.host[i].o.rt == r) {
      W.host[i].o.live = false;
      fz_stale(K_HOST, W.host[i].o.bits);
      if (W.host[i].region >= 0)
        W.region_used[W.host[i].region] = false;
    }
  if (W.mod[r].live) {
    W.mod[r].live = false;
    fz_stale(K_MOD, W.mod[r].bits);
  }
  for (int k = 0; k < FZ_KERNELS; k++)
    if (W.fn[r][k].live) {
      W.fn[r][k].live = false;
      fz_stale(K_FN, W.fn[r][k].bits);
    }
}

/* ---- the seeded world ------------------------------------------------------------------ */

/* The seeded world persists across inputs, as in libFuzzer's persistent
 * mode: creating three runtimes (streams, pools, staging) per input cost
 * more than the input's calls. Each input starts from the same state all
 * the same: the seeded objects that survived the last input are kept (and
 * their contents written again), the others made anew, and everything else
 * the last input created was released by its teardown. */
static struct {
  fz_obj rt[3], buf[6], host[3], mod[3], fn[3][FZ_KERNELS], art;
  uint32_t fn_shared[3][FZ_KERNELS];
  uint64_t addr[6];
  uint8_t *host_ptr[3];
  int32_t prio_least[3], prio_greatest[3];
} kept;

static bool seed_runtime(int r, int dev, bool timing) {
  if (kept.rt[r].live) {
    W.rt[r] = kept.rt[r];
  } else {
    t4a_runtime_options o = {.struct_size = sizeof o,
                             .flags = timing ? T4A_RUNTIME_TIMING : 0,
                             .staging_bytes = 65536,
                             .copy_threads = 1};
    t4a_runtime rt;
    fz_calls++;
    fz_expect("seed: runtime_create", T->runtime_create(dev, &o, &rt), ST_OK);
    W.rt[r] = (fz_obj){rt.bits, r, true};
    t4a_runtime_info ri = {.struct_size = sizeof ri};
    fz_calls++;
    fz_expect("seed: runtime_info", T->runtime_info(rt, &ri), ST_OK);
    kept.prio_least[r] = ri.priority_least;
    kept.prio_greatest[r] = ri.priority_greatest;
  }
  W.dev[r] = dev;
  W.timing[r] = timing;
  W.prio_least[r] = kept.prio_least[r];
  W.prio_greatest[r] = kept.prio_greatest[r];
  return !kept.rt[r].live; /* new: nothing else of it survived */
}

static void seed_buffer(int b, int r) {
  fz_buf *s = &W.buf[b];
  t4a_runtime rt = {W.rt[r].bits};
  if (kept.buf[b].live) {
    s->o = kept.buf[b];
    s->addr = kept.addr[b];
  } else {
    t4a_buffer h;
    fz_calls += 2;
    fz_expect("seed: buffer_alloc", T->buffer_alloc(rt, FZ_BMAX, &h), ST_OK);
    s->o = (fz_obj){h.bits, r, true};
    fz_expect("seed: buffer_device_address", T->buffer_device_address(rt, h, &s->addr), ST_OK);
  }
  s->size = FZ_BMAX;
  fz_fill_pattern(s->data, FZ_BMAX, (uint32_t)b + 1);
  memset(s->known, 1, FZ_BMAX);
  fz_calls++;
  fz_expect("seed: copy_h2d", T->copy_h2d(rt, (t4a_buffer){s->o.bits}, 0, s->data, FZ_BMAX), ST_OK);
}

static void seed_host(int hs, int r) {
  fz_host *s = &W.host[hs];
  if (kept.host[hs].live) { /* its runtime drained at the last teardown */
    s->o = kept.host[hs];
    s->ptr = kept.host_ptr[hs];
  } else {
    t4a_host_buffer h;
    void *p = NULL;
    fz_calls++;
    fz_expect("seed: host_alloc", T->host_alloc((t4a_runtime){W.rt[r].bits}, FZ_HMAX, 0, &h, &p),
              ST_OK);
    s->o = (fz_obj){h.bits, r, true};
    s->ptr = p;
  }
  s->size = FZ_HMAX;
  s->region = -1;
  fz_fill_pattern(s->data, FZ_HMAX, 100u + (uint32_t)hs);
  memcpy(s->ptr, s->data, FZ_HMAX);
  memset(s->known, 1, FZ_HMAX);
}

static void seed_module(int r) {
  bool whole = kept.mod[r].live;
  for (int k = 0; k < FZ_KERNELS; k++)
    whole &= kept.fn[r][k].live;
  if (whole) {
    W.mod[r] = kept.mod[r];
    memcpy(W.fn[r], kept.fn[r], sizeof W.fn[r]);
    memcpy(W.fn_shared[r], kept.fn_shared[r], sizeof W.fn_shared[r]);
    return;
  }
  t4a_runtime rt = {W.rt[r].bits};
  t4a_module m;
  if (kept.mod[r].live) { /* a function of it is missing: load it again */
    fz_calls++;
    fz_expect("seed: module_unload", T->module_unload(rt, (t4a_module){kept.mod[r].bits}), ST_OK);
  }
  fz_calls++;
  fz_expect("seed: module_load", T->module_load(rt, (t4a_artifact){W.art[0].bits}, &m), ST_OK);
  W.mod[r] = (fz_obj){m.bits, r, true};
  for (int k = 0; k < FZ_KERNELS; k++) {
    t4a_function f;
    fz_calls++;
    fz_expect("seed: function_get", T->function_get(rt, m, kernel_names[k], &f), ST_OK);
    W.fn[r][k] = (fz_obj){f.bits, r, true};
    W.fn_shared[r][k] = 48 * 1024;
  }
}

static void seed(void) {
  memset(&W, 0, sizeof W);
  for (int r = 0; r < FZ_RTS; r++)
    W.rt[r].rt = r;
  for (int i = 0; i < FZ_HOSTS; i++)
    W.host[i].region = -1;
  if (fz_on_host) { /* no code to seed */
  } else if (kept.art.live) {
    W.art[0] = kept.art;
  } else {
    t4a_artifact a;
    fz_calls++;
    fz_expect("seed: artifact_from_bytes",
              T->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, sizeof ptx - 1, "fuzz_model.ptx", &a),
              ST_OK);
    W.art[0] = (fz_obj){a.bits, -1, true};
  }
  W.art_code[0] = !fz_on_host;
  W.art_bytes[0] = fz_on_host ? NULL : ptx;
  W.art_size[0] = fz_on_host ? 0 : sizeof ptx - 1;
  for (int r = 0; r < 3; r++) {
    if (seed_runtime(r, fz_seeded_device(r), r == 0)) { /* new: none of its objects live */
      kept.buf[(size_t)r * 2].live = kept.buf[(size_t)r * 2 + 1].live = false;
      kept.host[r].live = false;
      kept.mod[r].live = false;
    }
    seed_buffer(2 * r, r);
    seed_buffer(2 * r + 1, r);
    seed_host(r, r);
    if (!fz_on_host)
      seed_module(r);
  }
}

/* Releases what the input made beyond the seeded world, drains the
 * surviving seeded runtimes, keeps the seeded objects still in their
 * slots for the next input, and checks the fake driver saw no misuse. */
static void teardown(void) {
  for (int r = 0; r < FZ_RTS; r++)
    if (W.rt[r].live && W.capturing[r]) {
      t4a_graph g;
      fz_calls++;
      if (fz_expect("teardown: graph_end", T->graph_end((t4a_runtime){W.rt[r].bits}, &g), ST_OK) ==
          T4A_OK) {
        fz_calls++;
        fz_expect("teardown: graph_release", T->graph_release((t4a_runtime){W.rt[r].bits}, g),
                  ST_OK);
      }
      fz_graph_drop(&W.cap[r]);
      W.capturing[r] = false;
    }
  for (int g = 0; g < FZ_GRAPHS; g++)
    if (W.graph[g].o.live) {
      fz_calls++;
      fz_expect("teardown: graph_release",
                T->graph_release((t4a_runtime){W.rt[W.graph[g].o.rt].bits},
                                 (t4a_graph){W.graph[g].o.bits}),
                ST_OK);
    }
  for (unsigned i = 0; i < W.nwit; i++) {
    fz_calls++;
    fz_expect("teardown: witness_release", T->witness_release((t4a_witness){W.wit[i]}), ST_OK);
  }
  /* slot 0 is kept when it still holds the seeded PTX (artifact_from_bytes
   * may have put a copy there), else released with the others */
  bool keep_art = W.art[0].live && W.art_bytes[0] == (const void *)ptx;
  for (int i = keep_art ? 1 : 0; i < FZ_ARTS; i++)
    if (W.art[i].live) {
      fz_calls++;
      fz_expect("teardown: artifact_release", T->artifact_release((t4a_artifact){W.art[i].bits}),
                ST_OK);
    }
  /* seeded slots keep their object only if it is still the seeded kind */
  bool keep_rt[FZ_RTS] = {false};
  for (int r = 0; r < 3; r++)
    keep_rt[r] = W.rt[r].live && W.dev[r] == fz_seeded_device(r) && W.timing[r] == (r == 0);
  for (int b = 0; b < FZ_BUFS; b++) {
    const fz_buf *s = &W.buf[b];
    bool seeded = b < 6 && s->o.live && s->o.rt == b / 2 && s->size == FZ_BMAX && keep_rt[b / 2];
    if (s->o.live && !seeded && keep_rt[s->o.rt]) {
      fz_calls++;
      fz_expect("teardown: buffer_free",
                T->buffer_free((t4a_runtime){W.rt[s->o.rt].bits}, (t4a_buffer){s->o.bits}), ST_OK);
    }
    if (b < 6) {
      kept.buf[b] = seeded ? s->o : (fz_obj){0};
      kept.addr[b] = s->addr;
    }
  }
  for (int h = 0; h < FZ_HOSTS; h++) {
    const fz_host *s = &W.host[h];
    bool seeded =
        h < 3 && s->o.live && s->o.rt == h && s->region < 0 && s->size == FZ_HMAX && keep_rt[h];
    if (s->o.live && !seeded && keep_rt[s->o.rt]) {
      t4a_runtime rt = {W.rt[s->o.rt].bits};
      fz_calls++;
      fz_expect("teardown: host_free/unregister",
                s->region >= 0 ? T->host_unregister(rt, (t4a_host_buffer){s->o.bits})
                               : T->host_free(rt, (t4a_host_buffer){s->o.bits}),
                ST_OK);
    }
    if (h < 3) {
      kept.host[h] = seeded ? s->o : (fz_obj){0};
      kept.host_ptr[h] = s->ptr;
    }
  }
  for (int r = 0; r < FZ_RTS; r++) {
    if (!W.rt[r].live)
      continue;
    if (!keep_rt[r]) {
      fz_calls++;
      fz_expect("teardown: runtime_destroy",
                T->runtime_destroy((t4a_runtime){W.rt[r].bits}, T4A_WAIT_FOREVER), ST_OK);
      continue;
    }
    fz_sync(r); /* nothing in flight: the next input writes host memory */
  }
  for (int r = 0; r < 3; r++) {
    kept.rt[r] = keep_rt[r] ? W.rt[r] : (fz_obj){0};
    kept.mod[r] = keep_rt[r] ? W.mod[r] : (fz_obj){0};
    for (int k = 0; k < FZ_KERNELS; k++)
      kept.fn[r][k] = keep_rt[r] && W.mod[r].live ? W.fn[r][k] : (fz_obj){0};
    memcpy(kept.fn_shared[r], W.fn_shared[r], sizeof kept.fn_shared[r]);
  }
  kept.art = keep_art ? W.art[0] : (fz_obj){0};
  uint64_t v = fake_violations ? fake_violations() : 0;
  if (v)
    fz_finding("the fake driver counted %llu violations (the last: %s)", (unsigned long long)v,
               fake_last_violation ? fake_last_violation() : "?");
}

/* ---- libFuzzer ---------------------------------------------------------------------------- */

static void report(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  double s = (double)(now.tv_sec - started.tv_sec) + (double)(now.tv_nsec - started.tv_nsec) / 1e9;
  fprintf(stderr, "fuzz_model: %llu table calls in %llu inputs, %.1f s: %.0f calls/s\n",
          (unsigned long long)fz_calls, (unsigned long long)inputs, s,
          s > 0 ? (double)fz_calls / s : 0.0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *plugin = getenv("T4A_FUZZ_PLUGIN"), *driver = getenv("T4A_CUDA_LIBRARY");
  t4a_gpu_backend *b = NULL;
  if (!plugin || t4a_gpu_open_path(plugin, &b) != T4A_OK) {
    fprintf(stderr,
            "fuzz_model: set T4A_FUZZ_PLUGIN to libt4a_cuda.so (and T4A_CUDA_LIBRARY to the "
            "fake driver) or to libt4a_host.so (%s)\n",
            t4a_gpu_last_error());
    abort();
  }
  T = t4a_gpu_backend_table(b);
  if (!T4A_GPU_BACKEND_V1_HAS(T, graph_release) || T->init() != T4A_OK) {
    fprintf(stderr, "fuzz_model: the plugin lacks ABI 1.1 or init failed\n");
    abort();
  }
  fz_on_host = strcmp(T->name, "host") == 0;
  fz_devices = fz_on_host ? 1 : 2;
  if (!fz_on_host) {
    void *fake = driver ? dlopen(driver, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (fake) {
      *(void **)&fake_violations = dlsym(fake, "fake_cuda_violations");
      *(void **)&fake_last_violation = dlsym(fake, "fake_cuda_last_violation");
      *(void **)&fake_device_fault = dlsym(fake, "fake_cuda_device_fault");
    }
    if (!fake_violations || !fake_device_fault) {
      fprintf(stderr, "fuzz_model: T4A_CUDA_LIBRARY is not the fake driver\n");
      abort();
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &started);
  atexit(report);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  in_p = data;
  in_n = size;
  ntrace = 0;
  seed();
  for (int steps = 0; in_n && steps < 4096; steps++) {
    fz_step();
    /* the model never asks for a fault: one is the plugin's (work it let
     * touch memory it should not), seen a few steps late at most */
    for (int d = 0; d < 2 && fake_device_fault; d++)
      if (fake_device_fault(d))
        fz_finding("device %d faulted (code %u)", d, fake_device_fault(d));
  }
  teardown();
  inputs++;
  return 0;
}
