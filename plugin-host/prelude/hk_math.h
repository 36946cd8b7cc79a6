/* hk_math.h (part of host_kernel.h) -- the device math functions (the C
 * library's, with CUDA's float overloads of the double names), CUDA's fast
 * intrinsics (__expf... computed as the accurate function: within CUDA's
 * documented error, never worse), min/max and the integer intrinsics. */

#define T4A_HK_MATH1(fn)                                                                           \
  T4A_HK_LIBC float fn##f(float) noexcept;                                                         \
  T4A_HK_LIBC double fn(double) noexcept;                                                          \
  inline float fn(float x) { return fn##f(x); }
#define T4A_HK_MATH2(fn)                                                                           \
  T4A_HK_LIBC float fn##f(float, float) noexcept;                                                  \
  T4A_HK_LIBC double fn(double, double) noexcept;                                                  \
  inline float fn(float x, float y) { return fn##f(x, y); }
T4A_HK_MATH1(sqrt)
T4A_HK_MATH1(cbrt)
T4A_HK_MATH1(exp)
T4A_HK_MATH1(exp2)
T4A_HK_MATH1(exp10)
T4A_HK_MATH1(expm1)
T4A_HK_MATH1(log)
T4A_HK_MATH1(log2)
T4A_HK_MATH1(log10)
T4A_HK_MATH1(log1p)
T4A_HK_MATH1(sin)
T4A_HK_MATH1(cos)
T4A_HK_MATH1(tan)
T4A_HK_MATH1(asin)
T4A_HK_MATH1(acos)
T4A_HK_MATH1(atan)
T4A_HK_MATH1(sinh)
T4A_HK_MATH1(cosh)
T4A_HK_MATH1(tanh)
T4A_HK_MATH1(asinh)
T4A_HK_MATH1(acosh)
T4A_HK_MATH1(atanh)
T4A_HK_MATH1(erf)
T4A_HK_MATH1(erfc)
T4A_HK_MATH1(lgamma)
T4A_HK_MATH1(tgamma)
T4A_HK_MATH1(fabs)
T4A_HK_MATH1(floor)
T4A_HK_MATH1(ceil)
T4A_HK_MATH1(trunc)
T4A_HK_MATH1(round)
T4A_HK_MATH1(rint)
T4A_HK_MATH1(nearbyint)
T4A_HK_MATH1(logb)
T4A_HK_MATH2(pow)
T4A_HK_MATH2(fmin)
T4A_HK_MATH2(fmax)
T4A_HK_MATH2(fmod)
T4A_HK_MATH2(atan2)
T4A_HK_MATH2(hypot)
T4A_HK_MATH2(copysign)
T4A_HK_MATH2(remainder)
T4A_HK_MATH2(fdim)
T4A_HK_MATH2(nextafter)
#undef T4A_HK_MATH1
#undef T4A_HK_MATH2
T4A_HK_LIBC float fmaf(float, float, float) noexcept;
T4A_HK_LIBC double fma(double, double, double) noexcept;
inline float fma(float x, float y, float z) { return fmaf(x, y, z); }
T4A_HK_LIBC float ldexpf(float, int) noexcept;
T4A_HK_LIBC double ldexp(double, int) noexcept;
inline float ldexp(float x, int e) { return ldexpf(x, e); }
T4A_HK_LIBC float frexpf(float, int *) noexcept;
T4A_HK_LIBC double frexp(double, int *) noexcept;
T4A_HK_LIBC float modff(float, float *) noexcept;
T4A_HK_LIBC double modf(double, double *) noexcept;
T4A_HK_LIBC float scalbnf(float, int) noexcept;
T4A_HK_LIBC double scalbn(double, int) noexcept;
T4A_HK_LIBC int ilogbf(float) noexcept;
T4A_HK_LIBC int ilogb(double) noexcept;
T4A_HK_LIBC long lroundf(float) noexcept;
T4A_HK_LIBC long lround(double) noexcept;
T4A_HK_LIBC long long llroundf(float) noexcept;
T4A_HK_LIBC long long llround(double) noexcept;
T4A_HK_LIBC long lrintf(float) noexcept;
T4A_HK_LIBC long lrint(double) noexcept;
T4A_HK_LIBC long long llrintf(float) noexcept;
T4A_HK_LIBC long long llrint(double) noexcept;
inline void sincosf(float x, float *s, float *c) { *s = sinf(x), *c = cosf(x); }
inline void sincos(double x, double *s, double *c) { *s = sin(x), *c = cos(x); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / cbrt(x); }
inline float sinpif(float x) { return sinf(3.14159265358979323846f * x); }
inline float cospif(float x) { return cosf(3.14159265358979323846f * x); }
inline double sinpi(double x) { return sin(3.14159265358979323846 * x); }
inline double cospi(double x) { return cos(3.14159265358979323846 * x); }
inline bool isnan(float x) { return __builtin_isnan(x); }
inline bool isnan(double x) { return __builtin_isnan(x); }
inline bool isinf(float x) { return __builtin_isinf(x); }
inline bool isinf(double x) { return __builtin_isinf(x); }
inline bool isfinite(float x) { return __builtin_isfinite(x); }
inline bool isfinite(double x) { return __builtin_isfinite(x); }
inline bool signbit(float x) { return __builtin_signbit(x); }
inline bool signbit(double x) { return __builtin_signbit(x); }
inline float abs(float x) { return fabsf(x); }
inline double abs(double x) { return fabs(x); }
inline int abs(int x) { return __builtin_abs(x); }
inline long long llabs(long long x) { return __builtin_llabs(x); }

/* The fast intrinsics. */
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float *s, float *c) { sincosf(x, s, c); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }
/* Round-to-nearest arithmetic is the host's own; other rounding modes are
 * not provided (a kernel using them does not compile). */
inline float __fadd_rn(float x, float y) { return x + y; }
inline float __fsub_rn(float x, float y) { return x - y; }
inline float __fmul_rn(float x, float y) { return x * y; }
inline float __fdiv_rn(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fmaf_rn(float x, float y, float z) { return fmaf(x, y, z); }
inline double __dadd_rn(double x, double y) { return x + y; }
inline double __dsub_rn(double x, double y) { return x - y; }
inline double __dmul_rn(double x, double y) { return x * y; }
inline double __ddiv_rn(double x, double y) { return x / y; }
inline double __drcp_rn(double x) { return 1.0 / x; }
inline double __dsqrt_rn(double x) { return sqrt(x); }
inline double __fma_rn(double x, double y, double z) { return fma(x, y, z); }
inline int __float2int_rz(float x) { return (int)x; }
inline unsigned __float2uint_rz(float x) { return (unsigned)x; }
inline int __float2int_rn(float x) { return (int)lrintf(x); }
inline float __int2float_rn(int x) { return (float)x; }
inline float __uint2float_rn(unsigned x) { return (float)x; }
inline int __double2int_rz(double x) { return (int)x; }
inline double __int2double_rn(int x) { return (double)x; }
inline float __double2float_rn(double x) { return (float)x; }

/* min and max: CUDA's same-type overloads, and the usual arithmetic
 * conversions for mixed types (int with unsigned is unsigned, float with
 * double is double, as CUDA's mixed overloads). */
#define T4A_HK_MINMAX(T)                                                                           \
  inline T min(T a, T b) { return a < b ? a : b; }                                                 \
  inline T max(T a, T b) { return a > b ? a : b; }
T4A_HK_MINMAX(int)
T4A_HK_MINMAX(unsigned int)
T4A_HK_MINMAX(long)
T4A_HK_MINMAX(unsigned long)
T4A_HK_MINMAX(long long)
T4A_HK_MINMAX(unsigned long long)
#undef T4A_HK_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
template <class A, class B> inline auto min(A a, B b) -> decltype(a + b) {
  decltype(a + b) x = a, y = b;
  return y < x ? y : x;
}
template <class A, class B> inline auto max(A a, B b) -> decltype(a + b) {
  decltype(a + b) x = a, y = b;
  return y > x ? y : x;
}
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) {
  return a < b ? a : b;
}
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) {
  return a > b ? a : b;
}

/* Bit patterns. */
namespace t4a__hk {
template <class D, class S> inline D bit_cast(S s) {
  static_assert(sizeof(D) == sizeof(S), "same size");
  D d;
  __builtin_memcpy(&d, &s, sizeof d);
  return d;
}
} // namespace t4a__hk
inline int __float_as_int(float x) { return t4a__hk::bit_cast<int>(x); }
inline unsigned __float_as_uint(float x) { return t4a__hk::bit_cast<unsigned>(x); }
inline float __int_as_float(int x) { return t4a__hk::bit_cast<float>(x); }
inline float __uint_as_float(unsigned x) { return t4a__hk::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return t4a__hk::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return t4a__hk::bit_cast<double>(x); }
inline int __double2hiint(double x) { return (int)(__double_as_longlong(x) >> 32); }
inline int __double2loint(double x) { return (int)__double_as_longlong(x); }
inline double __hiloint2double(int hi, int lo) {
  return __longlong_as_double((long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo));
}

/* Integer intrinsics. */
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
  return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
inline int __mul24(int x, int y) {
  return (int)(unsigned)((long long)((int)((unsigned)x << 8) >> 8) *
                         ((int)((unsigned)y << 8) >> 8));
}
inline unsigned __umul24(unsigned x, unsigned y) { return (x & 0xffffffu) * (y & 0xffffffu); }
inline int __mulhi(int x, int y) { return (int)(((long long)x * y) >> 32); }
inline unsigned __umulhi(unsigned x, unsigned y) {
  return (unsigned)(((unsigned long long)x * y) >> 32);
}
inline long long __mul64hi(long long x, long long y) {
  return (long long)(((__int128)x * y) >> 64);
}
inline unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
  return (unsigned long long)(((unsigned __int128)x * y) >> 64);
}
inline unsigned __sad(int x, int y, unsigned z) {
  return z + (unsigned)(x > y ? (long long)x - y : (long long)y - x);
}
inline unsigned __usad(unsigned x, unsigned y, unsigned z) { return z + (x > y ? x - y : y - x); }
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
  unsigned long long v = ((unsigned long long)hi << 32) | lo;
  return (unsigned)((v << (s & 31)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
  unsigned long long v = ((unsigned long long)hi << 32) | lo;
  return (unsigned)(v >> (s & 31));
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned long long v = ((unsigned long long)y << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i)
    r |= (unsigned)((v >> (((s >> (4 * i)) & 7u) * 8)) & 0xffu) << (8 * i);
  return r;
}

/* Loads and stores through the caches CUDA names: plain accesses here. */
template <class T> inline T __ldg(const T *p) { return *p; }
template <class T> inline T __ldcg(const T *p) { return *p; }
template <class T> inline T __ldca(const T *p) { return *p; }
template <class T> inline T __ldcs(const T *p) { return *p; }
template <class T> inline T __ldlu(const T *p) { return *p; }
template <class T> inline T __ldcv(const T *p) { return *p; }
template <class T> inline void __stwb(T *p, T v) { *p = v; }
template <class T> inline void __stcg(T *p, T v) { *p = v; }
template <class T> inline void __stcs(T *p, T v) { *p = v; }
template <class T> inline void __stwt(T *p, T v) { *p = v; }
