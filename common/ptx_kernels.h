/* common/ptx_kernels.h -- PTX text for two kernels the conformance checks
 * (tools/conform_kernels.c) and the runtime tests (tests/runtime/rtutil.c)
 * both load, written once. ISA 7.0 for sm_70 and up: any NVIDIA device the
 * driver can JIT for; the fake driver maps the entry names to host code.
 *   t4a_spin(flag): spins until the u32 at flag is non-zero (a volatile load
 *     each iteration): a gate the host opens.
 *   t4a_fill_u32(p, v, n): p[0..n) = v, grid-stride.
 * A string-literal macro: the users paste it between their own header lines
 * and further entries. */
#ifndef T4A_COMMON_PTX_KERNELS_H
#define T4A_COMMON_PTX_KERNELS_H

#define T4A__PTX_HEADER                                                                            \
  ".version 7.0\n"                                                                                 \
  ".target sm_70\n"                                                                                \
  ".address_size 64\n"                                                                             \
  "\n"

#define T4A__PTX_SPIN_AND_FILL                                                                     \
  ".visible .entry t4a_spin(.param .u64 flag)\n"                                                   \
  "{\n"                                                                                            \
  "  .reg .pred %p;\n"                                                                             \
  "  .reg .b32 %r;\n"                                                                              \
  "  .reg .b64 %a;\n"                                                                              \
  "  ld.param.u64 %a, [flag];\n"                                                                   \
  "$L_spin:\n"                                                                                     \
  "  ld.volatile.u32 %r, [%a];\n"                                                                  \
  "  setp.eq.u32 %p, %r, 0;\n"                                                                     \
  "  @%p bra $L_spin;\n"                                                                           \
  "  ret;\n"                                                                                       \
  "}\n"                                                                                            \
  "\n"                                                                                             \
  ".visible .entry t4a_fill_u32(.param .u64 p, .param .u32 v, .param .u64 n)\n"                    \
  "{\n"                                                                                            \
  "  .reg .pred %p;\n"                                                                             \
  "  .reg .b32 %r<6>;\n"                                                                           \
  "  .reg .b64 %rd<8>;\n"                                                                          \
  "  ld.param.u64 %rd1, [p];\n"                                                                    \
  "  ld.param.u32 %r1, [v];\n"                                                                     \
  "  ld.param.u64 %rd2, [n];\n"                                                                    \
  "  mov.u32 %r2, %ctaid.x;\n"                                                                     \
  "  mov.u32 %r3, %ntid.x;\n"                                                                      \
  "  mov.u32 %r4, %tid.x;\n"                                                                       \
  "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"                                                             \
  "  cvt.u64.u32 %rd3, %r5;\n"                                                                     \
  "  mov.u32 %r2, %nctaid.x;\n"                                                                    \
  "  mul.lo.u32 %r3, %r2, %r3;\n"                                                                  \
  "  cvt.u64.u32 %rd4, %r3;\n"                                                                     \
  "$L_loop:\n"                                                                                     \
  "  setp.ge.u64 %p, %rd3, %rd2;\n"                                                                \
  "  @%p bra $L_done;\n"                                                                           \
  "  shl.b64 %rd5, %rd3, 2;\n"                                                                     \
  "  add.s64 %rd6, %rd1, %rd5;\n"                                                                  \
  "  st.u32 [%rd6], %r1;\n"                                                                        \
  "  add.s64 %rd3, %rd3, %rd4;\n"                                                                  \
  "  bra $L_loop;\n"                                                                               \
  "$L_done:\n"                                                                                     \
  "  ret;\n"                                                                                       \
  "}\n"

#endif
