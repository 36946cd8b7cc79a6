/* host_kernel.h -- the prelude of the host backend: what CUDA C kernels see
 * when the host C++ compiler (C++17) builds them into a kernel module
 * (plugin-host/kernel_abi.h). plugin-host/ktranslate.c puts it in front of
 * the consumer's source; the plugin embeds it at build time (embed.sh), so
 * the compiler never reads it from a file.
 *
 * The pieces (each included below, in this order, and inlined by embed.sh):
 *   hk_types.h   built-in vector types, dim3, the qualifiers
 *   hk_core.h    per-thread state (threadIdx...), faults (__trap, assert,
 *                fault_here), printf, dynamic shared memory
 *   hk_fiber.h   threads of a block as fibers: the context switch, the
 *                scheduler, __syncthreads*
 *   hk_warp.h    __syncwarp, shuffles, votes
 *   hk_atomic.h  atomic*
 *   hk_math.h    the device math functions and integer intrinsics
 *   hk_run.h     the kernels' run functions (loop or fibers) and their
 *                registration
 *
 * Light on purpose: no standard header but what the compiler provides as
 * builtins, so that a small kernel compiles cold in a few hundred
 * milliseconds. Everything the prelude declares is hidden (only the module
 * symbol is exported) and lives in namespace t4a__hk except CUDA's own
 * names. The unit is meant to be compiled with
 *   -std=c++17 -O2 -fPIC -shared -fno-exceptions -fno-rtti -fno-math-errno
 *   (-lm)
 * -fno-math-errno: CUDA's math functions set no errno, and with it the
 * compiler inlines sqrtf and friends. */
#ifndef T4A_HOST_KERNEL_H
#define T4A_HOST_KERNEL_H

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "the host backend's kernels are C++17"
#endif
#if !defined(__x86_64__) && !defined(__aarch64__)
#error "the host backend's kernels run on x86-64 and aarch64 only"
#endif

#pragma GCC visibility push(hidden)

/* What NVRTC defines (there is no __CUDA_ARCH__: no GPU architecture's
 * code paths apply), and a name kernels can test for the host backend. */
#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
#define __T4A_HOST__ 1

namespace t4a__hk {
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __INT32_TYPE__ int32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __INT64_TYPE__ int64_t;
typedef __SIZE_TYPE__ size_t;
#include "../kernel_abi.h" /* t4a-embed */
} // namespace t4a__hk

#include "hk_types.h"  /* t4a-embed */
#include "hk_core.h"   /* t4a-embed */
#include "hk_fiber.h"  /* t4a-embed */
#include "hk_warp.h"   /* t4a-embed */
#include "hk_atomic.h" /* t4a-embed */
#include "hk_math.h"   /* t4a-embed */
#include "hk_run.h"    /* t4a-embed */

#endif
