#!/bin/sh
# tests/consumers/test_python.sh -- the Python (ctypes) consumer: the binding
# examples/python/t4a_gpu.py and the example examples/python/axpy.py.
#
#   0. the ctypes mirrors match the C layout (sizes and offsets printed by a
#      C compiler from the headers, hard-coded below) and every table slot's
#      CFUNCTYPE matches the slot's declaration in the header;
#   1. without a driver, axpy exits 4 naming the driver problem;
#   2. on the fake CUDA driver (2 devices), axpy lists both devices and
#      verifies its result, or exits 4 with T4A_ENOCOMPILER when no NVRTC is
#      installed (a fake NVRTC, when built, makes success required);
#   3. on the real driver: in the gpu lane (make check-gpu) axpy must verify;
#      otherwise exit 4 (no usable GPU here) is accepted.
#
# Environment (set by the Automake harness): T4A_TEST_SRCDIR,
# T4A_TEST_BUILDDIR, T4A_TEST_LANE (any | gpu), T4A_GPU_BACKEND_PATH.
# Skips (77) only when python3 is missing.

src=${T4A_TEST_SRCDIR:-.}
b=${T4A_TEST_BUILDDIR:-.}
lane=${T4A_TEST_LANE:-any}

if [ -n "${T4A_TEST_SANITIZED:-}" ]; then # set by .ci/sanitizers
  echo "SKIP: this build is instrumented ($T4A_TEST_SANITIZED): its loader needs the sanitizer"
  echo "runtime in the executable, which python3 is not built with (the plain build runs this)"
  exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: python3 not found in PATH; the Python example needs it"
  exit 77
fi

T4A_GPU_LIBRARY=$b/loader/.libs/libt4a_gpu.so
T4A_GPU_BACKEND_PATH=${T4A_GPU_BACKEND_PATH:-$b/plugin-cuda/.libs}
PYTHONPATH=$src/examples/python${PYTHONPATH:+:$PYTHONPATH}
PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the (possibly read-only) source tree
export T4A_GPU_LIBRARY T4A_GPU_BACKEND_PATH PYTHONPATH PYTHONDONTWRITEBYTECODE
unset T4A_GPU_BACKEND FAKE_CUDA_VERSION FAKE_CUDA_MODE FAKE_CUDA_DEVICES

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 99' HUP INT TERM
# Compiled kernels go to a private disk cache, not the user's.
T4A_CACHE_DIR=$tmp/cache
export T4A_CACHE_DIR

fake_cuda=$b/tests/fakecuda/.libs/libfakecuda.so
fake_nvrtc=$b/tests/fakecuda/.libs/libfakenvrtc.so
axpy=$src/examples/python/axpy.py
out=$tmp/out

fail() {
  echo "FAIL: $*"
  exit 1
}

# Runs axpy.py with the arguments given; rc = its status, $out its output.
run_axpy() {
  python3 "$axpy" "$@" >"$out" 2>&1
  rc=$?
  sed 's/^/    /' "$out"
}

# Whether $out contains the fixed string $1.
has() { grep -F -q -e "$1" "$out"; }

# ---------------------------------------------------------------------------
# The layout check: Python reading the header; exits 1 listing mismatches.
check_layout() {
  T4A_HEADER=$src/abi/t4a/gpu_backend_v1.h python3 - <<'EOF'
import ctypes
import os
import re
import sys

import t4a_gpu as t

# sizeof and field@offset+size of every struct, printed from
# <t4a/gpu_loader.h> by a C program using sizeof/offsetof (LP64: x86-64 and
# aarch64 Linux). Fields are only ever appended: when a new ABI minor adds
# some, print and append them here, and mirror them in t4a_gpu.py.
EXPECTED = {
    "t4a_error_info": (32, """
        struct_size@0+4 status@4+4 native_code@8+8 native_name@16+8 message@24+8
        """),
    "t4a_backend_info": (336, """
        struct_size@0+4 abi_major@4+2 abi_minor@6+2 name@8+32 version@40+32
        driver_version@72+4 device_count@76+4 driver_path@80+256
        """),
    "t4a_device_info": (376, """
        struct_size@0+4 ordinal@4+4 name@8+256 uuid@264+16 cc_major@280+4 cc_minor@284+4
        total_memory@288+8 pci_bus_id@296+32 multiprocessors@328+4 flags@332+4
        max_threads_per_block@336+4 max_block_dim@340+12 max_grid_dim@352+12
        max_shared_per_block@364+4 max_shared_per_block_optin@368+4 warp_size@372+4
        """),
    "t4a_compiler_info": (528, """
        struct_size@0+4 status@4+4 version_major@8+4 version_minor@12+4 path@16+256
        reason@272+256
        """),
    "t4a_runtime_options": (40, """
        struct_size@0+4 flags@4+4 staging_bytes@8+8 pool_release_threshold@16+8
        cache_limit_bytes@24+8 copy_threads@32+4 reserved@36+4
        """),
    "t4a_runtime_counters": (224, """
        struct_size@0+4 reserved@4+4 launches@8+8 copies_h2d_pinned@16+8
        copies_d2h_pinned@24+8 copies_h2d_pageable@32+8 copies_d2h_pageable@40+8
        copies_d2d@48+8 copies_cross_runtime@56+8 copies_peer@64+8 copies_via_host@72+8
        bytes_h2d@80+8 bytes_d2h@88+8 bytes_d2d@96+8 seals@104+8 seal_events_recorded@112+8
        staging_events_recorded@120+8 events_created@128+8 pending_retirements@136+8
        quarantined@144+8 staging_bytes@152+8 staging_peak_bytes@160+8 cache_hits@168+8
        cache_misses@176+8 driver_allocations@184+8 driver_frees@192+8 live_buffers@200+8
        live_host_buffers@208+8 raw_sections@216+8
        """),
    "t4a_cache_stats": (64, """
        struct_size@0+4 reserved@4+4 entries@8+8 bytes@16+8 hits@24+8 misses@32+8
        limit_bytes@40+8 pinned_entries@48+8 pinned_bytes@56+8
        """),
    "t4a_compile_options": (48, """
        struct_size@0+4 flags@4+4 source@8+8 source_size@16+8 name@24+8 options@32+8
        option_count@40+4 device_ordinal@44+4
        """),
    "t4a_compile_cache_stats": (72, """
        struct_size@0+4 reserved@4+4 memory_entries@8+8 memory_hits@16+8 disk_entries@24+8
        disk_bytes@32+8 disk_hits@40+8 disk_rejected@48+8 misses@56+8 disk_limit_bytes@64+8
        """),
    "t4a_function_attributes": (32, """
        struct_size@0+4 max_threads_per_block@4+4 num_registers@8+4 static_shared_bytes@12+4
        max_dynamic_shared_bytes@16+4 local_bytes@20+4 ptx_version@24+4 binary_version@28+4
        """),
    "t4a_launch_config": (32, """
        struct_size@0+4 grid@4+12 block@16+12 shared_bytes@28+4
        """),
    "t4a_raw_runtime": (32, """
        struct_size@0+4 device_ordinal@4+4 context@8+8 stream@16+8 device@24+4
        """),
    "t4a_raw_section": (24, """
        struct_size@0+4 reserved@4+4 saved_context@8+8 runtime_bits@16+8
        """),
    "t4a_gpu_backend_entry": (4160, """
        name@0+64 path@64+4096
        """),
    "t4a_gpu_backend_v1": (416, """
        struct_size@0+4 abi_major@4+2 abi_minor@6+2 name@8+8 version@16+8 last_error@24+8
        init@32+8 get_info@40+8 device_count@48+8 device_info@56+8 compiler_info@64+8
        peer_access_supported@72+8 runtime_create@80+8 runtime_destroy@88+8
        runtime_counters@96+8 buffer_alloc@104+8 buffer_free@112+8 buffer_size@120+8
        cache_trim@128+8 cache_stats@136+8 host_alloc@144+8 host_free@152+8
        copy_h2d_pinned@160+8 copy_d2h_pinned@168+8 copy_h2d@176+8 copy_d2h@184+8
        copy_d2d@192+8 copy_from_runtime@200+8 copy_from_peer@208+8
        copy_from_peer_via_host@216+8 seal@224+8 witness_query@232+8 witness_wait@240+8
        witness_retain@248+8 witness_release@256+8 runtime_wait_witness@264+8
        artifact_compile@272+8 artifact_from_bytes@280+8 artifact_log@288+8
        artifact_data@296+8 artifact_release@304+8 compile_cache_stats@312+8
        compile_cache_clear@320+8 module_load@328+8 module_unload@336+8 function_get@344+8
        function_attributes@352+8 function_set_max_dynamic_shared@360+8 launch@368+8
        raw_runtime@376+8 buffer_device_address@384+8 raw_function@392+8 raw_begin@400+8
        raw_end@408+8
        """),
}
for h in ("runtime", "buffer", "host_buffer", "witness", "artifact", "module", "function"):
    EXPECTED["t4a_" + h] = (8, "bits@0+8")

bad = []
assert ctypes.sizeof(ctypes.c_void_p) == 8, "the expected layout is LP64's"

# 1. The binding's own check against the header's T4A_*_V1_0_SIZE values.
bad += ["self_check: " + p for p in t.self_check()]

# 2. Every struct: field names in order, offsets, sizes, sizeof.
for name, (size, text) in EXPECTED.items():
    cls = getattr(t, name)
    want = [(f, int(o), int(s)) for f, o, s in re.findall(r"(\w+)@(\d+)\+(\d+)", text)]
    got = [(f[0], getattr(cls, f[0]).offset, getattr(cls, f[0]).size) for f in cls._fields_]
    if got != want:
        for g, w in zip(got + [None] * len(want), want + [None] * len(got)):
            if g != w:
                bad.append("%s: field %s, expected %s" % (name, g, w))
                break
    if ctypes.sizeof(cls) != size:
        bad.append("sizeof(%s) = %d, expected %d" % (name, ctypes.sizeof(cls), size))

# 3. Every slot's CFUNCTYPE against its declaration in the header:
#    "int (*name)(type a, type b, ...);" -> return c_int, argtypes in order.
header = open(os.environ["T4A_HEADER"]).read()
body = re.search(r"struct t4a_gpu_backend_v1 \{(.*?)\n\};", header, re.S).group(1)
body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
decls = re.findall(r"int \(\*(\w+)\)\((.*?)\);", body, re.S)
P = ctypes.POINTER
CTYPES = {
    "int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64,
    "int32_t*": P(ctypes.c_int32), "uint64_t*": P(ctypes.c_uint64), "bool*": P(ctypes.c_bool),
    "constvoid*": ctypes.c_void_p, "void*": ctypes.c_void_p, "void**": P(ctypes.c_void_p),
    "constvoid**": P(ctypes.c_void_p), "constchar*": ctypes.c_char_p,
    "constchar**": P(ctypes.c_void_p),  # read with string_at(pointer, length)
    "t4a_artifact_kind": ctypes.c_int, "t4a_artifact_kind*": P(ctypes.c_int),
}


def ctype_of(param):
    """'const t4a_launch_config *cfg' -> POINTER(t4a_launch_config)."""
    ctype = re.sub(r"\s+", "", re.sub(r"\w+$", "", param.strip()))  # drop the name
    if ctype in CTYPES:
        return CTYPES[ctype]
    base = ctype.replace("const", "").rstrip("*")
    cls = getattr(t, base)  # a mirrored struct or handle
    return P(cls) if ctype.endswith("*") else cls


slots = [f for f in t.t4a_gpu_backend_v1._fields_ if f[0] not in
         ("struct_size", "abi_major", "abi_minor", "name", "version")]
if [s[0] for s in slots] != [d[0] for d in decls]:
    bad.append("slot names/order differ from the header: %s" % [
        (a, b) for a, b in zip([s[0] for s in slots], [d[0] for d in decls]) if a != b][:1])
for (slot, proto), (_, params) in zip(slots, decls):
    want = [] if params.strip() == "void" else [ctype_of(p) for p in params.split(",")]
    if proto._restype_ is not ctypes.c_int or list(proto._argtypes_) != want:
        bad.append("slot %s: argtypes %s, header says %s" % (slot, proto._argtypes_, want))
print("   %d structs, %d slots checked" % (len(EXPECTED), len(decls)))
for p in bad:
    print("   " + p)
sys.exit(1 if bad else 0)
EOF
}

echo "== 0. ctypes layout against the C headers"
check_layout || fail "the ctypes mirrors do not match the C ABI"

# ---------------------------------------------------------------------------
echo "== 1. no driver: exit 4 naming the driver problem"
T4A_CUDA_LIBRARY=/nonexistent/libcuda.so.1
export T4A_CUDA_LIBRARY
unset T4A_NVRTC_LIBRARY
run_axpy 1000
[ $rc -eq 4 ] || fail "axpy without a driver exited $rc, expected 4"
has "T4A_ENODRIVER" || fail "the output does not name T4A_ENODRIVER"
has "/nonexistent/libcuda.so.1" || fail "the output does not name the driver file"

# ---------------------------------------------------------------------------
echo "== 2. fake CUDA driver"
[ -f "$fake_cuda" ] || fail "$fake_cuda is missing; run make check (it builds the fake driver)"
T4A_CUDA_LIBRARY=$fake_cuda
export T4A_CUDA_LIBRARY
require=no
if [ -f "$fake_nvrtc" ]; then
  T4A_NVRTC_LIBRARY=$fake_nvrtc
  export T4A_NVRTC_LIBRARY
  require=yes
fi
# The plugin refuses NVRTC output for a driver of an older CUDA major, so
# the fake driver claims at least the compiler's version (as test_code does).
nvrtc=$(python3 -c '
import t4a_gpu
with t4a_gpu.Backend() as b:
    c = b.compiler_info()
    print(c.version[0] * 1000 + c.version[1] * 10 if c.available else "none")
') || fail "querying the compiler through t4a_gpu failed"
if [ "$nvrtc" != none ]; then
  FAKE_CUDA_VERSION=$((nvrtc > 12080 ? nvrtc : 12080))
  export FAKE_CUDA_VERSION
  require=yes # a compiler is there: the example must verify
fi
echo "   NVRTC: $nvrtc (${T4A_NVRTC_LIBRARY:-default search}); success required: $require"
run_axpy 100003
has "devices: 2" || fail "the fake driver's 2 devices are not listed"
[ "$(grep -c 'device [01]: Fake GPU [01]' "$out")" -eq 2 ] || fail "device lines missing"
case $rc in
0) has "python example: axpy of 100003 floats verified on Fake GPU 0" ||
     fail "exit 0 without the verified line" ;;
4) [ $require = no ] || fail "axpy exited 4, but a compiler is there (or the fake NVRTC was built)"
   has "T4A_ENOCOMPILER" || fail "exit 4 without naming T4A_ENOCOMPILER"
   echo "   (no NVRTC here: compile refused as expected)" ;;
*) fail "axpy on the fake driver exited $rc" ;;
esac
unset T4A_CUDA_LIBRARY T4A_NVRTC_LIBRARY FAKE_CUDA_VERSION

# ---------------------------------------------------------------------------
echo "== 3. real driver (lane $lane)"
run_axpy
case $rc in
0) has "python example: axpy of 262144 floats verified on" ||
     fail "exit 0 without the verified line" ;;
4) [ "$lane" != gpu ] || fail "no usable GPU in the gpu lane"
   echo "   (no usable GPU here: accepted outside the gpu lane)" ;;
*) fail "axpy on the real driver exited $rc" ;;
esac
echo "PASS"
exit 0
