/* plugin-host/check.c -- checked mode (T4A_HOST_CHECK=1, kernel.h): the
 * SIGSEGV/SIGBUS handler that turns a kernel's access to a guard page or
 * to unmapped memory into its fault, the per-thread signal stacks, and the
 * watch list of guarded buffers whose canaries are checked after each
 * checked launch (docs/design.md, "Kernels on the CPU", checked mode).
 *
 * The handler is installed once, at the first checked runtime_create, and
 * put back to the previous disposition at the plugin's unload. It acts
 * only on a thread inside a checked launch's blocks (a thread-local set by
 * pool.c around the run calls): there it calls the module's fault_here,
 * which records the block and thread and leaves the kernel by longjmp.
 * Anywhere else the fault is the process's own: it goes to the previous
 * handler, or, when that was the default, the default disposition is put
 * back and the faulting instruction runs again into it (a core dump, as
 * without t4a). SA_NODEFER because fault_here's longjmp restores no signal
 * mask; SA_ONSTACK on a stack of each thread's own, so that a fiber's
 * stack overflow (its guard page) is caught too. The message is formatted
 * by hand: only async-signal-safe work happens in the handler. */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "plugin-host/cxx.h"
#include "plugin-host/host.h"

#define ALT_BYTES (64u << 10)

static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER;
static t4a__chunk *watched; /* guarded buffers of every checked runtime (wlock) */
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static bool installed;
static struct sigaction prev_segv, prev_bus;
static __thread void (*running)(int32_t kind, const char *message);

/* Read at each call (every compile asks), without a system call. */
bool t4a__hcheck_env(void) {
  const char *v = t4a__host_getenv("T4A_HOST_CHECK");
  return v && strcmp(v, "1") == 0;
}

/* "SIGSEGV at 0x...": by hand (snprintf is not async-signal-safe). */
static void describe(char *m, size_t n, int sig, const void *addr) {
  const char *head = sig == SIGBUS ? "SIGBUS at address 0x" : "SIGSEGV at address 0x";
  size_t at = strlen(head);
  memcpy(m, head, at);
  uintptr_t a = (uintptr_t)addr;
  int digits = 1;
  for (uintptr_t x = a >> 4; x; x >>= 4)
    digits++;
  for (int i = digits - 1; i >= 0 && at + 1 < n; i--)
    m[at++] = "0123456789abcdef"[(a >> (4 * i)) & 0xf];
  m[at] = 0;
}

static void on_fault(int sig, siginfo_t *si, void *uc) {
  void (*here)(int32_t, const char *) = running;
  if (here) {
    char m[96];
    describe(m, sizeof m, sig, si->si_addr);
    here(T4A_HK_FAULT_MEMORY, m); /* leaves the kernel; returns when not inside a run call */
  }
  const struct sigaction *p = sig == SIGBUS ? &prev_bus : &prev_segv;
  if ((p->sa_flags & SA_SIGINFO) && p->sa_sigaction) {
    p->sa_sigaction(sig, si, uc);
    return;
  }
  if (!(p->sa_flags & SA_SIGINFO) && p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
    p->sa_handler(sig);
    return;
  }
  sigaction(sig, p, NULL); /* the process's own crash: as if t4a were not there */
  if (si->si_code <= 0)    /* sent (kill), not raised by an access: deliver it again */
    raise(sig);
}

static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, &prev_segv) != 0)
    return;
  if (sigaction(SIGBUS, &sa, &prev_bus) != 0) {
    sigaction(SIGSEGV, &prev_segv, NULL);
    return;
  }
  installed = true;
}

bool t4a__hcheck_install(void) {
  pthread_once(&install_once, install);
  return installed;
}

void t4a__hcheck_unload(void) {
  if (!installed)
    return;
  static const int sigs[] = {SIGSEGV, SIGBUS};
  for (int i = 0; i < 2; i++) {
    struct sigaction now;
    /* put back only if ours is still the handler (a later one chains to ours) */
    if (sigaction(sigs[i], NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
        now.sa_sigaction == on_fault)
      sigaction(sigs[i], i ? &prev_bus : &prev_segv, NULL);
  }
}

void t4a__hcheck_enter(void **alt, void (*fault_here)(int32_t, const char *)) {
  if (!*alt) {
    void *p = mmap(NULL, ALT_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      stack_t ss = {.ss_sp = p, .ss_size = ALT_BYTES, .ss_flags = 0};
      if (sigaltstack(&ss, NULL) == 0)
        *alt = p;
      else
        munmap(p, ALT_BYTES); /* the handler runs on the faulting stack */
    }
  }
  running = fault_here;
}

void t4a__hcheck_leave(void) { running = NULL; }

void t4a__hcheck_free_alt(void *alt) {
  if (alt)
    munmap(alt, ALT_BYTES);
}

/* The canary byte at address p: position-dependent, so a kernel's store of
 * a constant is not mistaken for it. */
static inline unsigned char canary(const char *p) {
  return (unsigned char)(0xa5u ^ ((uintptr_t)p * 0x9du >> 3));
}

void t4a__hcheck_fill(char *from, char *to) {
  for (char *p = from; p < to; p++)
    *p = (char)canary(p);
}

void t4a__hcheck_watch(t4a__chunk *c) {
  pthread_mutex_lock(&wlock);
  c->wprev = NULL;
  c->wnext = watched;
  if (watched)
    watched->wprev = c;
  watched = c;
  pthread_mutex_unlock(&wlock);
}

void t4a__hcheck_unwatch(t4a__chunk *c) {
  pthread_mutex_lock(&wlock);
  if (c->wprev)
    c->wprev->wnext = c->wnext;
  else
    watched = c->wnext;
  if (c->wnext)
    c->wnext->wprev = c->wprev;
  pthread_mutex_unlock(&wlock);
}

/* The first byte of [from, to) that is not its canary, else NULL. */
static const char *broken(const char *from, const char *to) {
  for (const char *p = from; p < to; p++)
    if ((unsigned char)*p != canary(p))
      return p;
  return NULL;
}

bool t4a__hcheck_canaries(char *message, size_t n) {
  bool ok = true;
  pthread_mutex_lock(&wlock);
  for (const t4a__chunk *c = watched; c && ok; c = c->wnext) {
    const char *lo = c->base + c->page, *hi = c->base + c->size - c->page; /* the data pages */
    const char *end = c->data + c->bytes, *p = broken(end, hi), *q = p ? p : broken(lo, c->data);
    if (q) {
      ok = false;
      snprintf(message, n,
               "a write %s the %llu-byte buffer at %p (its byte at offset %lld changed; in the "
               "slack no guard page covers, found after the kernel ran, so the block and thread "
               "are not known)",
               p ? "past the end of" : "before the start of", (unsigned long long)c->bytes,
               (const void *)c->data, (long long)(q - c->data));
    }
  }
  pthread_mutex_unlock(&wlock);
  return ok;
}
