/* plugin-cuda/staging2d.c -- pageable rectangles (ABI 1.1's 2D copies)
 * through the staging: whole rows are packed into chunks and moved with one
 * 2D DMA per chunk, the packing split over the copy threads by rows; rows
 * wider than a chunk go row by row through the 1D path (staging.c). */
#include "config.h"

#include "backend-core/copypool.h"
#include "plugin-cuda/runtime.h"

/* Copies rows between a packed chunk and pitched host memory. */
static void pack_rows(char *to, uint64_t to_pitch, const char *from, uint64_t from_pitch,
                      uint64_t width, uint64_t rows, t4a__copy_how how) {
  t4a__parallel_memcpy_2d(to, (size_t)to_pitch, from, (size_t)from_pitch, (size_t)width,
                          (size_t)rows, how);
}

/* A 2D DMA between a packed chunk and pitched device memory. */
static int chunk_dma_2d(t4a__runtime *rt, bool to_device, t4a__chunk *c, t4a__CUdeviceptr dev,
                        uint64_t dev_pitch, uint64_t width, uint64_t rows) {
  t4a__CUDA_MEMCPY2D m = {0};
  if (to_device) {
    m.srcMemoryType = T4A__CU_MEMORYTYPE_HOST;
    m.srcHost = c->ptr;
    m.srcPitch = (size_t)width;
    m.dstMemoryType = T4A__CU_MEMORYTYPE_DEVICE;
    m.dstDevice = dev;
    m.dstPitch = (size_t)(rows > 1 ? dev_pitch : width);
  } else {
    m.srcMemoryType = T4A__CU_MEMORYTYPE_DEVICE;
    m.srcDevice = dev;
    m.srcPitch = (size_t)(rows > 1 ? dev_pitch : width);
    m.dstMemoryType = T4A__CU_MEMORYTYPE_HOST;
    m.dstHost = c->ptr;
    m.dstPitch = (size_t)width;
  }
  m.WidthInBytes = (size_t)width;
  m.Height = (size_t)rows;
  t4a__CUresult r = t4a__be.cu.cuMemcpy2DAsync(&m, rt->stream);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r, "%s: cuMemcpy2DAsync of %llu rows failed",
                           to_device ? "copy_2d_h2d" : "copy_2d_d2h", (unsigned long long)rows);
  return T4A_OK;
}

int t4a__staged_h2d_2d(t4a__runtime *rt, t4a__CUdeviceptr dst, const char *src,
                       const t4a__rect *r) {
  t4a__staging *s = &rt->stage;
  int rc;
  if (r->width > s->chunk_bytes || !t4a__be.cu.cuMemcpy2DAsync) { /* row by row */
    for (uint64_t i = 0; i < r->rows; i++)
      if ((rc = t4a__staged_h2d(rt, dst + i * r->dst_pitch, src + i * r->src_pitch, r->width)))
        return rc;
    return T4A_OK;
  }
  if ((rc = t4a__staging_close_fill(rt)))
    return rc;
  uint64_t per_chunk = s->chunk_bytes / r->width;
  for (uint64_t row = 0; row < r->rows;) {
    uint64_t k = r->rows - row < per_chunk ? r->rows - row : per_chunk;
    t4a__chunk *c = &s->chunks[s->next];
    if ((rc = t4a__chunk_acquire(rt, c)))
      return rc;
    pack_rows(c->ptr, r->width, src + row * r->src_pitch, r->src_pitch, r->width, k,
              t4a__staging_how(s, rt->opts.copy_threads, r->width * k, true));
    if ((rc = chunk_dma_2d(rt, true, c, dst + row * r->dst_pitch, r->dst_pitch, r->width, k)) ||
        (rc = t4a__chunk_record(rt, c)))
      return rc;
    t4a__staging_note_in_use(rt);
    s->next = (s->next + 1) % s->ring;
    row += k;
  }
  return T4A_OK;
}

int t4a__staged_d2h_2d(t4a__runtime *rt, char *dst, t4a__CUdeviceptr src, const t4a__rect *r) {
  t4a__staging *s = &rt->stage;
  int rc;
  if (!s->count || !s->ring || !s->chunk_bytes || !r->width)
    return t4a__fail(T4A_EINTERNAL, "copy_2d_d2h: the runtime has no staging; recreate it");
  if (r->width > s->chunk_bytes || !t4a__be.cu.cuMemcpy2DAsync) { /* row by row */
    for (uint64_t i = 0; i < r->rows; i++)
      if ((rc = t4a__staged_d2h(rt, dst + i * r->dst_pitch, src + i * r->src_pitch, r->width)))
        return rc;
    return T4A_OK;
  }
  const uint32_t ring = s->ring; /* not 0 (checked above); close_fill leaves it */
  if ((rc = t4a__staging_close_fill(rt)))
    return rc;
  uint64_t per_chunk = s->chunk_bytes / r->width;
  uint64_t groups = (r->rows + per_chunk - 1) / per_chunk, issued = 0, done = 0;
  uint32_t first = s->next; /* group i uses chunk (first + i) % ring */
  while (done < groups) {
    while (issued < groups && issued - done < ring) { /* DMAs run ahead of the unpacking */
      t4a__chunk *c = &s->chunks[(first + issued) % ring];
      uint64_t row = issued * per_chunk;
      uint64_t k = r->rows - row < per_chunk ? r->rows - row : per_chunk;
      if ((rc = t4a__chunk_acquire(rt, c)) ||
          (rc = chunk_dma_2d(rt, false, c, src + row * r->src_pitch, r->src_pitch, r->width, k)) ||
          (rc = t4a__chunk_record(rt, c)))
        return rc;
      t4a__staging_note_in_use(rt);
      issued++;
    }
    t4a__chunk *c = &s->chunks[(first + done) % ring];
    if ((rc = t4a__chunk_acquire(rt, c)))
      return rc;
    uint64_t row = done * per_chunk;
    uint64_t k = r->rows - row < per_chunk ? r->rows - row : per_chunk;
    pack_rows(dst + row * r->dst_pitch, r->dst_pitch, c->ptr, r->width, r->width, k,
              t4a__staging_how(s, rt->opts.copy_threads, r->width * k, false));
    done++;
  }
  s->next = (uint32_t)((first + groups) % ring);
  return T4A_OK;
}
