/* python/t4a_gpu/_fastcall.c -- the optional compiled fast path of the
 * package's hottest calls (docs/design.md, "Python: the compiled fast
 * path").
 *
 * Why: a call through ctypes costs about 0.6 us on its own (argument
 * objects, libffi), and packing a launch's arguments in Python another
 * microsecond; a launch of an empty kernel through CuPy or cuda.core
 * (Cython) costs 4-5 us in all on an H200 host. This module does the same
 * calls from C: the table slot by its address, the arguments packed on the
 * C stack, the GIL released around the call as ctypes releases it.
 *
 * It is optional: the package is pure Python, and without this module (no
 * compiler at install time, or T4A_PY_FASTCALL=0) every call takes the
 * ctypes route, with the same results. Each function here does only the
 * common case; where anything is unusual (a value of another type, out of
 * range, a closed buffer) it returns None having called nothing, and the
 * caller takes the Python route, which raises the precise error. The
 * package's suite runs both routes (python/tests: FastcallRoutes).
 *
 *   launch(slot, rt, fn, cfg, spec, args, buffer_type, runtime) -> status | None
 *     slot: the launch slot's address; rt, fn: the handles' bits; cfg: the
 *     address of a t4a_launch_config; spec: the plan's packing (bytes, see
 *     below); args: the argument tuple; buffer_type: t4a_gpu.Buffer;
 *     runtime: the Runtime a Buffer argument must belong to.
 *   buffer_alloc(slot, rt, nbytes) -> (status, bits)
 *   buffer_free(slot, rt, buf) -> status
 *
 * A plan's spec (t4a_gpu._launch.Plan.fast_spec): a little-endian uint32,
 * the bytes the arguments take, then 4 bytes per argument: its struct
 * format code (b B h H i I q Q f d, or P for a pointer: an int, or a live
 * Buffer of `runtime`), a zero byte, and its offset as a little-endian
 * uint16. Values are written as t4a_gpu._launch's struct.Struct writes
 * them: little-endian, at those offsets, padding zeroed. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_fastcall.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "t4a_gpu._fastcall writes the little-endian layout of t4a_gpu._launch (struct '<')"
#endif

static PyObject *s_runtime, *s_addr, *s_node, *s_alive; /* interned attribute names */

/* An int argument as uint64 (addresses, handles); false (no exception set)
 * when it is not an exact int in [0, 2^64). */
static int as_u64(PyObject *o, uint64_t *out) {
  if (!PyLong_CheckExact(o))
    return 0;
  unsigned long long v = PyLong_AsUnsignedLongLong(o);
  if (v == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    return 0;
  }
  *out = v;
  return 1;
}

/* A Buffer argument's device address: a Buffer of `runtime`, open, its
 * address known (what the Python route's fast case takes). */
static int buffer_address(PyObject *b, PyObject *runtime, uint64_t *out) {
  int ok = 0;
  PyObject *rt = PyObject_GetAttr(b, s_runtime);
  PyObject *addr = rt == runtime ? PyObject_GetAttr(b, s_addr) : NULL;
  PyObject *node = addr && addr != Py_None ? PyObject_GetAttr(b, s_node) : NULL;
  PyObject *alive = node ? PyObject_GetAttr(node, s_alive) : NULL;
  if (alive == Py_True)
    ok = as_u64(addr, out);
  Py_XDECREF(alive);
  Py_XDECREF(node);
  Py_XDECREF(addr);
  Py_XDECREF(rt);
  if (PyErr_Occurred())
    PyErr_Clear();
  return ok;
}

/* One argument packed at dst by its format code; false (nothing raised)
 * when the value needs the Python route. */
static int pack_one(char code, PyObject *v, unsigned char *dst, PyObject *buffer_type,
                    PyObject *runtime) {
  if (code == 'f' || code == 'd') {
    double d;
    if (PyFloat_CheckExact(v))
      d = PyFloat_AS_DOUBLE(v);
    else if (PyLong_CheckExact(v)) {
      d = PyLong_AsDouble(v);
      if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
      }
    } else
      return 0;
    if (code == 'd') {
      memcpy(dst, &d, 8);
      return 1;
    }
    float f = (float)d;
    if (isinf(f) && !isinf(d)) /* struct.pack('f') raises OverflowError */
      return 0;
    memcpy(dst, &f, 4);
    return 1;
  }
  if (code == 'P') {
    uint64_t a;
    if (Py_TYPE(v) == (PyTypeObject *)buffer_type) {
      if (!buffer_address(v, runtime, &a))
        return 0;
    } else if (!as_u64(v, &a))
      return 0;
    memcpy(dst, &a, 8);
    return 1;
  }
  if (!PyLong_CheckExact(v))
    return 0;
  if (code == 'Q') {
    uint64_t u;
    if (!as_u64(v, &u))
      return 0;
    memcpy(dst, &u, 8);
    return 1;
  }
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (overflow || (x == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return 0;
  }
  switch (code) {
  case 'q': memcpy(dst, &x, 8); return 1;
  case 'i':
    if (x < INT32_MIN || x > INT32_MAX)
      return 0;
    memcpy(dst, &(int32_t){(int32_t)x}, 4);
    return 1;
  case 'I':
    if (x < 0 || x > (long long)UINT32_MAX)
      return 0;
    memcpy(dst, &(uint32_t){(uint32_t)x}, 4);
    return 1;
  case 'h':
    if (x < INT16_MIN || x > INT16_MAX)
      return 0;
    memcpy(dst, &(int16_t){(int16_t)x}, 2);
    return 1;
  case 'H':
    if (x < 0 || x > UINT16_MAX)
      return 0;
    memcpy(dst, &(uint16_t){(uint16_t)x}, 2);
    return 1;
  case 'b':
    if (x < INT8_MIN || x > INT8_MAX)
      return 0;
    *dst = (unsigned char)(int8_t)x;
    return 1;
  case 'B':
    if (x < 0 || x > UINT8_MAX)
      return 0;
    *dst = (unsigned char)x;
    return 1;
  default: return 0;
  }
}

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static PyObject *fc_launch(PyObject *self, PyObject *const *a, Py_ssize_t n) {
  (void)self;
  uint64_t slot, rt, fn, cfg;
  if (n != 8 || !PyBytes_CheckExact(a[4]) || !PyTuple_CheckExact(a[5]) || !PyType_Check(a[6])) {
    PyErr_SetString(PyExc_TypeError, "_fastcall.launch(slot, rt, fn, cfg, spec, args, "
                                     "buffer_type, runtime)");
    return NULL;
  }
  if (!as_u64(a[0], &slot) || !as_u64(a[1], &rt) || !as_u64(a[2], &fn) || !as_u64(a[3], &cfg) ||
      !slot || !cfg) {
    PyErr_SetString(PyExc_ValueError, "_fastcall.launch: slot, rt, fn and cfg are uint64 ints");
    return NULL;
  }
  const unsigned char *spec = (const unsigned char *)PyBytes_AS_STRING(a[4]);
  Py_ssize_t spec_len = PyBytes_GET_SIZE(a[4]);
  Py_ssize_t count = PyTuple_GET_SIZE(a[5]);
  if (spec_len < 4 || (spec_len - 4) % 4 != 0) {
    PyErr_SetString(PyExc_ValueError, "_fastcall.launch: a malformed spec");
    return NULL;
  }
  uint32_t size = le32(spec);
  if ((spec_len - 4) / 4 != count || count > T4A_PY_FAST_ARGS || size > T4A_PY_FAST_BYTES)
    Py_RETURN_NONE; /* a count the Python route reports, or a large list */
  _Alignas(16) unsigned char storage[T4A_PY_FAST_BYTES + T4A_PY_SLACK];
  void *ptrs[T4A_PY_FAST_ARGS > 0 ? T4A_PY_FAST_ARGS : 1];
  memset(storage, 0, (size_t)size + T4A_PY_SLACK);
  for (Py_ssize_t i = 0; i < count; i++) {
    const unsigned char *e = spec + 4 + 4 * i;
    uint32_t off = (uint32_t)e[2] | (uint32_t)e[3] << 8;
    if (off > size) {
      PyErr_SetString(PyExc_ValueError, "_fastcall.launch: an offset past the spec's size");
      return NULL;
    }
    if (!pack_one((char)e[0], PyTuple_GET_ITEM(a[5], i), storage + off, a[6], a[7]))
      Py_RETURN_NONE;
    ptrs[i] = storage + off;
  }
  if (count == 0)
    ptrs[0] = storage;
  t4a_py_launch_fn f = (t4a_py_launch_fn)(uintptr_t)slot;
  int rc;
  PyThreadState *ts = PyEval_SaveThread(); /* as ctypes: other threads run meanwhile */
  rc = f((t4a_runtime){rt}, (t4a_function){fn}, (const struct t4a_launch_config *)(uintptr_t)cfg,
         ptrs);
  PyEval_RestoreThread(ts);
  return PyLong_FromLong(rc);
}

/* The integer arguments of the other calls: n of them, each an exact int
 * in [0, 2^64). */
static int ints(PyObject *const *a, Py_ssize_t n, Py_ssize_t want, uint64_t *v, const char *what) {
  if (n != want) {
    PyErr_Format(PyExc_TypeError, "_fastcall.%s takes %zd arguments", what, want);
    return 0;
  }
  for (Py_ssize_t i = 0; i < n; i++)
    if (!as_u64(a[i], &v[i])) {
      PyErr_Format(PyExc_ValueError, "_fastcall.%s: argument %zd is not a uint64 int", what, i);
      return 0;
    }
  if (!v[0]) {
    PyErr_Format(PyExc_ValueError, "_fastcall.%s: no slot", what);
    return 0;
  }
  return 1;
}

static PyObject *fc_buffer_alloc(PyObject *self, PyObject *const *a, Py_ssize_t n) {
  (void)self;
  uint64_t v[3];
  if (!ints(a, n, 3, v, "buffer_alloc"))
    return NULL;
  t4a_buffer out = {0};
  int rc;
  t4a_py_buffer_alloc_fn f = (t4a_py_buffer_alloc_fn)(uintptr_t)v[0];
  PyThreadState *ts = PyEval_SaveThread();
  rc = f((t4a_runtime){v[1]}, v[2], &out);
  PyEval_RestoreThread(ts);
  return Py_BuildValue("(iK)", rc, (unsigned long long)out.bits);
}

static PyObject *fc_buffer_free(PyObject *self, PyObject *const *a, Py_ssize_t n) {
  (void)self;
  uint64_t v[3];
  if (!ints(a, n, 3, v, "buffer_free"))
    return NULL;
  int rc;
  t4a_py_buffer_free_fn f = (t4a_py_buffer_free_fn)(uintptr_t)v[0];
  PyThreadState *ts = PyEval_SaveThread();
  rc = f((t4a_runtime){v[1]}, (t4a_buffer){v[2]});
  PyEval_RestoreThread(ts);
  return PyLong_FromLong(rc);
}

static PyMethodDef methods[] = {
    {"launch", (PyCFunction)(void (*)(void))fc_launch, METH_FASTCALL,
     "launch(slot, rt, fn, cfg, spec, args, buffer_type, runtime) -> status, or None: take "
     "the Python route"},
    {"buffer_alloc", (PyCFunction)(void (*)(void))fc_buffer_alloc, METH_FASTCALL,
     "buffer_alloc(slot, rt, nbytes) -> (status, buffer bits)"},
    {"buffer_free", (PyCFunction)(void (*)(void))fc_buffer_free, METH_FASTCALL,
     "buffer_free(slot, rt, buf) -> status"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "_fastcall",
    "The compiled fast path of t4a_gpu's hottest calls (optional; see its source).",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL};

PyMODINIT_FUNC PyInit__fastcall(void) {
  s_runtime = PyUnicode_InternFromString("_runtime");
  s_addr = PyUnicode_InternFromString("_addr");
  s_node = PyUnicode_InternFromString("_node");
  s_alive = PyUnicode_InternFromString("alive");
  if (!s_runtime || !s_addr || !s_node || !s_alive)
    return NULL;
  return PyModule_Create(&module);
}
