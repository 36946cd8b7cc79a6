/* hk_types.h (part of host_kernel.h) -- CUDA's qualifiers and built-in
 * types. */

/* Qualifiers. A kernel is inlined into the loop or fiber that runs its
 * threads (hk_run.h), so its body is optimised with the thread loop. */
#define __global__ inline __attribute__((always_inline))
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __inline__ inline
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __grid_constant__
/* Static shared memory: one copy per OS thread, and a worker thread runs
 * one block at a time, so one copy per block (`static __shared__` works
 * too). extern __shared__ arrays are rewritten by the translator into
 * t4a__hk::dynshared (hk_core.h). */
#define __shared__ thread_local

/* The built-in vector types, with CUDA's alignments, and make_<type>. */
#define T4A_HK_VEC1(T, N, A)                                                                       \
  struct __attribute__((aligned(A))) N##1 {                                                        \
    T x;                                                                                           \
  };                                                                                               \
  inline N##1 make_##N##1(T x) { return N##1 {x}; }
#define T4A_HK_VEC2(T, N, A)                                                                       \
  struct __attribute__((aligned(A))) N##2 {                                                        \
    T x, y;                                                                                        \
  };                                                                                               \
  inline N##2 make_##N##2(T x, T y) { return N##2 {x, y}; }
#define T4A_HK_VEC3(T, N)                                                                          \
  struct N##3 {                                                                                    \
    T x, y, z;                                                                                     \
  };                                                                                               \
  inline N##3 make_##N##3(T x, T y, T z) { return N##3 {x, y, z}; }
#define T4A_HK_VEC4(T, N, A)                                                                       \
  struct __attribute__((aligned(A))) N##4 {                                                        \
    T x, y, z, w;                                                                                  \
  };                                                                                               \
  inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4 {x, y, z, w}; }
#define T4A_HK_VECS(T, N, A1, A2, A4)                                                              \
  T4A_HK_VEC1(T, N, A1) T4A_HK_VEC2(T, N, A2) T4A_HK_VEC3(T, N) T4A_HK_VEC4(T, N, A4)
T4A_HK_VECS(signed char, char, 1, 2, 4)
T4A_HK_VECS(unsigned char, uchar, 1, 2, 4)
T4A_HK_VECS(short, short, 2, 4, 8)
T4A_HK_VECS(unsigned short, ushort, 2, 4, 8)
T4A_HK_VECS(int, int, 4, 8, 16)
T4A_HK_VECS(unsigned int, uint, 4, 8, 16)
T4A_HK_VECS(long, long, 8, 16, 16)
T4A_HK_VECS(unsigned long, ulong, 8, 16, 16)
T4A_HK_VECS(long long, longlong, 8, 16, 16)
T4A_HK_VECS(unsigned long long, ulonglong, 8, 16, 16)
T4A_HK_VECS(float, float, 4, 8, 16)
T4A_HK_VECS(double, double, 8, 16, 16)
#undef T4A_HK_VECS
#undef T4A_HK_VEC1
#undef T4A_HK_VEC2
#undef T4A_HK_VEC3
#undef T4A_HK_VEC4

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

/* warpSize is a constant on the host: warps have 32 lanes. */
static constexpr int warpSize = 32;
