"""The test kernels as PTX, shared by python/tests/test_interop.py and
tests/frameworks/fwutil.py (no compiler needed; the fake driver runs its own
versions of the same names): t4a_spin(flag) returns once *flag != 0;
t4a_fill_u32(p, value, n).
"""

PTX = b"""//
.version 7.0
.target sm_70
.address_size 64

.visible .entry t4a_spin(.param .u64 flag)
{
  .reg .pred %p;
  .reg .b32 %r;
  .reg .b64 %a;
  ld.param.u64 %a, [flag];
$L_spin:
  ld.volatile.u32 %r, [%a];
  setp.eq.u32 %p, %r, 0;
  @%p bra $L_spin;
  ret;
}

.visible .entry t4a_fill_u32(.param .u64 p, .param .u32 v, .param .u64 n)
{
  .reg .pred %p;
  .reg .b32 %r<6>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [v];
  ld.param.u64 %rd2, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  cvt.u64.u32 %rd3, %r5;
  mov.u32 %r2, %nctaid.x;
  mul.lo.u32 %r3, %r2, %r3;
  cvt.u64.u32 %rd4, %r3;
$L_loop:
  setp.ge.u64 %p, %rd3, %rd2;
  @%p bra $L_done;
  shl.b64 %rd5, %rd3, 2;
  add.s64 %rd6, %rd1, %rd5;
  st.u32 [%rd6], %r1;
  add.s64 %rd3, %rd3, %rd4;
  bra $L_loop;
$L_done:
  ret;
}
"""
