/* hk_core.h (part of host_kernel.h) -- the per-thread state kernels read
 * (threadIdx, blockIdx, blockDim, gridDim), leaving a kernel on a fault,
 * printf, assert, __trap and dynamic shared memory. */

/* The C library functions the prelude uses, declared here instead of
 * including their headers (light, and no names in the consumer's way);
 * default visibility: they are the C library's, not hidden ones of the
 * module. */
#define T4A_HK_LIBC extern "C" __attribute__((visibility("default")))
T4A_HK_LIBC int printf(const char *, ...);

/* Leaving a kernel at a fault (hk_fiber.h has the assembly): setjmp saves
 * the callee-saved registers, the stack pointer and the return address in
 * buf (T4A_HK_JUMP_WORDS words) and returns 0; longjmp resumes there, the
 * setjmp then returning 1, from any stack of the thread (a fiber's too).
 * No signal mask, no system call; hand-written because clang has no
 * __builtin_setjmp on aarch64, and glibc's longjmp walks the thread's
 * cancellation handlers by stack address, which fibers' stacks confuse. */
#define T4A_HK_JUMP_WORDS 24
extern "C" __attribute__((returns_twice)) int t4a__hk_setjmp(void **buf);
extern "C" [[noreturn]] void t4a__hk_longjmp(void **buf);

namespace t4a__hk {
T4A_HK_LIBC int snprintf(char *, size_t, const char *, ...);
T4A_HK_LIBC int getpagesize(void);

struct fiber;
struct block;

/* One per OS thread and module: what the run call on this thread is doing.
 * In loop mode run sets tid for each thread of the block; in fiber mode the
 * scheduler sets tid and self at each switch. */
struct tls_state {
  uint3 tid, bid, bdim, gdim;
  char *dyn;           /* the block's dynamic shared memory */
  block *blk;          /* fiber mode: the block's scheduler; NULL in loop mode */
  fiber *self;         /* fiber mode: the running fiber */
  void **jump;         /* the run call's t4a__hk_setjmp buffer; NULL outside run */
  t4a_hk_fault *fault; /* where run reports a fault */
  const char *kernel;  /* the kernel's name, for messages */
};
} // namespace t4a__hk

static thread_local t4a__hk::tls_state t4a__hk_tls;

namespace t4a__hk {
/* The thread's state. Declared const (its address is the same at every call
 * on a thread, like glibc's __errno_location) and kept out of line, so that
 * the compiler computes the TLS address once per function and hoists it out
 * of the thread loop: a TLS access of a dlopen()ed module is a call to
 * __tls_get_addr, which it would otherwise repeat for each thread. Fibers
 * never leave their OS thread, so the address holds across switches. */
__attribute__((const, noinline)) inline tls_state &ctx() { return t4a__hk_tls; }
} // namespace t4a__hk

/* The built-in variables: read-only views of the thread's state. */
/* threadIdx is a call of t4a__tIdx: in a loop-mode kernel's body the
 * thread loop (hk_run.h) declares a local t4a__tIdx holding the loop's
 * index, so the body reads a register, not memory; elsewhere (fiber mode,
 * __device__ functions) it is this one, the thread's state. */
inline const uint3 &t4a__tIdx() { return t4a__hk::ctx().tid; }
#define threadIdx (t4a__tIdx())
#define blockIdx (static_cast<const uint3 &>(t4a__hk::ctx().bid))
#define blockDim (static_cast<const uint3 &>(t4a__hk::ctx().bdim))
#define gridDim (static_cast<const uint3 &>(t4a__hk::ctx().gdim))

namespace t4a__hk {
/* Records the first fault of the run call on this thread, at the current
 * block and thread, and leaves the kernel: back to run's setjmp. Never
 * returns. vsnprintf-free: the callers format. */
[[noreturn]] __attribute__((noinline, cold)) inline void leave_at(int32_t kind, const char *msg,
                                                                  uint3 thread) {
  tls_state &t = ctx();
  if (!t.jump) /* not inside a run call: nowhere to report to */
    __builtin_trap();
  t4a_hk_fault *f = t.fault;
  f->kind = kind;
  f->block = t4a_hk_dim3{t.bid.x, t.bid.y, t.bid.z};
  f->thread = t4a_hk_dim3{thread.x, thread.y, thread.z};
  size_t i = 0;
  for (; msg[i] && i + 1 < sizeof f->message; ++i)
    f->message[i] = msg[i];
  f->message[i] = 0;
  t4a__hk_longjmp(t.jump);
}

/* At the thread the state names (fiber mode; loop mode when the loop
 * stores each thread's index, see hk_run.h). */
[[noreturn]] inline void leave(int32_t kind, const char *msg) { leave_at(kind, msg, ctx().tid); }

/* assert and __trap pass the thread's index from where they are written
 * (in a loop-mode kernel's body: the loop's own). */
[[noreturn]] __attribute__((noinline, cold)) inline void
assert_fail(const char *expr, const char *file, int line, uint3 thread) {
  char m[256];
  snprintf(m, sizeof m, "assert(%s) failed at %s:%d", expr, file, line);
  leave_at(T4A_HK_FAULT_ASSERT, m, thread);
}

[[noreturn]] __attribute__((noinline, cold)) inline void trap(const char *file, int line,
                                                              uint3 thread) {
  char m[256];
  snprintf(m, sizeof m, "__trap() called at %s:%d", file, line);
  leave_at(T4A_HK_FAULT_TRAP, m, thread);
}

/* t4a_hk_module.fault_here: for the plugin's signal handler, on a thread
 * inside run. Returns only when this thread is not inside a run call of
 * this module. The thread it reports: the running fiber, or in loop mode
 * the current thread when the unit was compiled with -DT4A_HK_CHECKED
 * (every thread loop then stores its index; without it, only those of
 * kernels that call functions reading threadIdx do, and the others report
 * thread 0). It leaves by t4a__hk_longjmp, which restores no signal
 * mask: the handler is installed with SA_NODEFER (or unblocks its signal
 * first), so that the next fault on this thread is delivered too. */
inline void fault_here(int32_t kind, const char *message) {
  if (!t4a__hk::ctx().jump)
    return;
  leave(kind, message ? message : "fault");
}

/* An extern __shared__ array: the translator turns
 *   extern __shared__ __align__(16) float s[];
 * into `const t4a__hk::dynshared<float> s{};`, which converts to the
 * block's dynamic shared memory wherever a float * is wanted (s[i], s + k,
 * (char *)s). All of them alias the same area, as on CUDA; it is 256-byte
 * aligned. */
template <class T> struct dynshared {
  operator T *() const { return reinterpret_cast<T *>(t4a__hk::ctx().dyn); }
  template <class U> explicit operator U *() const {
    return reinterpret_cast<U *>(t4a__hk::ctx().dyn);
  }
};
} // namespace t4a__hk

#define __trap() t4a__hk::trap(__FILE__, __LINE__, threadIdx)
#undef assert
#define assert(e) ((e) ? (void)0 : t4a__hk::assert_fail(#e, __FILE__, __LINE__, threadIdx))
