/* fuzz/model_copy.c -- the model fuzzer's 1D and 2D transfers (see
 * fuzz/model_ops.h). */
#include "config.h"

#include <string.h>

#include "fuzz/model_ops.h"

/* ---- 1D transfers -------------------------------------------------------------------- */

/* The statuses a staged 1D copy (copy_h2d, copy_d2h) of n bytes at off of
 * buffer b (size bytes) on runtime r may return; null: the host pointer. */
static uint32_t staged_want(fz_arg r, fz_arg b, uint64_t off, uint64_t n, uint64_t size,
                            bool null) {
  uint32_t err = 0;
  ERR(null && n, T4A_EINVAL);
  ERR(!owns(r, b, buf_owner(b)), T4A_EHANDLE);
  ERR(capturing(r), T4A_EBUSY);
  if (owns(r, b, buf_owner(b)) && !in_range(off, n, size))
    err |= ST(T4A_ERANGE);
  uint32_t want = err ? err : ST_OK;
  if (n == 0)
    want |= ST_OK | ST(T4A_ERANGE) | ST(T4A_EINVAL);
  return want;
}

void fz_op_copy_h2d(void) {
  fz_trace("copy_h2d");
  fz_arg b = pick_buf();
  fz_arg r = rt_for(b, buf_owner(b));
  uint64_t size = buf_size(b), off, unused, n;
  fz_ranges(size, size, &off, &unused, &n);
  bool null = fz_chance(8);
  uint8_t *src = fz_scratch;
  fz_fill_pattern(src, n < FZ_BMAX ? n : FZ_BMAX, fz_u32());
  uint32_t want = staged_want(r, b, off, n, size, null);
  if (CALL("copy_h2d", T->copy_h2d(RT(r), BUF(b), off, null ? NULL : src, n), want) == T4A_OK &&
      n) {
    memcpy(W.buf[b.slot].data + off, src, n);
    memset(W.buf[b.slot].known + off, 1, n);
  }
}

void fz_op_copy_d2h(void) {
  fz_trace("copy_d2h");
  fz_arg b = pick_buf();
  fz_arg r = rt_for(b, buf_owner(b));
  uint64_t size = buf_size(b), off, unused, n;
  fz_ranges(size, size, &off, &unused, &n);
  bool null = fz_chance(8);
  uint8_t *dst = fz_scratch;
  memset(dst, 0xa5, sizeof fz_scratch); /* poisoned: unwritten bytes show */
  uint32_t want = staged_want(r, b, off, n, size, null);
  int rc = CALL("copy_d2h", T->copy_d2h(RT(r), null ? NULL : dst, BUF(b), off, n), want);
  if (rc == T4A_OK && n)
    fz_check_buffer(b.slot, off, dst, n, "copy_d2h");
  uint64_t from = rc == T4A_OK && n <= FZ_BMAX ? n : 0;
  for (uint64_t i = from; i < from + 64; i++)
    if (dst[i] != 0xa5)
      fz_finding("copy_d2h of %llu bytes (status %d) wrote byte %llu", (unsigned long long)n, rc,
                 (unsigned long long)i);
}

void fz_op_copy_d2d(void) {
  fz_trace("copy_d2d");
  fz_arg d = pick_buf();
  fz_arg r = rt_for(d, buf_owner(d));
  fz_arg s = fz_buf_of(r.ok ? r.slot : -1);
  if (!room(r))
    return;
  uint64_t dsz = buf_size(d), ssz = buf_size(s), doff, soff, n;
  fz_ranges(dsz, ssz, &doff, &soff, &n);
  uint32_t err = 0;
  bool dok = owns(r, d, buf_owner(d)), sok = owns(r, s, buf_owner(s)), handles = dok && sok;
  ERR(!handles, T4A_EHANDLE); /* a valid side's range may be checked first */
  ERR((dok && !in_range(doff, n, dsz)) || (sok && !in_range(soff, n, ssz)), T4A_ERANGE);
  bool overlap = handles && !err && d.slot == s.slot && n && doff < soff + n && soff < doff + n;
  ERR(overlap, T4A_EINVAL);
  uint32_t want = err ? err : ST_OK;
  if (n == 0)
    want |= ST_OK | ST(T4A_ERANGE);
  if (CALL("copy_d2d", T->copy_d2d(RT(r), BUF(d), doff, BUF(s), soff, n), want) != T4A_OK || !n)
    return;
  fz_effect e = {.kind = E_D2D,
                 .dst = d.slot,
                 .src = s.slot,
                 .dst_bits = d.bits,
                 .src_bits = s.bits,
                 .doff = doff,
                 .soff = soff,
                 .n = n};
  fz_enqueue(r.slot, &e, false);
}

void fz_op_copy_pinned(void) {
  bool h2d = fz_chance(128);
  fz_trace(h2d ? "copy_h2d_pinned" : "copy_d2h_pinned");
  fz_arg b = pick_buf();
  fz_arg r = rt_for(b, buf_owner(b));
  fz_arg h = fz_host_of(r.ok ? r.slot : -1);
  if (!room(r))
    return;
  uint64_t bsz = buf_size(b), hsz = host_size(h), boff, hoff, n;
  fz_ranges(bsz, hsz, &boff, &hoff, &n);
  bool bok = owns(r, b, buf_owner(b)), hok = owns(r, h, host_owner(h)), handles = bok && hok;
  uint32_t err = 0;
  ERR(!handles, T4A_EHANDLE); /* a valid side's range may be checked first */
  ERR((bok && !in_range(boff, n, bsz)) || (hok && !in_range(hoff, n, hsz)), T4A_ERANGE);
  if (hok && !h2d && W.host[h.slot].read_only)
    err |= ST(T4A_EINVAL);
  uint32_t want = err ? err : ST_OK;
  if (n == 0)
    want |= ST_OK | ST(T4A_ERANGE);
  int rc =
      h2d ? CALL("copy_h2d_pinned", T->copy_h2d_pinned(RT(r), BUF(b), boff, HOST(h), hoff, n), want)
          : CALL("copy_d2h_pinned", T->copy_d2h_pinned(RT(r), HOST(h), hoff, BUF(b), boff, n),
                 want);
  if (rc != T4A_OK || !n)
    return;
  fz_effect e = {.kind = h2d ? E_H2DP : E_D2HP,
                 .dst = h2d ? b.slot : h.slot,
                 .src = h2d ? h.slot : b.slot,
                 .dst_bits = h2d ? b.bits : h.bits,
                 .src_bits = h2d ? h.bits : b.bits,
                 .doff = h2d ? boff : hoff,
                 .soff = h2d ? hoff : boff,
                 .n = n};
  fz_enqueue(r.slot, &e, false);
}

/* copy_from_runtime, copy_from_peer, copy_from_peer_via_host. */
void fz_op_copy_cross(void) {
  uint8_t kind = fz_u8() % 3;
  static const char *const names[] = {"copy_from_runtime", "copy_from_peer",
                                      "copy_from_peer_via_host"};
  fz_trace(names[kind]);
  fz_arg d = pick_buf(), s = pick_buf();
  fz_arg dr = rt_for(d, buf_owner(d)), sr = rt_for(s, buf_owner(s));
  uint64_t dsz = buf_size(d), ssz = buf_size(s), doff, soff, n;
  fz_ranges(dsz, ssz, &doff, &soff, &n);
  if (fz_on_host && kind) { /* one device, no peer: the runtimes are checked, then refused */
    uint32_t want = dr.bits == sr.bits               ? ST(T4A_EINVAL)
                    : !dr.ok || !sr.ok               ? ST(T4A_EHANDLE)
                    : capturing(dr) || capturing(sr) ? ST(T4A_EBUSY)
                                                     : ST(T4A_EUNSUPPORTED);
    int (*peer)(t4a_runtime, t4a_buffer, uint64_t, t4a_runtime, t4a_buffer, uint64_t, uint64_t) =
        kind == 1 ? T->copy_from_peer : T->copy_from_peer_via_host;
    CALL(names[kind], peer(RT(dr), BUF(d), doff, RT(sr), BUF(s), soff, n), want);
    return;
  }
  bool dok = owns(dr, d, buf_owner(d)), sok = owns(sr, s, buf_owner(s)), handles = dok && sok;
  uint32_t err = 0;
  ERR(!handles, T4A_EHANDLE); /* a valid side's range may be checked first */
  ERR(capturing(dr) || capturing(sr), T4A_EBUSY);
  bool same_dev = handles && W.dev[dr.slot] == W.dev[sr.slot];
  ERR((dok && !in_range(doff, n, dsz)) || (sok && !in_range(soff, n, ssz)), T4A_ERANGE);
  if (handles && kind == 0 && !same_dev)
    err |= ST(T4A_EFOREIGNDEVICE);
  if (handles && kind == 1 && same_dev)
    err |= ST(T4A_EINVAL) | ST(T4A_EFOREIGNDEVICE);
  /* via_host between two runtimes of one device: the header does not refuse it */
  if (dr.bits == sr.bits) /* one runtime: copy_d2d's job (refused before the buffers) */
    err = (err & ST(T4A_EBUSY)) | ST(T4A_EINVAL);
  uint32_t want = err ? err : ST_OK;
  if (n == 0)
    want |= ST_OK | ST(T4A_ERANGE);
  int (*copy)(t4a_runtime, t4a_buffer, uint64_t, t4a_runtime, t4a_buffer, uint64_t, uint64_t) =
      kind == 0   ? T->copy_from_runtime
      : kind == 1 ? T->copy_from_peer
                  : T->copy_from_peer_via_host;
  if (CALL(names[kind], copy(RT(dr), BUF(d), doff, RT(sr), BUF(s), soff, n), want) != T4A_OK)
    return;
  if (n) {
    bool overlap = d.slot == s.slot && doff < soff + n && soff < doff + n;
    fz_effect e = {.kind = E_D2D, .dst = d.slot, .src = s.slot, .doff = doff, .soff = soff, .n = n};
    if (overlap)
      memset(W.buf[d.slot].known + doff, 0, n);
    else
      fz_apply(&e);
  }
  if (dr.slot != sr.slot) /* src's later work must not race the copy's read */
    fz_order_after(sr.slot, dr.slot);
}

/* ---- 2D transfers ------------------------------------------------------------------------ */

/* A rectangle: mostly valid for sides of dsize and ssize bytes. */
static t4a_copy_2d rect(uint64_t dsize, uint64_t ssize, uint32_t *err) {
  t4a_copy_2d g = {.struct_size = sizeof g};
  g.width = fz_below(65);
  g.rows = fz_below(9);
  g.dst_pitch = g.width + fz_below(64);
  g.src_pitch = g.width + fz_below(64);
  g.dst_offset = fz_below(dsize + 1);
  g.src_offset = fz_below(ssize + 1);
  switch (fz_u8() % 12) {
  case 0:
    g.struct_size = 8;
    *err |= ST(T4A_EINVAL);
    break;
  case 1:
    g.reserved = 1;
    *err |= ST(T4A_EINVAL);
    break;
  case 2:
    if (g.width > 0)
      g.dst_pitch = g.width - 1;
    break;
  case 3: g.src_pitch = fz_max_pitch + 1 + fz_below(64); break;
  case 4: g.dst_offset = UINT64_MAX - fz_below(64); break;
  case 5: g.rows = 1u << 20; break;
  default: break;
  }
  return g;
}

/* Whether every row of one side lies in size bytes (overflow-checked). */
static bool side_fits(uint64_t off, uint64_t pitch, const t4a_copy_2d *g, uint64_t size) {
  if (g->rows == 0 || g->width == 0)
    return true;
  if ((g->rows - 1) && pitch > (UINT64_MAX - off) / (g->rows - 1))
    return false;
  uint64_t last = off + (g->rows - 1) * pitch;
  return in_range(last, g->width, size);
}

void fz_op_copy_2d(void) {
  uint8_t kind = fz_u8() % 5;
  static const char *const names[] = {"copy_2d_h2d_pinned", "copy_2d_d2h_pinned", "copy_2d_d2d",
                                      "copy_2d_h2d", "copy_2d_d2h"};
  fz_trace(names[kind]);
  fz_arg b = pick_buf();
  fz_arg r = rt_for(b, buf_owner(b));
  fz_arg other = kind == 2 ? fz_buf_of(r.ok ? r.slot : -1) : fz_host_of(r.ok ? r.slot : -1);
  if (kind < 3 && !room(r))
    return;
  bool pageable = kind >= 3;
  uint64_t bsz = buf_size(b);
  uint64_t osz = pageable ? FZ_HMAX : kind == 2 ? buf_size(other) : host_size(other);
  bool to_device = kind == 0 || kind == 2 || kind == 3;
  uint32_t err = 0;
  t4a_copy_2d g = to_device ? rect(bsz, osz, &err) : rect(osz, bsz, &err);
  bool zero = g.rows == 0 || g.width == 0;
  if (pageable) { /* the host side is this program's memory: always in bounds */
    uint64_t *off = to_device ? &g.src_offset : &g.dst_offset;
    uint64_t *pitch = to_device ? &g.src_pitch : &g.dst_pitch;
    if (*pitch > FZ_HMAX / 8)
      *pitch = g.width;
    if (g.rows > 8)
      g.rows = 8;
    if (!side_fits(*off, *pitch, &g, FZ_HMAX))
      *off = 0;
  }
  /* the pitches (after the fix-up): below width with rows > 1, or above
   * the device's fz_max_pitch (with one row the header leaves it open) */
  uint32_t maybe = 0;
  ERR(g.rows > 1 && (g.dst_pitch < g.width || g.src_pitch < g.width), T4A_EINVAL);
  if (g.dst_pitch > fz_max_pitch || g.src_pitch > fz_max_pitch) {
    if (g.rows > 1)
      err |= ST(T4A_EINVAL);
    else
      maybe |= ST(T4A_EINVAL);
  }
  bool bok = owns(r, b, buf_owner(b));
  bool ook = pageable || owns(r, other, kind == 2 ? buf_owner(other) : host_owner(other));
  bool owned = bok && ook;
  ERR(!owned, T4A_EHANDLE); /* a valid side's rows may be checked first */
  ERR(pageable && capturing(r), T4A_EBUSY);
  bool dfits = side_fits(g.dst_offset, g.dst_pitch, &g, to_device ? bsz : osz);
  bool sfits = side_fits(g.src_offset, g.src_pitch, &g, to_device ? osz : bsz);
  bool fits = dfits && sfits;
  ERR(((to_device ? bok : ook) && !dfits) || ((to_device ? ook : bok) && !sfits), T4A_ERANGE);
  if (ook && kind == 1 && W.host[other.slot].read_only)
    err |= ST(T4A_EINVAL);
  bool overlap = false;
  if (owned && kind == 2 && b.slot == other.slot && !zero && fits) {
    uint64_t d0 = g.dst_offset, d1 = d0 + (g.rows - 1) * g.dst_pitch + g.width;
    uint64_t s0 = g.src_offset, s1 = s0 + (g.rows - 1) * g.src_pitch + g.width;
    overlap = d0 < s1 && s0 < d1; /* the spans meet: the rows may */
  }
  uint32_t want = (err ? err : ST_OK) | maybe;
  if (zero)
    want |= ST_OK | ST(T4A_ERANGE) | ST(T4A_EINVAL);
  if (overlap)
    want |= ST(T4A_EINVAL);
  uint8_t *host = fz_scratch;
  if (kind == 3)
    fz_fill_pattern(host, FZ_HMAX, fz_u32());
  if (kind == 4)
    memset(host, 0xa5, sizeof fz_scratch);
  int rc;
  switch (kind) {
  case 0: rc = CALL(names[0], T->copy_2d_h2d_pinned(RT(r), BUF(b), HOST(other), &g), want); break;
  case 1: rc = CALL(names[1], T->copy_2d_d2h_pinned(RT(r), HOST(other), BUF(b), &g), want); break;
  case 2: rc = CALL(names[2], T->copy_2d_d2d(RT(r), BUF(b), BUF(other), &g), want); break;
  case 3: rc = CALL(names[3], T->copy_2d_h2d(RT(r), BUF(b), host, &g), want); break;
  default: rc = CALL(names[4], T->copy_2d_d2h(RT(r), host, BUF(b), &g), want); break;
  }
  if (rc != T4A_OK || zero)
    return;
  if (kind == 3) {
    for (uint64_t i = 0; i < g.rows; i++) {
      memcpy(W.buf[b.slot].data + g.dst_offset + i * g.dst_pitch,
             host + g.src_offset + i * g.src_pitch, g.width);
      memset(W.buf[b.slot].known + g.dst_offset + i * g.dst_pitch, 1, g.width);
    }
    return;
  }
  if (kind == 4) {
    for (uint64_t i = 0; i < g.rows; i++)
      fz_check_buffer(b.slot, g.src_offset + i * g.src_pitch, host + g.dst_offset + i * g.dst_pitch,
                      g.width, "copy_2d_d2h");
    /* and nothing outside the rows: the pitch gaps and the rest stay poisoned */
    for (uint64_t at = 0; at < sizeof fz_scratch; at++) {
      uint64_t rel = at - g.dst_offset; /* one row may have any pitch; more need pitch >= width */
      bool in_row =
          at >= g.dst_offset &&
          (g.rows == 1 ? rel < g.width
                       : g.dst_pitch && rel / g.dst_pitch < g.rows && rel % g.dst_pitch < g.width);
      if (!in_row && host[at] != 0xa5)
        fz_finding("copy_2d_d2h wrote host byte %llu, outside its %llu rows of %llu bytes "
                   "(offset %llu, pitch %llu)",
                   (unsigned long long)at, (unsigned long long)g.rows, (unsigned long long)g.width,
                   (unsigned long long)g.dst_offset, (unsigned long long)g.dst_pitch);
    }
    return;
  }
  fz_effect e = {.kind = kind == 0   ? E_H2DP
                         : kind == 1 ? E_D2HP
                                     : E_D2D,
                 .two_d = true,
                 .dst = kind == 1 ? other.slot : b.slot,
                 .src = kind == 1 ? b.slot : other.slot,
                 .dst_bits = kind == 1 ? other.bits : b.bits,
                 .src_bits = kind == 1 ? b.bits : other.bits,
                 .doff = g.dst_offset,
                 .soff = g.src_offset,
                 .dpitch = g.dst_pitch,
                 .spitch = g.src_pitch,
                 .n = g.width,
                 .rows = g.rows};
  if (overlap) { /* accepted although the spans meet: the model forgets the rectangle */
    for (uint64_t i = 0; i < g.rows; i++)
      memset(W.buf[b.slot].known + g.dst_offset + i * g.dst_pitch, 0, g.width);
    if (capturing(r)) { /* captured all the same: graph_info counts it */
      W.data_unsure = true;
      W.cap[r.slot].copies++;
    }
    return;
  }
  fz_enqueue(r.slot, &e, false);
}
