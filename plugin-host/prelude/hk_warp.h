/* hk_warp.h (part of host_kernel.h) -- warp operations: __syncwarp,
 * shuffles, votes, reductions, __activemask, with CUDA's semantics for full
 * and partial masks (warps of 32 lanes, lane = linear thread index % 32).
 *
 * A lane deposits its operand and waits until every lane named in its mask
 * has arrived; the last one computes everyone's result. Each calling lane
 * must be in its own mask and all lanes of a mask must call the same
 * operation with the same mask (else T4A_HK_FAULT_BARRIER, as
 * compute-sanitizer's synccheck would report); a lane of the mask that does
 * not exist or has returned is a fault too. __activemask is the set of the
 * warp's lanes that reach it together: it completes when every other running
 * lane of the warp waits somewhere or has returned. */

namespace t4a__hk {
enum : uint32_t {
  W_SYNC = 1,
  W_IDX,
  W_UP,
  W_DOWN,
  W_XOR,
  W_BALLOT,
  W_ANY,
  W_ALL,
  W_ADD,
  W_MIN,
  W_MAX,
  W_UMIN,
  W_UMAX,
  W_AND,
  W_OR,
  W_XORR,
  W_MATCH_ANY,
  W_MATCH_ALL
};

inline const char *warp_op_name(uint32_t op) {
  static const char *const names[] = {"?",
                                      "__syncwarp",
                                      "__shfl_sync",
                                      "__shfl_up_sync",
                                      "__shfl_down_sync",
                                      "__shfl_xor_sync",
                                      "__ballot_sync",
                                      "__any_sync",
                                      "__all_sync",
                                      "__reduce_add_sync",
                                      "__reduce_min_sync",
                                      "__reduce_max_sync",
                                      "__reduce_min_sync",
                                      "__reduce_max_sync",
                                      "__reduce_and_sync",
                                      "__reduce_or_sync",
                                      "__reduce_xor_sync",
                                      "__match_any_sync",
                                      "__match_all_sync"};
  return op < sizeof names / sizeof names[0] ? names[op] : "?";
}

[[noreturn]] __attribute__((noinline, cold)) inline void
warp_fault(const char *what, const fiber *me, uint32_t a, uint32_t b) {
  char m[256];
  snprintf(m, sizeof m, what, me->lane, me->index >> 5, a, b);
  size_t n = 0;
  while (m[n])
    ++n;
  snprintf(m + n, sizeof m - n, " in kernel %s", ctx().kernel);
  leave(T4A_HK_FAULT_BARRIER, m);
}

/* The source lane of a shuffle for lane l, or -1 (then l keeps its own
 * value): PTX shfl's rules, which CUDA's width argument maps to. */
inline int shfl_src(uint32_t op, uint32_t l, int32_t arg, int32_t width) {
  uint32_t seg = l & ~(uint32_t)(width - 1), last = seg + (uint32_t)width - 1;
  int32_t j;
  switch (op) {
  case W_IDX: return (int)(seg + ((uint32_t)arg & (uint32_t)(width - 1)));
  case W_UP: j = (int32_t)l - arg; return j >= (int32_t)seg ? j : -1;
  case W_DOWN: j = (int32_t)l + arg; return j <= (int32_t)last ? j : -1;
  default: j = (int32_t)(l ^ ((uint32_t)arg & 31u)); return j <= (int32_t)last ? j : -1;
  }
}

/* The last lane of the mask arrived: checks that every lane of the mask
 * called the same operation with the same mask, then computes every
 * lane's result (one pass for the operands, one for the results). */
inline void warp_complete(block *b, warp *w, fiber *me, uint32_t mask) {
  uint32_t base = me->index & ~31u, op = me->op;
  fiber *lanes[32];
  uint64_t acc = 0;
  for (uint32_t p = mask; p; p &= p - 1) {
    uint32_t l = (uint32_t)__builtin_ctz(p);
    fiber *f = lanes[l] = fiber_at(b, base + l);
    if (__builtin_expect(f->mask != mask || f->op != op, 0))
      warp_fault("lane %u of warp %u and a lane of its mask reached different warp operations "
                 "(masks 0x%08x and 0x%08x, or different functions)",
                 me, mask, f->mask);
    uint64_t v = f->val;
    switch (op) {
    case W_BALLOT:
    case W_ANY:
    case W_ALL: acc |= (uint64_t)(v != 0) << l; break;
    case W_ADD: acc += v; break;
    case W_AND: acc = p == mask ? v : acc & v; break;
    case W_OR: acc |= v; break;
    case W_XORR: acc ^= v; break;
    case W_MIN: acc = p == mask || (int32_t)(uint32_t)v < (int32_t)(uint32_t)acc ? v : acc; break;
    case W_MAX: acc = p == mask || (int32_t)(uint32_t)v > (int32_t)(uint32_t)acc ? v : acc; break;
    case W_UMIN: acc = p == mask || v < acc ? v : acc; break;
    case W_UMAX: acc = p == mask || v > acc ? v : acc; break;
    default: break;
    }
  }
  if (op == W_ANY)
    acc = acc != 0;
  else if (op == W_ALL)
    acc = acc == mask;
  for (uint32_t p = mask; p; p &= p - 1) {
    uint32_t l = (uint32_t)__builtin_ctz(p);
    fiber *f = lanes[l];
    uint64_t r = acc;
    if (op >= W_IDX && op <= W_XOR) {
      int j = shfl_src(op, l, f->arg, f->width);
      r = j >= 0 && ((mask >> j) & 1u) ? lanes[j]->val : f->val;
    } else if (op == W_MATCH_ANY || op == W_MATCH_ALL) {
      r = 0;
      for (uint32_t q = mask; q; q &= q - 1) {
        uint32_t k = (uint32_t)__builtin_ctz(q);
        r |= (uint64_t)(lanes[k]->val == f->val) << k;
      }
      if (op == W_MATCH_ALL)
        r = r == mask ? mask : 0;
    }
    f->res = r;
    f->released = 1;
  }
  w->pending &= ~mask;
}

__attribute__((noinline)) inline uint64_t warp_op(uint32_t op, uint32_t mask, uint64_t val,
                                                  int32_t arg, int32_t width) {
  tls_state &t = ctx();
  block *b = t.blk;
  if (__builtin_expect(!b, 0))
    not_fibers(warp_op_name(op));
  fiber *me = t.self;
  warp *w = &b->warps[me->index >> 5];
  uint32_t bit = 1u << me->lane;
  if (__builtin_expect(!(mask & bit) || (mask & ~(w->exist & ~w->done)), 0)) {
    if (!(mask & bit))
      warp_fault("lane %u of warp %u is not in its own mask 0x%08x%.0u", me, mask, 0);
    warp_fault("lane %u of warp %u names lanes that do not exist or have returned in its mask "
               "(0x%08x; running lanes 0x%08x)",
               me, mask, w->exist & ~w->done);
  }
  if (__builtin_expect(
          op >= W_IDX && op <= W_XOR && (width <= 0 || width > 32 || (width & (width - 1))), 0))
    warp_fault("lane %u of warp %u: shuffle width %d%.0u is not a power of two up to 32", me,
               (uint32_t)width, 0);
  me->op = op;
  me->mask = mask;
  me->val = val;
  me->arg = arg;
  me->width = width;
  me->released = 0;
  w->pending |= bit;
  if ((w->pending & mask) == mask) {
    warp_complete(b, w, me, mask);
    return me->res;
  }
  me->state = F_WARP;
  wait(t, b, me, warp_op_name(op));
  return me->res;
}

__attribute__((noinline)) inline uint32_t activemask() {
  tls_state &t = ctx();
  block *b = t.blk;
  if (__builtin_expect(!b, 0))
    not_fibers("__activemask");
  fiber *me = t.self;
  warp *w = &b->warps[me->index >> 5];
  me->released = 0;
  me->state = F_ACT;
  w->act |= 1u << me->lane;
  if (!act_resolve(b, w))
    wait(t, b, me, "__activemask");
  me->state = F_RUN;
  return (uint32_t)me->res;
}

template <class T> inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8, "a warp operation moves at most 8 bytes");
  uint64_t u = 0;
  __builtin_memcpy(&u, &v, sizeof(T));
  return u;
}
template <class T> inline T from_bits(uint64_t u) {
  T v;
  __builtin_memcpy(&v, &u, sizeof(T));
  return v;
}
} // namespace t4a__hk

inline void __syncwarp(unsigned mask = 0xffffffffu) {
  t4a__hk::warp_op(t4a__hk::W_SYNC, mask, 0, 0, 32);
}
inline unsigned __activemask() { return t4a__hk::activemask(); }
inline unsigned __ballot_sync(unsigned mask, int pred) {
  return (unsigned)t4a__hk::warp_op(t4a__hk::W_BALLOT, mask, pred != 0, 0, 32);
}
inline int __any_sync(unsigned mask, int pred) {
  return (int)t4a__hk::warp_op(t4a__hk::W_ANY, mask, pred != 0, 0, 32);
}
inline int __all_sync(unsigned mask, int pred) {
  return (int)t4a__hk::warp_op(t4a__hk::W_ALL, mask, pred != 0, 0, 32);
}
template <class T> inline T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize) {
  return t4a__hk::from_bits<T>(
      t4a__hk::warp_op(t4a__hk::W_IDX, mask, t4a__hk::to_bits(var), srcLane, width));
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned int delta, int width = warpSize) {
  return t4a__hk::from_bits<T>(
      t4a__hk::warp_op(t4a__hk::W_UP, mask, t4a__hk::to_bits(var), (int)delta, width));
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned int delta, int width = warpSize) {
  return t4a__hk::from_bits<T>(
      t4a__hk::warp_op(t4a__hk::W_DOWN, mask, t4a__hk::to_bits(var), (int)delta, width));
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize) {
  return t4a__hk::from_bits<T>(
      t4a__hk::warp_op(t4a__hk::W_XOR, mask, t4a__hk::to_bits(var), laneMask, width));
}
inline int __reduce_add_sync(unsigned mask, int v) {
  return (int)(unsigned)t4a__hk::warp_op(t4a__hk::W_ADD, mask, (unsigned)v, 0, 32);
}
inline unsigned __reduce_add_sync(unsigned mask, unsigned v) {
  return (unsigned)t4a__hk::warp_op(t4a__hk::W_ADD, mask, v, 0, 32);
}
inline int __reduce_min_sync(unsigned mask, int v) {
  return (int)t4a__hk::warp_op(t4a__hk::W_MIN, mask, (unsigned)v, 0, 32);
}
inline unsigned __reduce_min_sync(unsigned mask, unsigned v) {
  return (unsigned)t4a__hk::warp_op(t4a__hk::W_UMIN, mask, v, 0, 32);
}
inline int __reduce_max_sync(unsigned mask, int v) {
  return (int)t4a__hk::warp_op(t4a__hk::W_MAX, mask, (unsigned)v, 0, 32);
}
inline unsigned __reduce_max_sync(unsigned mask, unsigned v) {
  return (unsigned)t4a__hk::warp_op(t4a__hk::W_UMAX, mask, v, 0, 32);
}
inline unsigned __reduce_and_sync(unsigned mask, unsigned v) {
  return (unsigned)t4a__hk::warp_op(t4a__hk::W_AND, mask, v, 0, 32);
}
inline unsigned __reduce_or_sync(unsigned mask, unsigned v) {
  return (unsigned)t4a__hk::warp_op(t4a__hk::W_OR, mask, v, 0, 32);
}
inline unsigned __reduce_xor_sync(unsigned mask, unsigned v) {
  return (unsigned)t4a__hk::warp_op(t4a__hk::W_XORR, mask, v, 0, 32);
}
template <class T> inline unsigned __match_any_sync(unsigned mask, T value) {
  return (unsigned)t4a__hk::warp_op(t4a__hk::W_MATCH_ANY, mask, t4a__hk::to_bits(value), 0, 32);
}
template <class T> inline unsigned __match_all_sync(unsigned mask, T value, int *pred) {
  unsigned r =
      (unsigned)t4a__hk::warp_op(t4a__hk::W_MATCH_ALL, mask, t4a__hk::to_bits(value), 0, 32);
  *pred = r != 0;
  return r;
}
