/* hk_fiber.h (part of host_kernel.h) -- the threads of a block as fibers,
 * for kernels that synchronise (the translator decides, per kernel).
 *
 * Each CUDA thread of the block is a fiber on one of the stacks the worker
 * lends (t4a_hk_worker.stacks); all of a block's fibers run on the worker's
 * OS thread, one at a time, and switch only where CUDA threads wait: at a
 * barrier, a warp operation, __activemask. No switch makes a system call
 * (swapcontext does: it saves the signal mask).
 *
 * A suspended context is a `context`: its stack pointer and the address to
 * jump to, with %rdi (x0) pointing at the context, to resume it. Two kinds:
 *  - t4a__hk_swap (below; warp operations, a thread's end, the worker's own
 *    context) pushes the callee-saved registers and saves t4a__hk_resume
 *    as the address: resuming pops them and returns to t4a__hk_swap's
 *    caller;
 *  - a barrier (__syncthreads, x86-64) suspends inline, in the kernel's own
 *    code (jump() below): it saves the callee-saved registers and the
 *    address of the code after it in the context, tells the compiler the
 *    caller-saved ones are lost, and jumps. No call and no return: the
 *    resumed thread continues at its own barrier and reloads its registers
 *    from its context. A switch through a call would resume the next
 *    thread by returning to where *it* called from while the CPU's return
 *    predictor expects the caller that just suspended; when a kernel's
 *    consecutive barriers are different call sites (two __syncthreads in a
 *    loop body, or one loop the compiler unrolled), every switch
 *    mispredicted its return (on the H200 host's Xeon 25-40 ns per thread
 *    and barrier against 11-17 with one call site; on this AMD 19-23
 *    against 7-10).
 *
 * Where a switch's memory is: the fibers' records are one array the worker
 * lends (t4a_hk_worker.fibers), a context in each record's first cache line,
 * so a switch reads and writes records, which neighbour each other, and not
 * the fibers' stacks: the integers and pointers a kernel keeps live across
 * a barrier stay in the callee-saved registers the context holds (the
 * compiler spills to the stack what does not fit in them, and every
 * floating-point value: x86-64 has no callee-saved vector registers).
 * Each stack is pages of its own (with its guard page), so a switch that
 * touched the next fiber's stack took a TLB entry per thread: a 256-thread
 * block's round outgrew the Xeon's first-level TLB and every switch waited
 * on the second (8.7-11.5 ns per thread and barrier there with records at
 * the stacks' tops, 4-7 with these;
 * bench/results/2026-12-02-h200-barrier-probe.md).
 *
 * Scheduling: the live fibers form a ring in thread order. A fiber that
 * waits switches to the next fiber in the ring that can run (one that has
 * not started, whose barrier was released, or whose warp operation
 * completed). The last thread to reach a barrier releases it and runs on,
 * so in a kernel whose threads all reach the same barriers every switch
 * finds the next fiber ready: one switch per thread and barrier. A thread
 * that returns leaves the ring; a barrier counts the threads still running
 * (as on CUDA). When no fiber can run while some still wait, the block
 * would hang on a GPU: the run ends with T4A_HK_FAULT_BARRIER instead.
 *
 * The floating-point control state (MXCSR, FPCR) is not switched: kernels
 * do not change it. */

namespace t4a__hk {
/* A suspended context, one cache line; the assembly below uses the offsets. */
struct alignas(64) context {
  void *sp;      /* 0: its stack pointer */
  void *pc;      /* 8: where to jump, %rdi (x0) = this context */
  void *regs[6]; /* 16: an inline switch's %rbx, %rbp, %r12, %r13, %r14, %r15 */
};
static_assert(__builtin_offsetof(context, pc) == 8 && __builtin_offsetof(context, regs) == 16 &&
                  sizeof(context) == 64,
              "the switch's assembly uses these offsets");
} // namespace t4a__hk

extern "C" void t4a__hk_swap(t4a__hk::context *save, t4a__hk::context *to);
extern "C" void t4a__hk_resume(void);
extern "C" void t4a__hk_start(void);

#if defined(__x86_64__)
/* rdi: the context to save this one in; rsi: the context to resume. A
 * fresh fiber's context is a frame (fiber_frame) of r15, r14, r13 (the
 * function), r12 (its argument), rbx, rbp (0) and the return address
 * t4a__hk_start, which calls r13(r12), with t4a__hk_resume to jump to. */
asm(R"(
  .pushsection .text
  .p2align 4
  .globl t4a__hk_swap
  .hidden t4a__hk_swap
  .type t4a__hk_swap, @function
t4a__hk_swap:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, 0(%rdi)
  leaq t4a__hk_resume(%rip), %rax
  movq %rax, 8(%rdi)
  movq %rsi, %rdi
  movq 0(%rdi), %rsp
  jmpq *8(%rdi)
  .size t4a__hk_swap, .-t4a__hk_swap
  .p2align 4
  .globl t4a__hk_resume
  .hidden t4a__hk_resume
  .type t4a__hk_resume, @function
t4a__hk_resume:
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size t4a__hk_resume, .-t4a__hk_resume
  .p2align 4
  .globl t4a__hk_start
  .hidden t4a__hk_start
  .type t4a__hk_start, @function
t4a__hk_start:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size t4a__hk_start, .-t4a__hk_start
  .p2align 4
  .globl t4a__hk_setjmp
  .hidden t4a__hk_setjmp
  .type t4a__hk_setjmp, @function
t4a__hk_setjmp:
  movq %rbx, 0(%rdi)
  movq %rbp, 8(%rdi)
  movq %r12, 16(%rdi)
  movq %r13, 24(%rdi)
  movq %r14, 32(%rdi)
  movq %r15, 40(%rdi)
  leaq 8(%rsp), %rdx
  movq %rdx, 48(%rdi)
  movq (%rsp), %rdx
  movq %rdx, 56(%rdi)
  xorl %eax, %eax
  ret
  .size t4a__hk_setjmp, .-t4a__hk_setjmp
  .p2align 4
  .globl t4a__hk_longjmp
  .hidden t4a__hk_longjmp
  .type t4a__hk_longjmp, @function
t4a__hk_longjmp:
  movq 0(%rdi), %rbx
  movq 8(%rdi), %rbp
  movq 16(%rdi), %r12
  movq 24(%rdi), %r13
  movq 32(%rdi), %r14
  movq 40(%rdi), %r15
  movq 48(%rdi), %rsp
  movl $1, %eax
  jmpq *56(%rdi)
  .size t4a__hk_longjmp, .-t4a__hk_longjmp
  .popsection
)");
/* 7 words below a 16-byte aligned address: popping the six registers and
 * the return address leaves %rsp 16-byte aligned at t4a__hk_start's call,
 * as the ABI wants before a call (an 8-word frame left it 8 off, and
 * everything on a fiber ran on a misaligned stack: glibc's printf of a
 * double, which spills with movaps, crashed). */
#define T4A_HK_FRAME_WORDS 7
#elif defined(__aarch64__)
/* x0: the context to save this one in; x1: the context to resume. The
 * frame: x19-x30 and d8-d15 (176 bytes); a fresh one has x19 = the
 * argument, x20 = the function, x29 = 0, x30 = t4a__hk_start, which calls
 * x20(x19). (No inline switch on aarch64: a barrier calls t4a__hk_swap.) */
asm(R"(
  .pushsection .text
  .p2align 4
  .globl t4a__hk_swap
  .hidden t4a__hk_swap
  .type t4a__hk_swap, %function
t4a__hk_swap:
  sub sp, sp, #176
  stp x19, x20, [sp, #0]
  stp x21, x22, [sp, #16]
  stp x23, x24, [sp, #32]
  stp x25, x26, [sp, #48]
  stp x27, x28, [sp, #64]
  stp x29, x30, [sp, #80]
  stp d8, d9, [sp, #96]
  stp d10, d11, [sp, #112]
  stp d12, d13, [sp, #128]
  stp d14, d15, [sp, #144]
  mov x2, sp
  str x2, [x0]
  adr x3, t4a__hk_resume
  str x3, [x0, #8]
  mov x0, x1
  ldr x2, [x0]
  mov sp, x2
  ldr x3, [x0, #8]
  br x3
  .size t4a__hk_swap, .-t4a__hk_swap
  .p2align 4
  .globl t4a__hk_resume
  .hidden t4a__hk_resume
  .type t4a__hk_resume, %function
t4a__hk_resume:
  ldp x19, x20, [sp, #0]
  ldp x21, x22, [sp, #16]
  ldp x23, x24, [sp, #32]
  ldp x25, x26, [sp, #48]
  ldp x27, x28, [sp, #64]
  ldp x29, x30, [sp, #80]
  ldp d8, d9, [sp, #96]
  ldp d10, d11, [sp, #112]
  ldp d12, d13, [sp, #128]
  ldp d14, d15, [sp, #144]
  add sp, sp, #176
  ret
  .size t4a__hk_resume, .-t4a__hk_resume
  .p2align 4
  .globl t4a__hk_start
  .hidden t4a__hk_start
  .type t4a__hk_start, %function
t4a__hk_start:
  mov x0, x19
  blr x20
  brk #0
  .size t4a__hk_start, .-t4a__hk_start
  .p2align 4
  .globl t4a__hk_setjmp
  .hidden t4a__hk_setjmp
  .type t4a__hk_setjmp, %function
t4a__hk_setjmp:
  stp x19, x20, [x0, #0]
  stp x21, x22, [x0, #16]
  stp x23, x24, [x0, #32]
  stp x25, x26, [x0, #48]
  stp x27, x28, [x0, #64]
  stp x29, x30, [x0, #80]
  stp d8, d9, [x0, #96]
  stp d10, d11, [x0, #112]
  stp d12, d13, [x0, #128]
  stp d14, d15, [x0, #144]
  mov x2, sp
  str x2, [x0, #160]
  mov x0, #0
  ret
  .size t4a__hk_setjmp, .-t4a__hk_setjmp
  .p2align 4
  .globl t4a__hk_longjmp
  .hidden t4a__hk_longjmp
  .type t4a__hk_longjmp, %function
t4a__hk_longjmp:
  ldp x19, x20, [x0, #0]
  ldp x21, x22, [x0, #16]
  ldp x23, x24, [x0, #32]
  ldp x25, x26, [x0, #48]
  ldp x27, x28, [x0, #64]
  ldp x29, x30, [x0, #80]
  ldp d8, d9, [x0, #96]
  ldp d10, d11, [x0, #112]
  ldp d12, d13, [x0, #128]
  ldp d14, d15, [x0, #144]
  ldr x2, [x0, #160]
  mov sp, x2
  mov x0, #1
  ret
  .size t4a__hk_longjmp, .-t4a__hk_longjmp
  .popsection
)");
#define T4A_HK_FRAME_WORDS 22
#endif

namespace t4a__hk {
enum : uint32_t {
  F_READY = 0, /* not started */
  F_RUN,       /* running, or resumed */
  F_BAR,       /* waits at a block barrier (wait_gen) */
  F_WARP,      /* waits in a warp operation (released) */
  F_ACT,       /* waits in __activemask (released) */
  F_DONE       /* returned */
};

struct warp {
  uint32_t exist;   /* lanes that exist (a block's last warp may be partial) */
  uint32_t done;    /* lanes that returned */
  uint32_t pending; /* lanes waiting in a warp operation */
  uint32_t act;     /* lanes waiting in __activemask */
};

/* One CUDA thread: an element of the array the worker lends, its stack
 * elsewhere (fiber_frame). */
struct alignas(64) fiber {
  context c; /* first: a fiber's address is its context's */
  /* The second cache line: what the scheduler reads. */
  fiber *next;
  uint32_t state, wait_gen;
  uint3 tid;
  uint32_t released, index, lane;
  fiber *prev;
  block *blk;
  uint32_t op, mask; /* the warp operation it waits in */
  /* The rest. */
  int32_t arg, width;
  uint64_t val, res;
};
static_assert(__builtin_offsetof(fiber, next) == 64 && __builtin_offsetof(fiber, arg) == 128,
              "a switch's fields fill two cache lines");
static_assert(sizeof(fiber) <= T4A_HK_FIBER_BYTES, "the worker lends enough for a fiber");

struct block {
  context main;  /* the worker's own context */
  fiber *fibers; /* the lent records, one per thread */
  char *stacks;
  size_t stride, stack_bytes;
  uint32_t n, live, arrived, gen;
  int32_t count[2], arrivals[2]; /* __syncthreads_count/_and/_or, by generation parity */
  void *pack;                    /* the kernel's arguments (hk_run.h) */
  void (*entry)(void *);         /* runs the kernel on the fiber given */
  warp warps[32];
};

inline fiber *fiber_at(const block *b, uint32_t i) { return b->fibers + i; }

/* Fiber i's stack starts (i % 64) cache lines below its top: the stacks are
 * a whole number of pages apart, and without the offset every fiber's
 * frames would share their addresses' low 12 bits, so a switch's loads (the
 * next fiber's spills) would wait on the stores just made (the previous
 * one's) through 4K aliasing on Intel cores, and all of them would compete
 * for the same L1 sets. 64 offsets cover all of an L1's 64 sets. */
enum : size_t { FIBER_COLORS = 64, FIBER_COLOR_BYTES = 64 };
enum : size_t { STACK_TOP_RESERVE = FIBER_COLORS * FIBER_COLOR_BYTES };

inline char *stack_top(const block *b, uint32_t i) {
  return b->stacks + i * b->stride + b->stack_bytes - FIBER_COLOR_BYTES -
         (i % FIBER_COLORS) * FIBER_COLOR_BYTES;
}

/* A fresh context for f: switching to it calls b->entry(f) on the stack
 * whose top is `top` (16-byte aligned). */
inline void fiber_frame(fiber *f, char *top, void (*entry)(void *)) {
  void **sp = reinterpret_cast<void **>(top) - T4A_HK_FRAME_WORDS;
  for (int i = 0; i < T4A_HK_FRAME_WORDS; ++i)
    sp[i] = nullptr;
#if defined(__x86_64__)
  sp[2] = reinterpret_cast<void *>(entry);
  sp[3] = f;
  sp[6] = reinterpret_cast<void *>(&t4a__hk_start);
#else
  sp[0] = f;
  sp[1] = reinterpret_cast<void *>(entry);
  sp[11] = reinterpret_cast<void *>(&t4a__hk_start);
#endif
  f->c.sp = sp;
  f->c.pc = reinterpret_cast<void *>(&t4a__hk_resume);
}

/* f runs next: the thread's state names it (threadIdx reads it), and a
 * fiber not started yet is running from now on. */
inline void make_current(tls_state &t, fiber *f) {
  t.tid = f->tid;
  t.self = f;
  f->state = f->state == F_READY ? F_RUN : f->state;
}

/* Before switching to f: the record (both lines) of the fiber after it
 * (the next switch's) is fetched now, so the next switch does not wait for it.
 * Always inlined: GCC finds an out-of-line function of prefetches alone
 * free of side effects and drops its calls. Prefetches never fault. */
__attribute__((always_inline)) inline void warm_after(const fiber *f) {
  const fiber *n = f->next;
  __builtin_prefetch(&n->c, 1);
  __builtin_prefetch(&n->next, 1);
}

/* __activemask's group completes when no other running lane of the warp
 * can run without the group (each waits somewhere or returned). */
__attribute__((noinline)) inline bool act_resolve(block *b, warp *w) {
  uint32_t base = (uint32_t)(w - b->warps) * 32u;
  for (uint32_t p = w->exist & ~w->done & ~w->act; p; p &= p - 1) {
    fiber *f = fiber_at(b, base + (uint32_t)__builtin_ctz(p));
    if (f->state == F_READY || f->state == F_RUN || (f->state == F_BAR && f->wait_gen != b->gen) ||
        ((f->state == F_WARP || f->state == F_ACT) && f->released))
      return false;
  }
  for (uint32_t p = w->act; p; p &= p - 1) {
    fiber *f = fiber_at(b, base + (uint32_t)__builtin_ctz(p));
    f->res = w->act;
    f->released = 1;
  }
  w->act = 0;
  return true;
}

inline bool runnable(block *b, fiber *f) {
  switch (f->state) {
  case F_READY: return true;
  case F_BAR: return f->wait_gen != b->gen;
  case F_WARP: return f->released != 0;
  case F_ACT: return f->released || act_resolve(b, &b->warps[f->index >> 5]);
  default: return false;
  }
}

[[noreturn]] __attribute__((noinline, cold)) inline void deadlock(block *b, const char *what) {
  uint32_t bar = 0, wop = 0, act = 0;
  fiber *f = fiber_at(b, 0);
  for (uint32_t i = 0; i < b->n; ++i) {
    f = fiber_at(b, i);
    bar += f->state == F_BAR, wop += f->state == F_WARP, act += f->state == F_ACT;
  }
  char m[256];
  snprintf(m, sizeof m,
           "%s: the block can make no progress (of its %u running threads, %u wait at "
           "__syncthreads, %u in warp operations, %u in __activemask) in kernel %s",
           what, b->live, bar, wop, act, ctx().kernel);
  leave(T4A_HK_FAULT_BARRIER, m);
}

/* me waits (its state says for what): runs the next fiber that can. */
/* me waits (its state says for what): the next fiber in the ring that can
 * run, made current; the caller switches to it. None: the block would hang
 * on a GPU, and the run ends (`what` names where). */
__attribute__((noinline)) inline fiber *pick_next(tls_state &t, block *b, fiber *me,
                                                  const char *what) {
  fiber *f = me->next;
  for (uint32_t k = 1; k < b->live; ++k, f = f->next)
    if (runnable(b, f)) {
      make_current(t, f);
      warm_after(f);
      return f;
    }
  deadlock(b, what);
}

/* me waits: runs the next fiber that can, through t4a__hk_swap. */
inline void wait(tls_state &t, block *b, fiber *me, const char *what) {
  fiber *f = pick_next(t, b, me, what);
  t4a__hk_swap(&me->c, &f->c);
  me->state = F_RUN;
}

/* Releases the barrier of generation gen (all running threads arrived). */
inline void bar_release(block *b) {
  uint32_t g = b->gen;
  b->arrived = 0;
  b->count[(g + 1) & 1] = 0;
  b->arrivals[(g + 1) & 1] = 0;
  b->gen = g + 1;
}

[[noreturn]] __attribute__((noinline, cold)) inline void not_fibers(const char *what) {
  char m[256];
  snprintf(m, sizeof m,
           "%s in kernel %s, whose threads run as a loop (the translator found no "
           "synchronisation in it); call it from the kernel's source, not through a pointer",
           what, ctx().kernel);
  leave(T4A_HK_FAULT_BARRIER, m);
}

/* Suspends `me` here and resumes `to`, without a call or a return on
 * x86-64: the callee-saved registers and where to continue go into me's
 * context, the caller-saved ones are declared lost (the compiler keeps
 * what is live across the barrier in the callee-saved ones, and spills the
 * rest to me's frame), and the jump sets %rdi to the resumed context, whose
 * registers the code after the jump reloads (a context t4a__hk_swap saved
 * restores its own). Nothing is written below %rsp (the red zone). The x87
 * registers are declared lost too (a long double is not CUDA, but the next
 * fiber's code must find the x87 stack empty). */
__attribute__((always_inline)) inline void jump(fiber *me, fiber *to) {
#if defined(__x86_64__)
  context *save = &me->c, *go = &to->c;
  asm volatile("movq %%rbx, 16(%%rsi)\n\t"
               "movq %%rbp, 24(%%rsi)\n\t"
               "movq %%r12, 32(%%rsi)\n\t"
               "movq %%r13, 40(%%rsi)\n\t"
               "movq %%r14, 48(%%rsi)\n\t"
               "movq %%r15, 56(%%rsi)\n\t"
               "leaq 1f(%%rip), %%rax\n\t"
               "movq %%rax, 8(%%rsi)\n\t"
               "movq %%rsp, 0(%%rsi)\n\t"
               "movq 0(%%rdi), %%rsp\n\t"
               "jmpq *8(%%rdi)\n"
               "1:\n\t"
               "movq 16(%%rdi), %%rbx\n\t"
               "movq 24(%%rdi), %%rbp\n\t"
               "movq 32(%%rdi), %%r12\n\t"
               "movq 40(%%rdi), %%r13\n\t"
               "movq 48(%%rdi), %%r14\n\t"
               "movq 56(%%rdi), %%r15"
               : "+D"(go), "+S"(save)
               :
               : "rax", "rcx", "rdx", "r8", "r9", "r10", "r11", "xmm0", "xmm1", "xmm2", "xmm3",
                 "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",
                 "xmm14", "xmm15",
#if defined(__AVX512F__)
                 "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24",
                 "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k1", "k2", "k3",
                 "k4", "k5", "k6", "k7",
#endif
                 "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)", "st(6)", "st(7)", "memory",
                 "cc");
#else
  t4a__hk_swap(&me->c, &to->c);
#endif
}

inline void bar_wait(tls_state &t, block *b, fiber *me) {
  me->state = F_BAR;
  me->wait_gen = b->gen;
  wait(t, b, me, "__syncthreads");
}

/* A fiber returned from the kernel: leaves the ring, may complete the
 * barrier the others wait at, and runs the next fiber (or, the last one,
 * returns to the worker's context). Never returns. */
[[noreturn]] __attribute__((noinline)) inline void fiber_exit(fiber *me) {
  block *b = me->blk;
  warp *w = &b->warps[me->index >> 5];
  uint32_t bit = 1u << me->lane;
  me->state = F_DONE;
  w->done |= bit;
  if (w->pending)
    for (uint32_t p = w->pending, l; p; p &= p - 1) {
      l = (uint32_t)__builtin_ctz(p);
      fiber *o = fiber_at(b, (me->index & ~31u) + l);
      if (o->mask & bit) {
        char m[256];
        snprintf(m, sizeof m,
                 "lane %u of warp %u returned while lane %u waits for it in a warp operation "
                 "(mask 0x%08x) in kernel %s",
                 me->lane, me->index >> 5, l, o->mask, ctx().kernel);
        leave(T4A_HK_FAULT_BARRIER, m);
      }
    }
  --b->live;
  me->prev->next = me->next;
  me->next->prev = me->prev;
  if (b->arrived && b->arrived == b->live)
    bar_release(b);
  context dead;
  if (!b->live)
    t4a__hk_swap(&dead, &b->main);
  fiber *f = me->next;
  for (uint32_t k = 0; k < b->live; ++k, f = f->next)
    if (runnable(b, f)) {
      make_current(ctx(), f);
      t4a__hk_swap(&dead, &f->c);
    }
  deadlock(b, "a thread returned");
}
} // namespace t4a__hk

/* __syncthreads and its reductions. The last thread to arrive releases the
 * barrier and goes on; the others wait. __syncthreads is inlined into the
 * kernel and switches there (jump): see the top of this file for why. */
__attribute__((always_inline)) inline void __syncthreads() {
  t4a__hk::tls_state &t = t4a__hk::ctx();
  t4a__hk::block *b = t.blk;
  if (__builtin_expect(!b, 0))
    t4a__hk::not_fibers("__syncthreads");
  if (++b->arrived == b->live) {
    t4a__hk::bar_release(b);
    return;
  }
  t4a__hk::fiber *me = t.self, *to = me->next;
  me->state = t4a__hk::F_BAR;
  me->wait_gen = b->gen;
  /* The common case inline: the next thread waits at the barrier before
   * this one, released (every thread reaches the same barriers). */
  if (__builtin_expect(to->state == t4a__hk::F_BAR && to->wait_gen != b->gen, 1)) {
    t4a__hk::make_current(t, to);
    t4a__hk::warm_after(to);
  } else {
    to = t4a__hk::pick_next(t, b, me, "__syncthreads");
  }
  t4a__hk::jump(me, to);
  me->state = t4a__hk::F_RUN;
}

namespace t4a__hk {
/* Returns {number of arrivals with pred != 0, number of arrivals}. */
__attribute__((noinline)) inline uint64_t bar_reduce(int pred, const char *what) {
  tls_state &t = ctx();
  block *b = t.blk;
  if (__builtin_expect(!b, 0))
    not_fibers(what);
  uint32_t g = b->gen & 1;
  b->count[g] += pred != 0;
  b->arrivals[g] += 1;
  if (++b->arrived == b->live) {
    uint64_t r = ((uint64_t)(uint32_t)b->count[g] << 32) | (uint32_t)b->arrivals[g];
    bar_release(b);
    return r;
  }
  bar_wait(t, b, t.self);
  return ((uint64_t)(uint32_t)b->count[g] << 32) | (uint32_t)b->arrivals[g];
}
} // namespace t4a__hk

inline int __syncthreads_count(int pred) {
  return (int)(t4a__hk::bar_reduce(pred, "__syncthreads_count") >> 32);
}
inline int __syncthreads_and(int pred) {
  t4a__hk::uint64_t r = t4a__hk::bar_reduce(pred, "__syncthreads_and");
  return (r >> 32) == (r & 0xffffffffu);
}
inline int __syncthreads_or(int pred) {
  return (t4a__hk::bar_reduce(pred, "__syncthreads_or") >> 32) != 0;
}

/* Fences: the blocks of a grid run on many OS threads at once. */
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
