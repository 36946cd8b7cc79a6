/* hk_run.h (part of host_kernel.h) -- a kernel's t4a_hk_kernel.run: its
 * parameters deduced from its function type, copied once per run call; its
 * blocks run on the calling thread, each block's threads as a loop (the
 * kernel inlined into it) or as fibers (hk_fiber.h). A fault leaves run
 * through t4a__hk_setjmp/t4a__hk_longjmp (hk_core.h: no signal mask, no system
 * call). The translator's registration (T4A_HK_KERNEL) names each kernel. */

namespace t4a__hk {
template <unsigned... I> struct seq {};
template <unsigned N, unsigned... I> struct make_seq : make_seq<N - 1, N - 1, I...> {};
template <unsigned... I> struct make_seq<0, I...> { typedef seq<I...> type; };

/* One parameter's copy (a union: the type needs no default constructor). */
template <unsigned I, class T> struct slot {
  union u {
    T v;
    u() {}
  } s;
};
template <class S, class... A> struct pack_of;
template <unsigned... I, class... A> struct pack_of<seq<I...>, A...> : slot<I, A>... {
  void load(void *const *args) {
    (__builtin_memcpy(&static_cast<slot<I, A> &>(*this).s.v, args[I], sizeof(A)), ...);
    (void)args;
  }
  template <auto K> __attribute__((always_inline)) void call() {
    K(static_cast<slot<I, A> &>(*this).s.v...);
  }
};

template <class F> struct sig {
  static_assert(sizeof(F) == 0, "a __global__ function returns void");
};
template <class... A> struct sig<void (*)(A...)> {
  static constexpr uint32_t count = sizeof...(A);
  static constexpr uint32_t sizes[sizeof...(A) + 1] = {(uint32_t)sizeof(A)..., 0};
  static constexpr uint32_t aligns[sizeof...(A) + 1] = {(uint32_t)alignof(A)..., 0};
  typedef pack_of<typename make_seq<sizeof...(A)>::type, A...> pack;
};

/* The next block in linear order (x fastest), without a division. */
inline void next_block(uint3 &b, uint32_t gx, uint32_t gy) {
  if (++b.x == gx) {
    b.x = 0;
    if (++b.y == gy)
      b.y = 0, ++b.z;
  }
}

inline bool stopped(const t4a_hk_launch *l) {
  return l->stop && __atomic_load_n(l->stop, __ATOMIC_RELAXED);
}

[[noreturn]] __attribute__((noinline, cold)) inline void
lent_too_little(const char *what, uint64_t have, uint64_t need) {
  char m[256];
  snprintf(m, sizeof m, "internal: the worker lent %llu %s, kernel %s needs %llu",
           (unsigned long long)have, what, ctx().kernel, (unsigned long long)need);
  leave(T4A_HK_FAULT_TRAP, m);
}

#ifndef T4A_HK_CHECKED
#define T4A_HK_CHECKED 0
#endif

/* Loop mode: the kernel has no barrier or warp operation, so each thread
 * runs to its end before the next starts, in thread order. The translator
 * puts the thread loop inside the kernel's body:
 *   { T4A_HK_THREADS_BEGIN(store) <body> T4A_HK_THREADS_END }
 * so that the body is optimised with the loop over threadIdx (a local:
 * vectorisable, no memory traffic per thread). The body runs as a lambda
 * per thread, capturing by value: each thread has its own copy of the
 * parameters (as on CUDA) and `return` ends only that thread. store: the
 * kernel calls a function that reads threadIdx, which then finds it in the
 * thread's state (a store per thread; without it, none; -DT4A_HK_CHECKED:
 * always, for fault_here's report). A captureless
 * lambda in the body cannot read threadIdx (write [=] or [&]). */
#define T4A_HK_THREADS_BEGIN(store)                                                                \
  {                                                                                                \
    t4a__hk::tls_state &t4a__t = t4a__hk::ctx();                                                   \
    const uint3 t4a__bdim = t4a__t.bdim;                                                           \
    for (unsigned t4a__z = 0; t4a__z < t4a__bdim.z; ++t4a__z)                                      \
      for (unsigned t4a__y = 0; t4a__y < t4a__bdim.y; ++t4a__y)                                    \
        for (unsigned t4a__x = 0; t4a__x < t4a__bdim.x; ++t4a__x) {                                \
          const uint3 t4a__tv{t4a__x, t4a__y, t4a__z};                                             \
          if ((store) || T4A_HK_CHECKED)                                                           \
            t4a__t.tid = t4a__tv;                                                                  \
          auto t4a__tIdx = [&t4a__tv]() -> const uint3 & { return t4a__tv; };                      \
          [=]() mutable -> void {
#define T4A_HK_THREADS_END                                                                         \
  }                                                                                                \
  ();                                                                                              \
  }                                                                                                \
  }
template <auto K>
__attribute__((noinline)) void loop_blocks(const t4a_hk_launch *l, uint64_t first, uint64_t count) {
  typename sig<decltype(K)>::pack p;
  p.load(l->args);
  tls_state &t = ctx();
  const uint32_t gx = l->grid.x, gy = l->grid.y;
  t.bid = uint3{(uint32_t)(first % gx), (uint32_t)(first / gx % gy), (uint32_t)(first / gx / gy)};
  for (uint64_t b = 0; b < count; ++b) {
    if (stopped(l))
      return;
    t.tid = uint3{0, 0, 0};
    p.template call<K>(); /* the kernel loops over its threads itself */
    next_block(t.bid, gx, gy);
  }
}

template <auto K> void fiber_entry(void *arg) {
  fiber *f = static_cast<fiber *>(arg);
  static_cast<typename sig<decltype(K)>::pack *>(f->blk->pack)->template call<K>();
  fiber_exit(f);
}

/* Fiber mode: each thread a fiber (hk_fiber.h), its record the lent
 * w->fibers[i], its stack the lent stack i: [stacks + i * (stack_bytes +
 * page), + stack_bytes), its guard page below it. */
template <auto K>
__attribute__((noinline)) void fiber_blocks(const t4a_hk_launch *l, uint64_t first, uint64_t count,
                                            const t4a_hk_worker *w) {
  typename sig<decltype(K)>::pack p;
  p.load(l->args);
  tls_state &t = ctx();
  const uint32_t bx = l->block.x, by = l->block.y, gx = l->grid.x, gy = l->grid.y;
  const uint32_t n = bx * by * l->block.z;
  const bool records = w->fibers && reinterpret_cast<__UINTPTR_TYPE__>(w->fibers) % 64 == 0;
  if (!w->stacks || !records || w->stack_count < n)
    lent_too_little("fiber stacks and records", w->stacks && records ? w->stack_count : 0, n);
  if (w->stack_bytes < STACK_TOP_RESERVE + 4096)
    lent_too_little("bytes of fiber stack", w->stack_bytes, STACK_TOP_RESERVE + 4096);
  block b;
  b.fibers = static_cast<fiber *>(w->fibers);
  b.stacks = static_cast<char *>(w->stacks);
  b.stack_bytes = w->stack_bytes;
  b.stride = w->stack_bytes + (size_t)getpagesize();
  b.n = n;
  b.pack = &p;
  b.entry = &fiber_entry<K>;
  b.gen = 0;
  uint3 bid{(uint32_t)(first % gx), (uint32_t)(first / gx % gy), (uint32_t)(first / gx / gy)};
  for (uint64_t blk = 0; blk < count; ++blk, next_block(bid, gx, gy)) {
    if (stopped(l))
      break;
    t.bid = bid;
    for (uint32_t k = 0; k * 32 < n; ++k) {
      uint32_t lanes = n - k * 32 < 32 ? n - k * 32 : 32;
      b.warps[k] = warp{lanes == 32 ? ~0u : (1u << lanes) - 1, 0, 0, 0};
    }
    fiber *prev = fiber_at(&b, n - 1);
    uint32_t x = 0, y = 0, z = 0;
    for (uint32_t i = 0; i < n; ++i) {
      fiber *f = fiber_at(&b, i);
      f->blk = &b;
      f->tid = uint3{x, y, z};
      f->index = i;
      f->lane = i & 31;
      f->state = F_READY;
      f->mask = 0;
      f->prev = prev;
      prev->next = f;
      prev = f;
      fiber_frame(f, stack_top(&b, i), b.entry);
      if (++x == bx) {
        x = 0;
        if (++y == by)
          y = 0, ++z;
      }
    }
    b.live = n;
    b.arrived = 0;
    b.count[0] = b.count[1] = b.arrivals[0] = b.arrivals[1] = 0;
    fiber *f0 = fiber_at(&b, 0);
    t.blk = &b;
    t.tid = f0->tid;
    t.self = f0;
    f0->state = F_RUN;
    t4a__hk_swap(&b.main, &f0->c);
    t.blk = nullptr;
    t.self = nullptr;
  }
}

template <auto K, uint32_t F, const char *N>
int run(const t4a_hk_launch *l, uint64_t first, uint64_t count, const t4a_hk_worker *w,
        t4a_hk_fault *fault) {
  void *jump[T4A_HK_JUMP_WORDS];
  {
    tls_state &t = ctx();
    t.bdim = uint3{l->block.x, l->block.y, l->block.z};
    t.gdim = uint3{l->grid.x, l->grid.y, l->grid.z};
    t.dyn = static_cast<char *>(w->shared);
    t.fault = fault;
    t.kernel = N;
    t.blk = nullptr;
    t.self = nullptr;
  }
  if (t4a__hk_setjmp(jump)) {
    tls_state &t = ctx();
    t.jump = nullptr;
    t.blk = nullptr;
    t.self = nullptr;
    return 1;
  }
  ctx().jump = jump;
  if (l->dynamic_shared > w->shared_bytes || (l->dynamic_shared && !w->shared))
    lent_too_little("bytes of dynamic shared memory", w->shared ? w->shared_bytes : 0,
                    l->dynamic_shared);
  if (F & T4A_HK_KERNEL_FIBERS)
    fiber_blocks<K>(l, first, count, w);
  else
    loop_blocks<K>(l, first, count);
  ctx().jump = nullptr;
  return 0;
}
} // namespace t4a__hk

/* The translator's registration: one entry per kernel. */
#define T4A_HK_KERNEL(fn, name, flags, max_threads)                                                \
  {                                                                                                \
    name, t4a__hk::sig<decltype(&fn)>::count, t4a__hk::sig<decltype(&fn)>::sizes,                  \
        t4a__hk::sig<decltype(&fn)>::aligns, (flags), (t4a__hk::uint32_t)(max_threads),            \
        &t4a__hk::run<&fn, (flags), name>                                                          \
  }
