/* plugin-cuda/staging_out.c -- copies out of device memory through a runtime's
 * staging (staging.h): pageable device-to-host copies, and the staged peer
 * copy between two runtimes without peer access.
 *
 *   D2H: enqueue DMAs into as many chunks as are free, then in order wait for
 *        each chunk, memcpy it out, and reuse it for the next piece. Returns
 *        when the destination holds all the data. */
#include "config.h"

#include <string.h>

#include "backend-core/copypool.h"
#include "plugin-cuda/runtime.h"

/* A device-to-host copy of at most one chunk: the DMA, one wait for the
 * stream (which the copy must wait for anyway), the memcpy out; no event,
 * and the chunk is idle again on return. */
static int staged_d2h_one(t4a__runtime *rt, void *dst, t4a__CUdeviceptr src, uint64_t bytes) {
  t4a__staging *s = &rt->stage;
  t4a__chunk *c = &s->chunks[s->next];
  int rc = t4a__chunk_acquire(rt, c);
  if (rc)
    return rc;
  t4a__CUresult r = t4a__be.cu.cuMemcpyDtoHAsync(c->ptr, src, (size_t)bytes, rt->stream);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r, "copy_d2h: cuMemcpyDtoHAsync of %llu bytes failed",
                           (unsigned long long)bytes);
  c->busy = true; /* in use until the wait below (counted by note_in_use) */
  t4a__staging_note_in_use(rt);
  if ((r = t4a__be.cu.cuStreamSynchronize(rt->stream)) != T4A__CUDA_SUCCESS) {
    c->unsynced = true;
    return t4a__rt_cu_fail(rt, r, "copy_d2h: the runtime's work failed");
  }
  c->busy = false;
  t4a__parallel_memcpy(dst, c->ptr, (size_t)bytes,
                       t4a__staging_how(s, rt->opts.copy_threads, bytes, false));
  s->next = (s->next + 1) % s->ring;
  return T4A_OK;
}

int t4a__staged_d2h(t4a__runtime *rt, void *dst, t4a__CUdeviceptr src, uint64_t bytes) {
  t4a__staging *s = &rt->stage;
  if (!s->count || !s->ring || !s->chunk_bytes)
    return t4a__fail(T4A_EINTERNAL, "copy_d2h: the runtime has no staging; recreate it");
  const uint32_t ring = s->ring; /* (closing the fill leaves the layout as it is) */
  int rc = t4a__staging_close_fill(rt);
  if (rc)
    return rc;
  if (bytes <= s->chunk_bytes)
    return staged_d2h_one(rt, dst, src, bytes);
  char *to = dst;
  uint64_t pieces = (bytes + s->chunk_bytes - 1) / s->chunk_bytes;
  /* Piece i uses chunk (first + i) % ring. A chunk takes its next DMA once
   * its memcpy out finished (`released` pieces have); with the pipeline on,
   * piece i's memcpy out starts before piece i - 1's is waited for. */
  uint64_t issued = 0, done = 0, released = 0;
  uint32_t first = s->next;
  t4a__copy_task tasks[2];
  bool pending = false; /* piece done - 1's memcpy out is in flight */
  while (done < pieces && rc == T4A_OK) {
    while (issued < pieces && issued - released < ring) {
      t4a__chunk *c = &s->chunks[(first + issued) % ring];
      if ((rc = t4a__chunk_acquire(rt, c)))
        break;
      uint64_t off = issued * s->chunk_bytes;
      uint64_t n = bytes - off < s->chunk_bytes ? bytes - off : s->chunk_bytes;
      t4a__CUresult r = t4a__be.cu.cuMemcpyDtoHAsync(c->ptr, src + off, (size_t)n, rt->stream);
      if (r != T4A__CUDA_SUCCESS) {
        rc = t4a__rt_cu_fail(rt, r, "copy_d2h: cuMemcpyDtoHAsync of %llu bytes failed",
                             (unsigned long long)n);
        break;
      }
      if ((rc = t4a__chunk_record(rt, c)))
        break;
      t4a__staging_note_in_use(rt);
      issued++;
    }
    t4a__chunk *c = &s->chunks[(first + done) % ring];
    if (rc || (rc = t4a__chunk_acquire(rt, c)))
      break;
    uint64_t off = done * s->chunk_bytes;
    uint64_t n = bytes - off < s->chunk_bytes ? bytes - off : s->chunk_bytes;
    t4a__copy_start(&tasks[done & 1], to + off, c->ptr, (size_t)n,
                    t4a__staging_how(s, rt->opts.copy_threads, n, false));
    if (pending || !s->pipeline) { /* the earlier piece (or, without the pipeline, this one) */
      t4a__copy_finish(&tasks[(done - (s->pipeline ? 1 : 0)) & 1]);
      released = s->pipeline ? done : done + 1;
    }
    pending = s->pipeline;
    done++;
  }
  if (pending) /* on an error too: the threads must be done with dst before we return */
    t4a__copy_finish(&tasks[(done - 1) & 1]);
  s->next = (uint32_t)((first + pieces) % ring);
  return rc;
}

int t4a__staged_peer(t4a__runtime *dst, t4a__runtime *src, t4a__CUdeviceptr dptr,
                     t4a__CUdeviceptr sptr, uint64_t bytes) {
  t4a__staging *s = &dst->stage;
  const t4a__cuda_api *cu = &t4a__be.cu;
  if (!s->count || !s->chunk_bytes)
    return t4a__fail(T4A_EINTERNAL, "copy_from_peer_via_host: no staging; recreate the runtime");
  t4a__event *last = NULL;
  int rc = t4a__staging_close_fill(dst);
  for (uint64_t off = 0; off < bytes && rc == T4A_OK;) {
    t4a__chunk *c = &s->chunks[s->next];
    s->next = (s->next + 1) % s->ring;
    uint64_t n = bytes - off < s->chunk_bytes ? bytes - off : s->chunk_bytes;
    t4a__CUcontext saved;
    t4a__event *e = NULL;
    /* the source's DMA into one of dst's pinned (portable) chunks, in src's order */
    if ((rc = t4a__chunk_acquire(dst, c)) || (rc = t4a__event_get(src, src->ordinal, &e)) ||
        (rc = t4a__ctx_enter(src, &saved)))
      break;
    t4a__CUresult r = cu->cuMemcpyDtoHAsync(c->ptr, sptr + off, (size_t)n, src->stream);
    if (r == T4A__CUDA_SUCCESS)
      r = cu->cuEventRecord(e->ev, src->stream);
    t4a__ctx_leave(src, saved);
    if (r != T4A__CUDA_SUCCESS) {
      t4a__event_put(src, e);
      rc = t4a__rt_cu_fail(src, r, "copy_from_peer_via_host: reading the source failed");
      break;
    }
    /* dst's DMA out of the chunk, after that, in dst's order */
    if ((rc = t4a__ctx_enter(dst, &saved))) {
      t4a__event_put(src, e);
      break;
    }
    r = cu->cuStreamWaitEvent(dst->stream, e->ev, 0);
    if (r == T4A__CUDA_SUCCESS)
      r = cu->cuMemcpyHtoDAsync(dptr + off, c->ptr, (size_t)n, dst->stream);
    t4a__ctx_leave(dst, saved);
    if (r != T4A__CUDA_SUCCESS) {
      t4a__event_put(src, e);
      rc = t4a__rt_cu_fail(dst, r, "copy_from_peer_via_host: writing the destination failed");
      break;
    }
    if ((rc = t4a__chunk_record(dst, c))) {
      t4a__event_put(src, e);
      break;
    }
    t4a__staging_note_in_use(dst);
    if (last)
      t4a__event_put(src, last);
    last = e;
    off += n;
  }
  if (last) { /* returns once the data has left the source */
    t4a__CUresult r = cu->cuEventSynchronize(last->ev);
    t4a__event_put(src, last);
    if (r != T4A__CUDA_SUCCESS && rc == T4A_OK)
      rc = t4a__rt_cu_fail(src, r, "copy_from_peer_via_host: the source's work failed");
  }
  return rc;
}
