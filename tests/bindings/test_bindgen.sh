#!/bin/sh
# tests/bindings/test_bindgen.sh -- the bindings cannot drift from the headers,
# and a header change reaches them with no hand edit:
#  (a) python/t4a_gpu/_abi.py, rust/src/sys.rs, rust/tests/layout.rs and
#      tests/bindings/layout.c are what bindgen/t4a_bindgen.py makes of the
#      headers today (else: a diff, and "run make bindings-regen");
#  (b) on a copy of the backend header with an appended slot, struct,
#      status, #define and frozen size (as a later minor appends them), the
#      generator emits the new prototype in both languages, the Python
#      module imports with the slot at the C offset, the Rust module
#      compiles (when rustc is here), and the generated C layout program
#      builds against the copy and agrees;
#  (c) a declaration the generator cannot translate is an error naming it,
#      never a silent omission;
#  (d) the package versions (pyproject.toml, Cargo.toml, t4a_gpu.__version__)
#      are configure.ac's.
# Skips (77) only when python3 is missing.
s=$(cd "${T4A_TEST_SRCDIR:-$(dirname "$0")/../..}" && pwd) || exit 99
fail=0
bad() { echo "FAIL: $*"; fail=1; }
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: python3 not found (needed by bindgen/t4a_bindgen.py)"
  exit 77
fi
PYTHONDONTWRITEBYTECODE=1
export PYTHONDONTWRITEBYTECODE
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
gen="python3 $s/bindgen/t4a_bindgen.py --srcdir $s"

# (a) drift.
$gen --check || bad "the generated bindings are stale (see the diff above): run make bindings-regen"

# (b) an appended slot, struct, status, #define and frozen size, after
# whatever the header has today (the offsets follow the real table's size).
base=$("${T4A_TEST_BUILDDIR:-$s}/tests/bindings/layout" |
  awk '$1 == "struct" && $2 == "t4a_gpu_backend_v1" {print $3}')
[ -n "$base" ] || { echo "ERROR: tests/bindings/layout did not print the table's size"; exit 99; }
second=$((base + 8)) total=$((base + 16))
mkdir "$tmp/abi" "$tmp/abi/t4a" "$tmp/out" || exit 99
python3 - "$s/abi/t4a/gpu_backend_v1.h" "$tmp/abi/t4a/gpu_backend_v1.h" <<'PY' || exit 99
import sys
h = open(sys.argv[1]).read()
# A status, after the last one.
h = h.replace('X(EFORKED, -24, "backend used in a child after fork()")',
              'X(EFORKED, -24, "backend used in a child after fork()")                          \\\n'
              '  X(EFUTURE, -25, "a status of the future")')
# A struct and a #define, before the table.
h = h.replace("/* ------------------------------------------------------------------------\n"
              " * The function table.",
              "/* Facts of the future (a struct a later minor adds). */\n"
              "typedef struct t4a_future_info {\n"
              "  uint32_t struct_size;\n"
              "  uint32_t reserved;\n"
              "  uint64_t free_bytes; /* bytes free on the device */\n"
              "  uint64_t total_bytes;\n"
              "} t4a_future_info;\n\n"
              "#define T4A_FUTURE_FLAG (1u << 4) /* a flag of the future */\n\n"
              "/* ------------------------------------------------------------------------\n"
              " * The function table.", 1)
# Two slots, appended to the table, after its last slot.
end = "\n};\n\n/* True when `table` is non-null"
assert end in h, "the table's end moved"
h = h.replace(end, "\n\n  /* -- a later minor -----------------------------------------------------\n"
              "   * future_fill: fills `count` 32-bit words of buf from `offset` with\n"
              "   * `value`, in stream order. */\n"
              "  int (*future_fill)(t4a_runtime rt, t4a_buffer buf, uint64_t offset, uint32_t value,\n"
              "                     uint64_t count);\n\n"
              "  /* future_info: free and total bytes of the runtime's device. */\n"
              "  int (*future_info)(t4a_runtime rt, t4a_future_info *out);" + end, 1)
h = h.replace("#define T4A_RAW_SECTION_V1_0_SIZE",
              "#define T4A_FUTURE_INFO_V1_9_SIZE T4A_SIZE_THROUGH(t4a_future_info, total_bytes)\n"
              "#define T4A_RAW_SECTION_V1_0_SIZE")
open(sys.argv[2], "w").write(h)
PY
grep -q "future_fill" "$tmp/abi/t4a/gpu_backend_v1.h" && grep -q EFUTURE "$tmp/abi/t4a/gpu_backend_v1.h" ||
  { echo "ERROR: the header edit did not apply (the header changed?)"; exit 99; }
python3 "$s/bindgen/t4a_bindgen.py" --srcdir "$s" --backend-header "$tmp/abi/t4a/gpu_backend_v1.h" \
  --out-dir "$tmp/out" || bad "the generator fails on the extended header"
py=$tmp/out/python/t4a_gpu/_abi.py
rs=$tmp/out/rust/src/sys.rs
grep -qF "('future_fill', CFUNCTYPE(c_int, t4a_runtime, t4a_buffer, c_uint64, c_uint32, c_uint64))," "$py" ||
  bad "Python: no future_fill prototype"
grep -qF "('future_info', CFUNCTYPE(c_int, t4a_runtime, POINTER(t4a_future_info)))," "$py" ||
  bad "Python: no future_info prototype"
grep -qF "pub future_fill: Option<unsafe extern \"C\" fn(rt: t4a_runtime, buf: t4a_buffer, offset: u64, value: u32, count: u64) -> c_int>," "$rs" ||
  bad "Rust: no future_fill slot"
grep -qF "pub future_info: Option<unsafe extern \"C\" fn(rt: t4a_runtime, out: *mut t4a_future_info) -> c_int>," "$rs" ||
  bad "Rust: no future_info slot"
grep -qF "/// future_fill: fills \`count\` 32-bit words of buf from \`offset\` with" "$rs" ||
  bad "Rust: the slot's doc comment is not the header's"
grep -qF "pub struct t4a_future_info {" "$rs" || bad "Rust: no t4a_future_info"
grep -qF "pub const T4A_EFUTURE: c_int = -25;" "$rs" || bad "Rust: no T4A_EFUTURE"
grep -qF "EFUTURE," "$rs" || bad "Rust: no Status::EFUTURE"
grep -qF "pub const T4A_FUTURE_FLAG: u32 = 0x10;" "$rs" || bad "Rust: no T4A_FUTURE_FLAG"
grep -qF "pub const T4A_FUTURE_INFO_V1_9_SIZE: usize = 24;" "$rs" || bad "Rust: no frozen size"
# The Python module on its own (it needs only ctypes).
python3 - "$py" "$base" <<'PY' || bad "Python: the generated module is wrong (above)"
import ctypes, importlib.util, sys
spec = importlib.util.spec_from_file_location("abi", sys.argv[1])
abi = importlib.util.module_from_spec(spec)
spec.loader.exec_module(abi)
base = int(sys.argv[2])
t = abi.t4a_gpu_backend_v1
assert t.future_fill.offset == base and t.future_info.offset == base + 8, (t.future_fill, t.future_info)
assert ctypes.sizeof(t) == base + 16
assert abi.T4A_GPU_BACKEND_V1_0_SIZE == 416          # frozen: unchanged by the append
assert abi.T4A_FUTURE_INFO_V1_9_SIZE == 24 and ctypes.sizeof(abi.t4a_future_info) == 24
assert abi.STATUSES[-1] == ("T4A_EFUTURE", -25, "a status of the future") and abi.T4A_EFUTURE == -25
assert abi.T4A_FUTURE_FLAG == 16
assert "future_fill: fills `count`" in abi.SLOT_DOCS["future_fill"]
assert abi.t4a_future_info in abi.STRUCTS
print("    Python: future_fill @%d, future_info @%d, EFUTURE, t4a_future_info: ok" % (base, base + 8))
PY
if command -v rustc >/dev/null 2>&1; then
  rustc --edition 2021 --crate-type lib --crate-name sys -D warnings "$rs" -o "$tmp/libsys.rlib" ||
    bad "Rust: the generated sys.rs does not compile (the sizes are checked at compile time)"
else
  echo "note: rustc not found: the generated Rust is checked by text only"
fi
cc=${T4A_TEST_CC:-${CC:-cc}}
if command -v "$cc" >/dev/null 2>&1; then
  $cc -std=gnu11 -Wall -Wextra -Werror -I"$tmp/abi" -I"$s/loader" "$tmp/out/tests/bindings/layout.c" \
    -o "$tmp/layout" || bad "the generated layout program does not build against the copy"
  "$tmp/layout" >"$tmp/layout.txt" || bad "the generated layout program failed"
  for fact in "field t4a_gpu_backend_v1.future_fill $base 8" "field t4a_gpu_backend_v1.future_info $second 8" \
    "struct t4a_gpu_backend_v1 $total 8" "struct t4a_future_info 24 8" "const T4A_EFUTURE -25" \
    "const T4A_FUTURE_INFO_V1_9_SIZE 24"; do
    grep -qx "$fact" "$tmp/layout.txt" || bad "C: '$fact' not printed"
  done
fi

# (c) an untranslatable declaration is an error naming it.
sed 's|^typedef struct t4a_runtime {|union t4a_odd { int a; float b; };\n&|' \
  "$s/abi/t4a/gpu_backend_v1.h" >"$tmp/odd.h"
if python3 "$s/bindgen/t4a_bindgen.py" --srcdir "$s" --backend-header "$tmp/odd.h" \
  --out-dir "$tmp/odd" >"$tmp/err" 2>&1; then
  bad "the generator accepted a union it cannot translate"
else
  grep -q "union t4a_odd" "$tmp/err" || { cat "$tmp/err"; bad "the error does not name the declaration"; }
fi

# (d) versions.
version=$(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' "$s/configure.ac")
grep -qx "version = \"$version\"" "$s/python/pyproject.toml" || bad "python/pyproject.toml is not version $version"
grep -qx "version = \"$version\"" "$s/rust/Cargo.toml" || bad "rust/Cargo.toml is not version $version"
grep -qx "__version__ = \"$version\"" "$s/python/t4a_gpu/__init__.py" || bad "t4a_gpu.__version__ is not $version"

[ $fail -eq 0 ] && echo "PASS: the bindings match the headers and follow an appended slot"
exit $fail
