/* plugin-cuda/staging.c -- pageable transfers through bounded pinned staging.
 *
 * Each runtime allocates its staging once, at creation: one pinned block of
 * `staging_bytes` split into chunks (8 MiB, or fewer bytes for small
 * bounds; at least two chunks so copying and DMA overlap). Chunks are used
 * round robin; each carries an event recorded after the DMA that used it,
 * and is reused only after that event completed. The bound is never
 * exceeded: there is no other pinned memory behind these copies.
 *
 *   H2D: memcpy a piece of the source into a free chunk (several threads for
 *        large pieces), enqueue the DMA, record the chunk's event, go on with
 *        the next chunk while that DMA runs. Returns when the whole source
 *        was copied into staging: the source may be reused; the device write
 *        completes in stream order.
 *   D2H: staging_out.c. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/env.h"
#include "backend-core/copypool.h"
#include "plugin-cuda/runtime.h"

#define CHUNK_MAX (8ull << 20)
#define CHUNK_MIN (64ull << 10)

/* The staging's tuning knobs, read when a runtime is created
 * (docs/performance.md records the sweeps that chose the defaults): a
 * number in lo..hi, else (unset, empty, not a number, out of range) dflt.
 * T4A_STAGING_CHUNK is the chunk size in bytes, T4A_STAGING_RING how many
 * chunks large copies cycle through (fewer chunks stay in the host's
 * caches); the others are described where they are read. */
static uint64_t knob(const char *name, uint64_t dflt, uint64_t lo, uint64_t hi) {
  const char *v = t4a__getenv(name);
  char *end = NULL;
  unsigned long long x = v && *v ? strtoull(v, &end, 0) : 0;
  return end && !*end && x >= lo && x <= hi ? (uint64_t)x : dflt;
}

/* Copies out of staging into the consumer's memory (D2H) stream their stores
 * past the caches (non-temporal stores): skipping the read-for-ownership of
 * every destination line saves a third of the memory traffic (measured on
 * the H200 host: 33.9 -> 37.9 GB/s at 8 threads). Copies into staging (H2D)
 * keep ordinary stores by default: the DMA engine reads that chunk next,
 * and reads it faster from cache. T4A_COPY_STREAMING (a tuning knob:
 * "none" or "0", "d2h", "h2d", "both") overrides. */
static void streaming(t4a__staging *s) {
  const char *v = t4a__getenv("T4A_COPY_STREAMING");
  bool none = v && (strcmp(v, "0") == 0 || strcmp(v, "none") == 0);
  bool both = v && strcmp(v, "both") == 0;
  s->stream_h2d = both || (v && strcmp(v, "h2d") == 0);
  s->stream_d2h = !none && (both || !v || !*v || strcmp(v, "d2h") == 0 || strcmp(v, "1") == 0);
}

/* Host-to-device copies of at most 16 KiB bypass the staging: the driver
 * copies that little into its own command stream at once and returns
 * without waiting for the stream (CUDA documents that copies of 64 KiB or
 * less from pageable memory never wait), which costs no more than our
 * memcpy and pinned DMA call at these sizes (measured on the H200 host,
 * session 6: pageable copies of 1 KiB-16 KiB sat at 0.85-1.03x the driver
 * through the staging's hot window against 0.94-0.99x direct, in a batch
 * of 500 with the wait). From 16 KiB up, and 64 KiB above all (the driver's
 * 1.12-1.38x there through the window against 0.93-0.99x direct), the
 * driver's own staging of the pageable source costs more than our memcpy
 * into a window that stays in the caches and a DMA from pinned memory.
 * T4A_PAGEABLE_DIRECT (bytes, 0..65536) is the tuning knob. */
#define DIRECT_DEFAULT (16u << 10)
static uint64_t direct_limit(void) {
  return knob("T4A_PAGEABLE_DIRECT", DIRECT_DEFAULT, 0, 64u << 10);
}

/* A copy of one element of 1, 2 or 4 bytes, aligned to its size (a scalar:
 * a flag, a count, a parameter), is a memset of that value: the driver takes
 * cuMemsetD8/D16/D32Async of one element for about two thirds of its small
 * pageable copy (1.21-1.26 against 1.82-1.94 us on the H200 host, session
 * 6), with the same stream order and the source read before the call
 * returns. T4A_PAGEABLE_MEMSET=0 (a tuning knob) sends them to the driver's
 * copy instead. */
static bool memset_tiny(void) {
  const char *v = t4a__getenv("T4A_PAGEABLE_MEMSET");
  return !(v && strcmp(v, "0") == 0);
}

/* Host-to-device copies above the direct limit and up to the hot window
 * (default HOT_DEFAULT, at most a chunk) fill windows at the start of two
 * "hot" chunks, in turn, instead of moving on through the whole staging:
 * the same few MiB of staging are written again and again and stay in the
 * host's caches. A copy into lines that left the caches costs a read for
 * ownership of each line and runs at a single thread's cold-copy rate (the
 * pageable sweep on the H200 host: 0.54-0.58x the driver at 256 KiB-1 MiB
 * when every copy took fresh lines; docs/performance.md). Each window
 * records its chunk's event once, when it is closed, and the other hot
 * chunk's DMAs have usually finished by the time its turn comes again.
 * T4A_STAGING_HOT (bytes, 0 = off) is the tuning knob. */
#define HOT_DEFAULT (2ull << 20)

static uint64_t hot_window(uint64_t chunk) {
  uint64_t w = knob("T4A_STAGING_HOT", HOT_DEFAULT, 0, UINT64_MAX);
  return w < chunk ? w : chunk;
}

/* Host copies below the split size stay on the calling thread: a split
 * costs a queue hand-off and a join, more than it saves on a copy that
 * fits a core's caches. Measured on the H200 host (16 CPUs; the hot-window
 * sweep in docs/performance.md, with the copy threads spinning between
 * parts): splitting from 1 MiB took pageable H2D from 0.91x to 0.97x the
 * driver at 1 MiB, 0.73x to 1.20x at 1.5 MiB and 1.15x to 1.36x at 2 MiB
 * in parts of 256 KiB (more with the 128 KiB parts of copypool.c), while
 * splitting 512 KiB lost (1.06x to 0.72x; 0.74-0.84x in 128 KiB parts).
 * T4A_COPY_SPLIT_MIN (bytes, at least 512 KiB) is the tuning knob. */
#define SPLIT_DEFAULT (1ull << 20)

/* A copy thread that did a part keeps looking for the next job this long
 * before it sleeps (copypool.c), so that a stream of split copies, or the
 * chunks of a large one, pays no wake-up per part: it burns at most this
 * much of a CPU after each part, and never polls while no copy runs.
 * T4A_COPY_SPIN_US (0..10000, 0 = sleep at once) is the tuning knob. */
#define SPIN_DEFAULT_US 100u

/* Large copies start the memcpy of the next chunk on the copy threads
 * before they wait for the current one's, so the threads never idle
 * between chunks (each chunk used to be a fork and a join: the threads'
 * wake-ups stood between the memcpys). T4A_COPY_PIPELINE=0 (a tuning knob)
 * turns that off. */
static void tune(t4a__staging *s) {
  const char *v = t4a__getenv("T4A_COPY_PIPELINE");
  s->pipeline = !(v && strcmp(v, "0") == 0);
  s->split_min = knob("T4A_COPY_SPLIT_MIN", SPLIT_DEFAULT, 512ull << 10, UINT64_MAX);
  uint64_t spin = knob("T4A_COPY_SPIN_US", SPIN_DEFAULT_US, 0, UINT64_MAX);
  s->spin_us = (uint32_t)(spin > 10000 ? 10000 : spin);
  s->hot_window = hot_window(s->chunk_bytes);
  s->fill = 0;
  s->closing = 0;
  s->open_hot = false;
  s->hot_next = 0;
  streaming(s);
  s->direct_h2d = direct_limit();
  s->memset_tiny = memset_tiny();
}

/* The chunk layout of a staging of `bytes`: at least two chunks, so
 * copying and DMA overlap. */
static void layout(uint64_t bytes, uint64_t *chunk, uint32_t *count) {
  uint64_t c = knob("T4A_STAGING_CHUNK", 0, CHUNK_MIN, bytes / 2);
  if (!c)
    c = bytes / 2 < CHUNK_MAX ? bytes / 2 : CHUNK_MAX;
  c &= ~(uint64_t)4095;
  *chunk = c;
  *count = (uint32_t)(bytes / c);
}

void t4a__staging_release(t4a__staging *s) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  for (uint32_t i = 0; i < s->count; i++)
    if (cu->cuEventDestroy(s->chunks[i].ev) != T4A__CUDA_SUCCESS)
      t4a__keep(s->chunks[i].ev);
  if (s->base && cu->cuMemFreeHost(s->base) != T4A__CUDA_SUCCESS)
    t4a__keep(s->base);
  free(s->chunks);
  memset(s, 0, sizeof *s);
}

int t4a__staging_init(t4a__runtime *rt, t4a__staging *spare) {
  t4a__staging *s = &rt->stage;
  const t4a__cuda_api *cu = &t4a__be.cu;
  uint64_t chunk;
  uint32_t count;
  layout(rt->opts.staging_bytes, &chunk, &count);
  uint32_t ring = (uint32_t)knob("T4A_STAGING_RING", 0, 2, count);
  if (spare && spare->chunks && spare->chunk_bytes == chunk && spare->count == count) {
    *s = *spare; /* an idle staging of this layout: nothing to pin or create */
    memset(spare, 0, sizeof *spare);
    s->next = 0;
    s->peak_bytes = 0;
    s->ring = ring ? ring : count;
    tune(s);
    return T4A_OK;
  }
  if (spare && spare->chunks)
    t4a__staging_release(spare); /* another layout: not ours to reuse */
  memset(s, 0, sizeof *s);
  s->chunks = calloc(count, sizeof *s->chunks);
  if (!s->chunks)
    return t4a__fail(T4A_ENOMEM, "runtime_create: out of host memory for staging");
  void *base = NULL;
  uint64_t total = chunk * count;
  t4a__CUresult r = cu->cuMemHostAlloc(&base, (size_t)total, T4A__CU_MEMHOSTALLOC_PORTABLE);
  if (r != T4A__CUDA_SUCCESS) {
    free(s->chunks);
    s->chunks = NULL;
    return t4a__cu_fail(r,
                        "runtime_create: pinning %llu bytes of staging failed; lower "
                        "t4a_runtime_options.staging_bytes or free pinned memory",
                        (unsigned long long)total);
  }
  s->base = base;
  s->bytes = total;
  s->chunk_bytes = chunk;
  for (uint32_t i = 0; i < count; i++) {
    s->chunks[i].ptr = s->base + (uint64_t)i * chunk;
    r = cu->cuEventCreate(&s->chunks[i].ev, T4A__CU_EVENT_DISABLE_TIMING);
    if (r != T4A__CUDA_SUCCESS) {
      s->count = i;
      t4a__staging_fini(rt, true);
      return t4a__cu_fail(r, "runtime_create: cuEventCreate for staging failed; free "
                             "resources and retry");
    }
    rt->c.events_created++;
  }
  s->count = count;
  s->ring = ring ? ring : count;
  tune(s);
  return T4A_OK;
}

void t4a__staging_fini(t4a__runtime *rt, bool idle) {
  t4a__staging *s = &rt->stage;
  const t4a__cuda_api *cu = &t4a__be.cu;
  if (!idle) /* a DMA may still use the block: keep it, and what lists it */
    return;
  for (uint32_t i = 0; i < s->count; i++)
    t4a__released(rt, cu->cuEventDestroy(s->chunks[i].ev), s->chunks[i].ev, "cuEventDestroy");
  if (s->base)
    t4a__released(rt, cu->cuMemFreeHost(s->base), s->base, "cuMemFreeHost");
  free(s->chunks);
  memset(s, 0, sizeof *s);
}

t4a__staging t4a__staging_take(t4a__runtime *rt) {
  t4a__staging s = rt->stage;
  for (uint32_t i = 0; i < s.count; i++) /* the stream drained: every chunk's DMA is done */
    s.chunks[i].busy = s.chunks[i].unsynced = false;
  s.fill = 0;
  s.open_hot = false;
  memset(&rt->stage, 0, sizeof rt->stage);
  return s;
}

/* Waits until chunk c is free: its last DMA completed. */
int t4a__chunk_acquire(t4a__runtime *rt, t4a__chunk *c) {
  t4a__CUresult r = T4A__CUDA_SUCCESS;
  if (c->unsynced) /* its event could not be recorded: wait for the whole stream */
    r = t4a__be.cu.cuStreamSynchronize(rt->stream);
  else if (c->busy)
    r = t4a__be.cu.cuEventSynchronize(c->ev);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r, "staged copy: waiting for a staging chunk failed");
  c->busy = c->unsynced = false;
  return T4A_OK;
}

/* After the last DMA that uses chunk c was enqueued. */
int t4a__chunk_record(t4a__runtime *rt, t4a__chunk *c) {
  t4a__CUresult r = t4a__be.cu.cuEventRecord(c->ev, rt->stream);
  if (r != T4A__CUDA_SUCCESS) {
    c->unsynced = true; /* a DMA may still use it: its next user waits for the stream */
    return t4a__rt_cu_fail(rt, r, "staged copy: cuEventRecord failed");
  }
  c->busy = true;
  rt->c.staging_events_recorded++;
  return T4A_OK;
}

/* Tracks the most staging in flight at once. */
void t4a__staging_note_in_use(t4a__runtime *rt) {
  t4a__staging *s = &rt->stage;
  uint64_t busy = (s->fill ? s->chunk_bytes : 0) + (uint64_t)s->closing * s->chunk_bytes;
  for (uint32_t i = 0; i < s->count; i++)
    busy += s->chunks[i].busy && !(s->fill && i == s->open) ? s->chunk_bytes : 0;
  if (busy > s->peak_bytes)
    s->peak_bytes = busy;
}

/* Closes the chunk host-to-device copies are filling: one event after all
 * the DMAs out of it, then on to the next chunk. Every other use of the
 * staging closes it first. */
int t4a__staging_close_fill(t4a__runtime *rt) {
  t4a__staging *s = &rt->stage;
  if (!s->fill)
    return T4A_OK;
  t4a__chunk *c = &s->chunks[s->open];
  s->fill = 0;
  if (s->open_hot)
    s->hot_next ^= 1u;
  else
    s->next = (s->next + 1) % s->ring;
  return t4a__chunk_record(rt, c);
}

#define FILL_ALIGN 64u /* pieces in one chunk start on their own cache line */

static uint64_t fill_used(uint64_t n) { return (n + FILL_ALIGN - 1) & ~(uint64_t)(FILL_ALIGN - 1); }

/* A scalar's copy as a memset (see memset_tiny): true when it was one,
 * with the driver's result in *rc; false (nothing done) when its size or
 * alignment has no memset, or the driver lacks that one. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "h2d_memset passes the host's bytes as a value: it needs a little-endian host, as the device"
#endif
static bool h2d_memset(t4a__runtime *rt, t4a__CUdeviceptr dst, const void *src, unsigned size,
                       int *rc) {
  if ((size != 1 && size != 2 && size != 4) || (dst & (size - 1)) || !t4a__rt_has_memset(size))
    return false;
  uint32_t v = 0; /* the host's bytes as they are, in the low ones (both ends little-endian) */
  memcpy(&v, src, size);
  t4a__CUresult r;
  *rc = T4A_OK; /* with no context made current first, as the driver's pageable call */
  T4A__RT_CALL_IN_ITS_CONTEXT(rt, r, *rc, t4a__rt_memset(rt, dst, v, size, 1));
  if (*rc == T4A_OK && r != T4A__CUDA_SUCCESS)
    *rc = t4a__rt_cu_fail(rt, r, "copy_h2d: cuMemsetD%uAsync of one element failed", size * 8);
  return true;
}

/* h2d_memset when the copy is at most 4 bytes and the memsets are on: the
 * test inline, so that the other copies pay no call for it. */
static inline bool h2d_tiny(t4a__runtime *rt, t4a__CUdeviceptr dst, const void *src, uint64_t bytes,
                            int *rc) {
  return bytes <= 4 && rt->stage.memset_tiny && h2d_memset(rt, dst, src, (unsigned)bytes, rc);
}

static int h2d_result(t4a__runtime *rt, t4a__CUresult r, uint64_t n) {
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r, "copy_h2d: cuMemcpyHtoDAsync of %llu bytes failed",
                           (unsigned long long)n);
  return T4A_OK;
}

/* A DMA made with rt's context current, as t4a__staged_h2d is called: the
 * driver wants it for a pinned source (the staging's chunks), and a
 * pageable one below the direct limit does not mind it. */
static int h2d_dma(t4a__runtime *rt, t4a__CUdeviceptr dst, const char *piece, uint64_t n) {
  return h2d_result(rt, t4a__be.cu.cuMemcpyHtoDAsync(dst, piece, (size_t)n, rt->stream), n);
}

int t4a__direct_h2d(t4a__runtime *rt, t4a__CUdeviceptr dst, const void *src, uint64_t bytes) {
  t4a__CUresult r;
  int rc = T4A_OK;
  if (h2d_tiny(rt, dst, src, bytes, &rc))
    return rc;
  T4A__RT_CALL_IN_ITS_CONTEXT(rt, r, rc,
                              t4a__be.cu.cuMemcpyHtoDAsync(dst, src, (size_t)bytes, rt->stream));
  return rc ? rc : h2d_result(rt, r, bytes);
}

/* A mid-size copy (at most the hot window) into the open hot window, or a
 * fresh window at the start of the next hot chunk. A copy into the window
 * already open is the memcpy and the DMA call, no more: its chunk is counted
 * in use already and its event comes when the window is closed (small
 * copies make this a hot path: from 16 KiB a pinned DMA call costs the
 * driver less than its pageable one; docs/performance.md, session 6). */
static int h2d_hot(t4a__runtime *rt, t4a__CUdeviceptr dst, const void *src, uint64_t bytes) {
  t4a__staging *s = &rt->stage;
  int rc;
  if (s->fill && (!s->open_hot || s->fill + bytes > s->hot_window) &&
      (rc = t4a__staging_close_fill(rt)))
    return rc;
  bool opened = !s->fill;
  if (opened) {
    if ((rc = t4a__chunk_acquire(rt, &s->chunks[s->hot_next])))
      return rc;
    s->open = s->hot_next;
    s->open_hot = true;
  }
  char *piece = s->chunks[s->open].ptr + s->fill;
  t4a__parallel_memcpy(piece, src, (size_t)bytes,
                       t4a__staging_how(s, rt->opts.copy_threads, bytes, true));
  if ((rc = h2d_dma(rt, dst, piece, bytes)))
    return rc;
  uint64_t used = fill_used(bytes);
  s->fill = s->fill + used < s->hot_window ? s->fill + used : s->hot_window;
  if (opened)
    t4a__staging_note_in_use(rt);
  return s->fill == s->hot_window ? t4a__staging_close_fill(rt) : T4A_OK;
}

/* A piece of a large copy: its memcpy runs on the copy threads while the
 * next piece's starts; its DMA (and, if it fills its chunk, the chunk's
 * event) follows once the memcpy finished. */
typedef struct h2d_piece {
  t4a__copy_task task;
  uint32_t chunk;
  bool closes; /* it fills its chunk: record the chunk's event after its DMA */
  char *ptr;
  t4a__CUdeviceptr dst;
  uint64_t n;
} h2d_piece;

static int piece_complete(t4a__runtime *rt, h2d_piece *p) {
  t4a__copy_finish(&p->task);
  int rc = h2d_dma(rt, p->dst, p->ptr, p->n);
  if (p->closes) {
    t4a__chunk *c = &rt->stage.chunks[p->chunk];
    rt->stage.closing--;
    if (rc == T4A_OK)
      rc = t4a__chunk_record(rt, c); /* a failed record marks it unsynced */
    else /* earlier copies' DMAs out of it may still run, and no event follows them */
      c->unsynced = true;
  }
  return rc;
}

/* A started piece whose DMA will not be made (an error ended the copy):
 * its memcpy is waited for, and a chunk it closed is left for its next
 * user to wait for the whole stream. */
static void piece_abandon(t4a__runtime *rt, h2d_piece *p) {
  t4a__copy_finish(&p->task);
  if (p->closes) {
    rt->stage.closing--;
    rt->stage.chunks[p->chunk].unsynced = true;
  }
}

/* Host-to-device copies fill chunks: a copy takes the rest of the current
 * chunk, and the chunk's event is recorded once, when it is full (or
 * another use of the staging closes it), not after every copy: a stream of
 * copies costs one DMA call each and no event calls. A large copy fills
 * whole chunks, each closed when full, so its DMAs overlap the memcpy of
 * the next chunk; with the pipeline on, the next chunk's memcpy starts
 * before the current one's ends. */
int t4a__staged_h2d(t4a__runtime *rt, t4a__CUdeviceptr dst, const void *src, uint64_t bytes) {
  t4a__staging *s = &rt->stage;
  int rc;
  if (!s->count || !s->chunk_bytes)
    return t4a__fail(T4A_EINTERNAL, "copy_h2d: the runtime has no staging; recreate it");
  if (h2d_tiny(rt, dst, src, bytes, &rc))
    return rc;
  if (bytes <= s->direct_h2d)
    return h2d_dma(rt, dst, src, bytes); /* the driver stages it: see direct_limit */
  if (bytes <= s->hot_window)
    return h2d_hot(rt, dst, src, bytes);
  if (s->fill && s->open_hot && (rc = t4a__staging_close_fill(rt)))
    return rc;
  const char *from = src;
  h2d_piece pieces[2], *prev = NULL;
  rc = T4A_OK;
  for (uint64_t off = 0, k = 0; off < bytes; k++) {
    h2d_piece *p = &pieces[k & 1];
    if (!s->fill && (rc = t4a__chunk_acquire(rt, &s->chunks[s->next])))
      break;
    uint64_t room = s->chunk_bytes - s->fill;
    p->chunk = s->open = s->next;
    s->open_hot = false;
    p->n = bytes - off < room ? bytes - off : room;
    p->ptr = s->chunks[p->chunk].ptr + s->fill;
    p->dst = dst + off;
    t4a__copy_start(&p->task, p->ptr, from + off, (size_t)p->n,
                    t4a__staging_how(s, rt->opts.copy_threads, p->n, true));
    uint64_t used = fill_used(p->n);
    s->fill = used < room ? s->fill + used : s->chunk_bytes;
    p->closes = s->fill == s->chunk_bytes;
    if (p->closes) { /* the next piece takes the next chunk; this one's event follows its DMA */
      s->fill = 0;
      s->next = (s->next + 1) % s->ring;
      s->closing++;
    }
    t4a__staging_note_in_use(rt);
    off += p->n;
    if (!s->pipeline) {
      if ((rc = piece_complete(rt, p)))
        break;
      continue;
    }
    if (prev && (rc = piece_complete(rt, prev))) {
      piece_abandon(rt, p); /* the threads must be done with the source */
      prev = NULL;
      break;
    }
    prev = p;
  }
  if (prev && rc == T4A_OK)
    rc = piece_complete(rt, prev);
  else if (prev) /* a chunk could not be had: the last piece's DMA is not made */
    piece_abandon(rt, prev);
  return rc;
}
