/* common/ptx_kernels.h -- PTX text for kernels that the conformance checks
 * (tools/conform_kernels.c), the runtime tests (tests/runtime/rtutil.c)
 * and the model fuzzer (fuzz/model.c) load, written once. ISA 7.0 for
 * sm_70 and up: any NVIDIA device the driver can JIT for; the fake driver
 * maps the entry names to host code. String-literal macros: the users
 * paste them between their own header lines and further entries.
 *   T4A__PTX_SPIN_AND_FILL:
 *     t4a_spin(flag): spins until the u32 at flag is non-zero (a volatile
 *       load each iteration): a gate the host opens.
 *     t4a_fill_u32(p, v, n): p[0..n) = v, grid-stride.
 *   T4A__PTX_INDEX3D: t4a_index3d, below. */
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

/* t4a_index3d(out): every thread of the grid stores three words at
 * out[3 * t]: ctaid.x | ctaid.y << 16, ctaid.z | tid.x << 16,
 * tid.y | tid.z << 16, t numbering blocks and threads z-major: a 3-D
 * launch's geometry, checkable word by word. */
#define T4A__PTX_INDEX3D                                                                           \
  "// out[3 * t ..] = ctaid.x | ctaid.y << 16, ctaid.z | tid.x << 16,\n"                           \
  "// tid.y | tid.z << 16, t = block * threads per block + thread, both\n"                         \
  "// numbered z-major: (z * ny + y) * nx + x\n"                                                   \
  ".visible .entry t4a_index3d(.param .u64 out)\n"                                                 \
  "{\n"                                                                                            \
  "  .reg .b32 %r<19>;\n"                                                                          \
  "  .reg .b64 %rd<4>;\n"                                                                          \
  "  ld.param.u64 %rd1, [out];\n"                                                                  \
  "  mov.u32 %r1, %ctaid.x;\n"                                                                     \
  "  mov.u32 %r2, %ctaid.y;\n"                                                                     \
  "  mov.u32 %r3, %ctaid.z;\n"                                                                     \
  "  mov.u32 %r4, %tid.x;\n"                                                                       \
  "  mov.u32 %r5, %tid.y;\n"                                                                       \
  "  mov.u32 %r6, %tid.z;\n"                                                                       \
  "  mov.u32 %r7, %nctaid.x;\n"                                                                    \
  "  mov.u32 %r8, %nctaid.y;\n"                                                                    \
  "  mov.u32 %r9, %ntid.x;\n"                                                                      \
  "  mov.u32 %r10, %ntid.y;\n"                                                                     \
  "  mov.u32 %r11, %ntid.z;\n"                                                                     \
  "  mad.lo.u32 %r12, %r3, %r8, %r2;\n"                                                            \
  "  mad.lo.u32 %r12, %r12, %r7, %r1;\n"                                                           \
  "  mul.lo.u32 %r13, %r9, %r10;\n"                                                                \
  "  mul.lo.u32 %r13, %r13, %r11;\n"                                                               \
  "  mad.lo.u32 %r14, %r6, %r10, %r5;\n"                                                           \
  "  mad.lo.u32 %r14, %r14, %r9, %r4;\n"                                                           \
  "  mad.lo.u32 %r15, %r12, %r13, %r14;\n"                                                         \
  "  mul.wide.u32 %rd2, %r15, 12;\n"                                                               \
  "  add.s64 %rd3, %rd1, %rd2;\n"                                                                  \
  "  shl.b32 %r16, %r2, 16;\n"                                                                     \
  "  or.b32 %r16, %r16, %r1;\n"                                                                    \
  "  st.u32 [%rd3], %r16;\n"                                                                       \
  "  shl.b32 %r17, %r4, 16;\n"                                                                     \
  "  or.b32 %r17, %r17, %r3;\n"                                                                    \
  "  st.u32 [%rd3+4], %r17;\n"                                                                     \
  "  shl.b32 %r18, %r6, 16;\n"                                                                     \
  "  or.b32 %r18, %r18, %r5;\n"                                                                    \
  "  st.u32 [%rd3+8], %r18;\n"                                                                     \
  "  ret;\n"                                                                                       \
  "}\n"

#endif
