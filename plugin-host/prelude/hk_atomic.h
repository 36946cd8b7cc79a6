/* hk_atomic.h (part of host_kernel.h) -- CUDA's atomic functions, as real
 * atomic read-modify-writes: the blocks of a grid run on many OS threads
 * at once. Relaxed ordering, like CUDA's (fences are __threadfence*).
 * Float and double add, min and max are compare-and-swap loops. The
 * _block and _system variants are the same functions. */

namespace t4a__hk {
template <class T, class F> inline T atomic_cas_loop(T *a, F f) {
  T old = __atomic_load_n(a, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(a, &old, f(old), true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
/* Floating-point: the bits are compared and swapped, as on CUDA. */
template <class F, class U, class Op> inline F atomic_float(F *a, Op op) {
  U *p = reinterpret_cast<U *>(a);
  U old = __atomic_load_n(p, __ATOMIC_RELAXED), nw;
  F fo;
  do {
    __builtin_memcpy(&fo, &old, sizeof fo);
    F fn = op(fo);
    __builtin_memcpy(&nw, &fn, sizeof nw);
  } while (!__atomic_compare_exchange_n(p, &old, nw, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return fo;
}
} // namespace t4a__hk

#define T4A_HK_ATOMIC_INT(T)                                                                       \
  inline T atomicAdd(T *a, T v) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }             \
  inline T atomicExch(T *a, T v) { return __atomic_exchange_n(a, v, __ATOMIC_RELAXED); }           \
  inline T atomicMin(T *a, T v) {                                                                  \
    return t4a__hk::atomic_cas_loop(a, [v](T o) { return v < o ? v : o; });                        \
  }                                                                                                \
  inline T atomicMax(T *a, T v) {                                                                  \
    return t4a__hk::atomic_cas_loop(a, [v](T o) { return v > o ? v : o; });                        \
  }                                                                                                \
  inline T atomicAnd(T *a, T v) { return __atomic_fetch_and(a, v, __ATOMIC_RELAXED); }             \
  inline T atomicOr(T *a, T v) { return __atomic_fetch_or(a, v, __ATOMIC_RELAXED); }               \
  inline T atomicXor(T *a, T v) { return __atomic_fetch_xor(a, v, __ATOMIC_RELAXED); }             \
  inline T atomicCAS(T *a, T compare, T v) {                                                       \
    __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);        \
    return compare;                                                                                \
  }
T4A_HK_ATOMIC_INT(int)
T4A_HK_ATOMIC_INT(unsigned int)
T4A_HK_ATOMIC_INT(unsigned long long)
T4A_HK_ATOMIC_INT(long long)
#undef T4A_HK_ATOMIC_INT

inline int atomicSub(int *a, int v) { return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED); }
inline unsigned int atomicSub(unsigned int *a, unsigned int v) {
  return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED);
}
inline unsigned long long atomicSub(unsigned long long *a, unsigned long long v) {
  return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED);
}
/* CUDA's wrapping counters: inc stores (old >= v) ? 0 : old + 1, dec stores
 * (old == 0 || old > v) ? v : old - 1. */
inline unsigned int atomicInc(unsigned int *a, unsigned int v) {
  return t4a__hk::atomic_cas_loop(a, [v](unsigned int o) { return o >= v ? 0u : o + 1u; });
}
inline unsigned int atomicDec(unsigned int *a, unsigned int v) {
  return t4a__hk::atomic_cas_loop(a,
                                  [v](unsigned int o) { return (o == 0 || o > v) ? v : o - 1u; });
}
inline unsigned short atomicCAS(unsigned short *a, unsigned short compare, unsigned short v) {
  __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return compare;
}

inline float atomicAdd(float *a, float v) {
  return t4a__hk::atomic_float<float, t4a__hk::uint32_t>(a, [v](float o) { return o + v; });
}
inline double atomicAdd(double *a, double v) {
  return t4a__hk::atomic_float<double, t4a__hk::uint64_t>(a, [v](double o) { return o + v; });
}
inline float atomicExch(float *a, float v) {
  return t4a__hk::atomic_float<float, t4a__hk::uint32_t>(a, [v](float) { return v; });
}
inline double atomicExch(double *a, double v) {
  return t4a__hk::atomic_float<double, t4a__hk::uint64_t>(a, [v](double) { return v; });
}
inline float atomicSub(float *a, float v) {
  return t4a__hk::atomic_float<float, t4a__hk::uint32_t>(a, [v](float o) { return o - v; });
}
inline double atomicSub(double *a, double v) {
  return t4a__hk::atomic_float<double, t4a__hk::uint64_t>(a, [v](double o) { return o - v; });
}
/* Beyond CUDA's set (not every CUDA version has them): float and double
 * sub, min and max (a NaN operand: fminf/fmaxf's rule, the other one is
 * kept). */
inline float atomicMin(float *a, float v) {
  return t4a__hk::atomic_float<float, t4a__hk::uint32_t>(
      a, [v](float o) { return __builtin_fminf(o, v); });
}
inline float atomicMax(float *a, float v) {
  return t4a__hk::atomic_float<float, t4a__hk::uint32_t>(
      a, [v](float o) { return __builtin_fmaxf(o, v); });
}
inline double atomicMin(double *a, double v) {
  return t4a__hk::atomic_float<double, t4a__hk::uint64_t>(
      a, [v](double o) { return __builtin_fmin(o, v); });
}
inline double atomicMax(double *a, double v) {
  return t4a__hk::atomic_float<double, t4a__hk::uint64_t>(
      a, [v](double o) { return __builtin_fmax(o, v); });
}

/* The scoped variants (sm_60+): the same atomics. */
#define T4A_HK_SCOPED(name)                                                                        \
  template <class... A> inline auto name##_block(A... a) { return name(a...); }                    \
  template <class... A> inline auto name##_system(A... a) { return name(a...); }
T4A_HK_SCOPED(atomicAdd)
T4A_HK_SCOPED(atomicSub)
T4A_HK_SCOPED(atomicExch)
T4A_HK_SCOPED(atomicMin)
T4A_HK_SCOPED(atomicMax)
T4A_HK_SCOPED(atomicAnd)
T4A_HK_SCOPED(atomicOr)
T4A_HK_SCOPED(atomicXor)
T4A_HK_SCOPED(atomicInc)
T4A_HK_SCOPED(atomicDec)
T4A_HK_SCOPED(atomicCAS)
#undef T4A_HK_SCOPED
