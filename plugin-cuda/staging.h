/* plugin-cuda/staging.h -- a runtime's bounded pinned staging for pageable
 * transfers (staging.c). */
#ifndef T4A_PLUGIN_CUDA_STAGING_H
#define T4A_PLUGIN_CUDA_STAGING_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin-cuda/backend.h"
#include "plugin-cuda/copypool.h"

typedef struct t4a__runtime t4a__runtime;

typedef struct t4a__chunk {
  char *ptr;
  t4a__CUevent ev;
  bool busy;     /* a copy was recorded on ev and not yet seen complete */
  bool unsynced; /* a copy uses it but ev could not be recorded: wait for the stream */
} t4a__chunk;

typedef struct t4a__staging {
  char *base; /* one pinned allocation of `bytes` */
  uint64_t bytes, chunk_bytes;
  uint32_t count, next; /* chunks, and the next to use (round robin) */
  uint32_t ring;        /* chunks copies cycle through: the first `ring` (<= count) */
  uint64_t fill;        /* bytes of chunk `open` host-to-device copies use; 0 = none */
  uint32_t open;        /* the chunk being filled (`next`, or a hot chunk) */
  bool open_hot;        /* ... and it is a hot window (staging.c) */
  uint32_t hot_next;    /* the hot chunk (0 or 1) the next window uses */
  uint32_t closing;     /* chunks a large H2D copy filled whose event is not yet recorded */
  uint64_t hot_window;  /* mid-size H2D copies fill windows of this size; 0 = off */
  bool pipeline;        /* large copies: a chunk's memcpy starts before the last one's ends */
  uint64_t split_min;   /* host copies of this size or more use the copy threads */
  uint32_t spin_us;     /* copy threads look for the next part this long (copypool.h) */
  bool stream_h2d, stream_d2h; /* non-temporal stores into / out of staging */
  uint64_t direct_h2d;         /* host-to-device copies up to this size bypass the staging */
  bool memset_tiny;            /* ... and aligned ones of 1, 2 or 4 bytes are a memset */
  t4a__chunk *chunks;
  uint64_t peak_bytes;
} t4a__staging;

/* How a host copy of n bytes into (to_device) or out of the staging runs:
 * below split_min on the calling thread alone. */
static inline t4a__copy_how t4a__staging_how(const t4a__staging *s, unsigned threads, uint64_t n,
                                             bool to_device) {
  t4a__copy_how how = {n < s->split_min ? 1u : threads, to_device ? s->stream_h2d : s->stream_d2h,
                       s->spin_us, 0}; /* the finisher spins spin_us, as the copy threads */
  return how;
}

/* Pins the staging (rt->opts.staging_bytes) and creates its events, or
 * adopts `spare` (an idle staging of a destroyed runtime, may be NULL) when
 * its layout is the one wanted; a spare of another layout is released. */
int t4a__staging_init(t4a__runtime *rt, t4a__staging *spare);

/* Destroy: idle releases the events and the pinned block; after a fault
 * they are kept (a DMA may still use the block). */
void t4a__staging_fini(t4a__runtime *rt, bool idle);

/* Destroy, idle, instead of fini: hands the staging over for reuse. */
t4a__staging t4a__staging_take(t4a__runtime *rt);

/* Releases a staging owned by no runtime (what fails is kept). */
void t4a__staging_release(t4a__staging *s);

/* The chunk primitives staging.c and staging2d.c share (rt locked):
 * acquire waits until a chunk's last DMA completed; record records its event
 * after the last DMA that uses it; close_fill closes the chunk host-to-device
 * copies are filling (every other use of the staging closes it first);
 * note_in_use tracks the most staging in flight at once. */
int t4a__chunk_acquire(t4a__runtime *rt, t4a__chunk *c);
int t4a__chunk_record(t4a__runtime *rt, t4a__chunk *c);
int t4a__staging_close_fill(t4a__runtime *rt);
void t4a__staging_note_in_use(t4a__runtime *rt);

/* Whether a host-to-device copy of n bytes goes to the driver's own
 * pageable call, or is a scalar's memset (t4a__direct_h2d): at most
 * direct_h2d bytes. */
static inline bool t4a__staging_direct(const t4a__staging *s, uint64_t n) {
  return n <= s->direct_h2d && s->count && s->chunk_bytes;
}

/* That call (or the memset), on rt's stream, with no context made current
 * first (the driver's refusal gets a second call with rt's current). */
int t4a__direct_h2d(t4a__runtime *rt, t4a__CUdeviceptr dst, const void *src, uint64_t bytes);

/* Pageable copies through the staging; rt's context is current. */
int t4a__staged_h2d(t4a__runtime *rt, t4a__CUdeviceptr dst, const void *src, uint64_t bytes);
int t4a__staged_d2h(t4a__runtime *rt, void *dst, t4a__CUdeviceptr src, uint64_t bytes);

/* A rectangle of rows (ABI 1.1's 2D copies): width bytes per row. */
typedef struct t4a__rect {
  uint64_t width, rows, dst_pitch, src_pitch;
} t4a__rect;

/* Pageable rectangles through the staging: whole rows are packed into
 * chunks and moved with one 2D DMA per chunk (rows wider than a chunk go
 * row by row through the 1D path); rt's context is current. */
int t4a__staged_h2d_2d(t4a__runtime *rt, t4a__CUdeviceptr dst, const char *src, const t4a__rect *r);
int t4a__staged_d2h_2d(t4a__runtime *rt, char *dst, t4a__CUdeviceptr src, const t4a__rect *r);

/* From src's device memory to dst's through dst's staging chunks, without
 * peer access: src's DMA into a chunk (in src's stream order), dst's DMA out
 * of it after an event edge (in dst's order). Returns once the data left the
 * source. Both runtimes locked. */
int t4a__staged_peer(t4a__runtime *dst, t4a__runtime *src, t4a__CUdeviceptr dptr,
                     t4a__CUdeviceptr sptr, uint64_t bytes);

#endif
