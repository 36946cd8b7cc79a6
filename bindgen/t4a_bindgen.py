#!/usr/bin/env python3
"""bindgen/t4a_bindgen.py -- the Python and Rust bindings, generated from the headers.

The two public headers, abi/t4a/gpu_backend_v1.h and loader/t4a/gpu_loader.h,
are the contract; this script is the only place that turns them into other
languages, so a slot, struct, status or #define appended to a header reaches
both bindings by running it (`make bindings-regen`), with no hand edits:

  python/t4a_gpu/_abi.py       ctypes structures, handles, constants, statuses,
                               slot prototypes (CFUNCTYPE) and the loader's
                               function prototypes
  rust/src/sys.rs              #[repr(C)] structs, the table of
                               Option<unsafe extern "C" fn ...> slots,
                               constants, the Status enum, extern "C" loader
                               functions, compile-time size checks
  rust/tests/layout.rs         a test comparing every Rust field offset and
                               struct size with the C compiler's
  tests/bindings/layout.c      the C program printing those (sizeof/offsetof
                               of every struct and field, every constant)

Doc comments come from the header comments (man/gen-man.py's comment parser).
Output is deterministic; --check compares instead of writing and prints a
diff (tests/bindings/test_bindgen.sh runs it in `make check`).

  t4a_bindgen.py [--srcdir DIR] [--backend-header H] [--loader-header H]
                 (--out-dir DIR | --check)

--out-dir writes the four files under DIR (at the paths above); --check
compares them with the ones in --srcdir. Python 3 standard library only.

Supported C, which is what the headers use (anything else is an error that
names the declaration, never a silent omission): typedef'd structs of
fixed-width integers, int, bool, char, size_t, float, double, pointers
(const-qualified at any level), arrays of literal or #define'd length,
function pointers and other structs; handle structs (one uint64_t `bits`);
typedef'd enums; the table `struct t4a_gpu_backend_v1`; function pointer
typedefs; T4A_LOADER_API functions; object-like #defines with integer
expressions (suffixes u/U/l/L, <<, |, +, -, parentheses, other constants,
UINT64_MAX...) or strings; T4A_SIZE_THROUGH(type, field) sizes; and the
T4A_STATUS_MAP X-macro.
"""
import argparse
import difflib
import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATOR = "bindgen/t4a_bindgen.py"


def _gen_man():
    """man/gen-man.py as a module: its comment parser is shared, not copied."""
    spec = importlib.util.spec_from_file_location(
        "t4a_gen_man", os.path.join(HERE, "..", "man", "gen-man.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gen_man = _gen_man()
COMMENT = gen_man.COMMENT


class BindgenError(Exception):
    """A declaration the generator does not know how to translate."""


# ---------------------------------------------------------------------------
# C types.
# ---------------------------------------------------------------------------

# name: (LP64 size and alignment, Python ctypes, Rust)
PRIMS = {
    "uint8_t": (1, "c_uint8", "u8"), "int8_t": (1, "c_int8", "i8"),
    "uint16_t": (2, "c_uint16", "u16"), "int16_t": (2, "c_int16", "i16"),
    "uint32_t": (4, "c_uint32", "u32"), "int32_t": (4, "c_int32", "i32"),
    "uint64_t": (8, "c_uint64", "u64"), "int64_t": (8, "c_int64", "i64"),
    "int": (4, "c_int", "c_int"), "unsigned": (4, "c_uint", "c_uint"),
    "bool": (1, "c_bool", "bool"), "char": (1, "c_char", "c_char"),
    "size_t": (8, "c_size_t", "usize"), "float": (4, "c_float", "f32"),
    "double": (8, "c_double", "f64"), "void": (0, None, "c_void"),
}
POINTER_SIZE = 8  # LP64: x86-64 and aarch64 Linux, the targets of the backend


class CType:
    """kind: prim (name), named (name), ptr (inner, const = pointee is const),
    array (inner, n), fn (ret, params: [(name, CType)])."""

    def __init__(self, kind, name=None, inner=None, const=False, n=None, ret=None, params=None):
        self.kind, self.name, self.inner, self.const = kind, name, inner, const
        self.n, self.ret, self.params = n, ret, params

    def __repr__(self):
        return c_spelling(self, "")


def c_spelling(t, name):
    """The C declaration of `name` with type t (for messages and the layout program)."""
    if t.kind in ("prim", "named"):
        return (t.name + " " + name).strip()
    if t.kind == "array":
        return c_spelling(t.inner, "%s[%s]" % (name, t.n))
    if t.kind == "ptr":
        inner = t.inner
        return c_spelling(inner, "*" + ("const " if t.const and inner.kind != "ptr" else "") + name)
    return "%s (*%s)(...)" % (c_spelling(t.ret, ""), name)


def split_params(text):
    """Splits a parameter list at top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch in "([" and 1 or (ch in ")]" and -1 or 0)
        cur += ch
    if cur.strip():
        out.append(cur)
    return [p.strip() for p in out]


def parse_type(text, where):
    """'const char *const *' -> ptr(ptr(char, const), const)."""
    tokens = re.findall(r"\w+|\*|\S", text)
    const, base = False, None
    for tok in tokens:
        if tok == "const":
            const = True
        elif tok in ("struct", "enum", "volatile"):
            continue
        elif tok == "*":
            if base is None:
                raise BindgenError("%s: pointer without a type" % where)
            base = CType("ptr", inner=base, const=const)
            const = False  # a const after '*' qualifies the pointer itself
        elif re.fullmatch(r"\w+", tok):
            if base is not None:
                raise BindgenError("%s: cannot parse type '%s'" % (where, text))
            base = CType("prim" if tok in PRIMS else "named", name=tok)
        else:
            raise BindgenError("%s: unexpected '%s' in type '%s'" % (where, tok, text))
    if base is None:
        raise BindgenError("%s: no type in '%s'" % (where, text))
    # The leading const of 'const char *' belongs to the pointee.
    if base.kind == "ptr":
        innermost = base
        while innermost.inner.kind == "ptr":
            innermost = innermost.inner
        if re.match(r"\s*const\b", text):
            innermost.const = True
    return base


def parse_decl(text, where):
    """One declarator: 'int (*name)(params)' or 'type name[N]...' -> (name, CType)."""
    text = " ".join(text.split())
    f = re.fullmatch(r"(.+?)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\)", text)
    if f:
        ret, name, params = f.groups()
        return name, CType("fn", ret=parse_type(ret, where), params=parse_params(params, where))
    m = re.fullmatch(r"(.*?)(\w+)\s*((?:\[\s*\w+\s*\]\s*)*)", text)
    if not m or not m.group(1).strip():
        raise BindgenError("%s: cannot parse declaration '%s'" % (where, text))
    t = parse_type(m.group(1), where)
    for dim in reversed(re.findall(r"\[\s*(\w+)\s*\]", m.group(3))):
        t = CType("array", inner=t, n=dim)
    return m.group(2), t


def parse_params(text, where):
    if text.strip() in ("", "void"):
        return []
    return [parse_decl(p, "%s, parameter '%s'" % (where, p)) for p in split_params(text)]


# ---------------------------------------------------------------------------
# The header model.
# ---------------------------------------------------------------------------


class Field:
    def __init__(self, name, ctype, doc, group=None):
        self.name, self.ctype, self.doc, self.group = name, ctype, doc, group


class Struct:
    """kind: struct | handle | table | opaque."""

    def __init__(self, name, kind, fields, doc, origin):
        self.name, self.kind, self.fields, self.doc, self.origin = name, kind, fields, doc, origin


class Header:
    def __init__(self):
        self.top_doc = []
        self.items = []  # ("const", name, value, doc, ctype) | ("struct", Struct) | ...
        self.statuses = []  # (name, value, message)
        self.status_doc = []
        self.constants = {}  # name -> integer value (for expressions)


def doc_of(comments):
    """Doc lines of the comments before a declaration (gen-man's comment parser)."""
    lines = []
    for c in comments:
        text = [x for x in gen_man.comment_lines(c) if not re.fullmatch(r"-{10,}", x.strip())]
        if lines and text:
            lines.append("")
        lines += text
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    return lines


INT_EXPR = re.compile(r"^[\w\s()<>|&+\-~*]+$")
INT_LIMITS = {"UINT64_MAX": 2**64 - 1, "UINT32_MAX": 2**32 - 1, "INT32_MAX": 2**31 - 1,
              "INT64_MAX": 2**63 - 1, "UINT16_MAX": 2**16 - 1, "UINT8_MAX": 255}


def eval_int(expr, constants, where):
    """(value, width) of an integer #define: width 'u32', 'u64' or 'int'."""
    if not INT_EXPR.match(expr):
        raise BindgenError("%s: cannot translate '%s' (integer expressions only)" % (where, expr))
    width = "int"
    if re.search(r"\bUINT64_MAX\b|\d+[uU]?(?:LL|ll|L|l)\b", expr):
        width = "u64"
    elif re.search(r"\bUINT32_MAX\b|\b(?:0[xX][0-9a-fA-F]+|\d+)[uU]\b", expr):
        width = "u32"
    py = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)(?:[uU]|[lL]{1,2}|[uU][lL]{1,2}|[lL]{1,2}[uU])\b",
                r"\1", expr)

    def name(m):
        n = m.group(0)
        if re.fullmatch(r"0[xX][0-9a-fA-F]+|\d+", n):
            return n
        if n in INT_LIMITS:
            return str(INT_LIMITS[n])
        if n in constants:
            return "(%d)" % constants[n][0]
        raise BindgenError("%s: unknown name '%s' in '%s'" % (where, n, expr))

    py = re.sub(r"\b\w+\b", name, py)
    try:
        value = eval(py, {"__builtins__": {}}, {})  # digits and operators only (checked above)
    except Exception as e:  # noqa: BLE001 -- reported with the declaration
        raise BindgenError("%s: cannot evaluate '%s': %s" % (where, expr, e))
    for n in re.findall(r"\b[A-Z_]\w*\b", expr):  # a constant's width carries over
        if n in constants and constants[n][1] == "u64":
            width = "u64"
        elif n in constants and constants[n][1] == "u32" and width == "int":
            width = "u32"
    return value, width


def strip_conditionals(src):
    """The header without #ifdef __cplusplus blocks (C++ linkage lines)."""
    return re.sub(r"^#ifdef __cplusplus\n.*?^#endif\n", "", src, flags=re.S | re.M)


def parse_header(src, origin, model=None):
    """Parses one header into `model` (a Header), in declaration order."""
    h = model or Header()
    first = re.search(COMMENT, src, re.S)
    if model is None or not h.top_doc:
        h.top_doc = gen_man.comment_lines(first.group(0))
    text = strip_conditionals(src[first.end():])
    pos, pending = 0, []  # comments directly before the next declaration

    def line_of(p):
        return src.count("\n", 0, first.end() + p) + 1

    while True:
        m = re.compile(r"\s*").match(text, pos)
        gap, pos = m.group(0), m.end()
        if pos >= len(text):
            break
        if gap.count("\n") > 1:  # a blank line detaches section comments
            pending = []
        where = "%s:%d" % (origin, line_of(pos))
        c = re.compile(COMMENT, re.S).match(text, pos)
        if c:
            pending.append(c.group(0))
            pos = c.end()
            continue
        if text[pos] == "#":
            m = re.compile(r"#(?:[^\n]*\\\n)*[^\n]*").match(text, pos)
            pos = m.end()
            pending = parse_directive(h, m.group(0), pending, where) or []
            continue
        if text.startswith("static inline", pos):  # the status helpers: a C convenience
            body = text.index("{", pos)
            pos = match_brace(text, body) + 1
            pending = []
            continue
        end = statement_end(text, pos)
        stmt = text[pos:end]
        pos = end + 1
        trailing = re.compile(r"[ \t]*(%s)" % COMMENT, re.S).match(text, pos)
        if trailing:
            pos = trailing.end()
        # A framed comment ("/* ---- Handles ---- */") titles a section, not the
        # declaration after it.
        pending = [c for c in pending if not re.search(r"^\s*\*?\s*-{10,}", c, re.M)]
        parse_statement(h, stmt, doc_of(pending + ([trailing.group(1)] if trailing else [])),
                        origin, where)
        pending = []
    return h


def match_brace(text, at):
    depth = 0
    for i in range(at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    raise BindgenError("unbalanced braces")


def statement_end(text, pos):
    """Index of the ';' ending the statement at pos (braces and comments skipped)."""
    depth, i = 0, pos
    while i < len(text):
        if text.startswith("/*", i):
            i = text.index("*/", i) + 2
            continue
        ch = text[i]
        depth += (ch == "{") - (ch == "}")
        if ch == ";" and depth == 0:
            return i
        i += 1
    raise BindgenError("unterminated declaration at '%s'" % text[pos:pos + 40])


def parse_directive(h, d, pending, where):
    """#define NAME value; returns the comments still pending (None: consumed)."""
    d = d.replace("\\\n", " ")
    m = re.match(r"#\s*define\s+(\w+)(\(([^)]*)\))?[ \t]*(.*)$", d, re.S)
    if not m:
        return pending  # #ifndef, #include, #if, #endif: no binding
    name, func, value = m.group(1), m.group(2), m.group(4).strip()
    trailing = re.search(r"(%s)\s*$" % COMMENT, value, re.S)
    if trailing:
        value = value[:trailing.start()].strip()
    doc = doc_of(pending + ([trailing.group(1)] if trailing else []))
    if name == "T4A_STATUS_MAP":
        h.status_doc = doc
        for n, v, msg in re.findall(r'X\((\w+),\s*(-?\d+),\s*"([^"]*)"\)', value):
            h.statuses.append(("T4A_" + n, int(v), msg))
            h.constants["T4A_" + n] = (int(v), "int")
        if not h.statuses:
            raise BindgenError("%s: T4A_STATUS_MAP has no X(NAME, value, message) entry" % where)
        return None
    if func:  # function-like macros are C conveniences (HAS, SIZE_THROUGH)
        return None
    if not value or "__attribute__" in value or name.endswith("_H") or name.startswith("T4A__"):
        return None  # include guards, visibility attributes, internals
    s = re.fullmatch(r'"((?:[^"\\]|\\.)*)"', value)
    if s:
        h.items.append(("const", name, s.group(1), doc, "str"))
        return None
    t = re.fullmatch(r"T4A_SIZE_THROUGH\(\s*(\w+)\s*,\s*(\w+)\s*\)", value)
    if t:
        h.items.append(("size_through", name, (t.group(1), t.group(2)), doc, None))
        return None
    v, width = eval_int(value, h.constants, "%s: #define %s" % (where, name))
    h.constants[name] = (v, width)
    h.items.append(("const", name, v, doc, width))
    return None


def parse_statement(h, stmt, doc, origin, where):
    s = " ".join(stmt.split()) if "{" not in stmt else stmt.strip()
    if re.fullmatch(r"enum t4a_status \{.*\}", s, re.S):
        return  # the enum the X-macro makes: the statuses are taken from the map
    m = re.fullmatch(r"typedef struct (\w+) (\w+)", s)
    if m:  # forward declaration: opaque unless defined later
        h.items.append(("forward", m.group(1), None, doc, origin))
        return
    m = re.fullmatch(r"(typedef )?struct (\w+)\s*\{(.*)\}\s*(\w*)", s, re.S)
    if m:
        typedef, name, body, alias = m.groups()
        if typedef and alias != name:
            raise BindgenError("%s: struct %s is typedef'd as %s (names must match)"
                               % (where, name, alias))
        fields = parse_fields(body, name, where)
        kind = "struct"
        if [(f.name, repr(f.ctype)) for f in fields] == [("bits", "uint64_t")]:
            kind = "handle"
        if name == "t4a_gpu_backend_v1":  # the function table (other structs may hold
            kind = "table"                 # a function pointer: a callback, a deleter)
        h.items.append(("struct", Struct(name, kind, fields, doc, origin)))
        return
    m = re.fullmatch(r"typedef enum (\w+)\s*\{(.*)\}\s*(\w+)", s, re.S)
    if m:
        name, body, alias = m.groups()
        body = re.sub(COMMENT, "", body, flags=re.S)
        values, nxt = [], 0
        for entry in split_params(body):
            e = re.fullmatch(r"(\w+)(?:\s*=\s*(.+))?", entry.strip())
            if not e:
                raise BindgenError("%s: enum %s: cannot parse '%s'" % (where, name, entry))
            v = eval_int(e.group(2), h.constants, where)[0] if e.group(2) else nxt
            h.constants[e.group(1)] = (v, "int")
            values.append((e.group(1), v))
            nxt = v + 1
        h.items.append(("enum", alias, values, doc, origin))
        return
    m = re.fullmatch(r"typedef (.+?)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\)", s)
    if m:
        name, t = parse_decl(s[len("typedef "):], where)
        h.items.append(("fntype", name, t, doc, origin))
        return
    m = re.fullmatch(r"T4A_LOADER_API (.+?)(\w+)\((.*)\)", s)
    if m:
        ret, name, params = m.groups()
        if not doc:  # declared right after another: shares its comment (gen-man's rule)
            doc = next((i[3] for i in reversed(h.items) if i[0] == "function"), [])
        h.items.append(("function", name,
                        CType("fn", ret=parse_type(ret, where),
                              params=parse_params(params, "%s: %s" % (where, name))), doc, origin))
        return
    raise BindgenError("%s: no binding for the declaration '%s'; teach %s about it"
                       % (where, s[:80], GENERATOR))


def parse_fields(body, struct, where):
    """Fields of a struct body with their docs. A member's doc is the comments
    since the previous member plus its trailing comment; a function pointer
    member without a comment of its own shares the previous one's (the
    header's "a / b: ..." style); group markers ("-- errors (v1.0) ---")
    become the group of the members after them."""
    fields, pending, group, last_fn_doc = [], [], None, []
    pos = 0
    while True:
        m = re.compile(r"\s*").match(body, pos)
        pos = m.end()
        if pos >= len(body):
            break
        c = re.compile(COMMENT, re.S).match(body, pos)
        if c:
            lines = gen_man.comment_lines(c.group(0))
            g = re.match(r"-- (.+?)\s*-{3,}$", lines[0]) if lines else None
            if g:
                group = g.group(1)
                rest = "\n".join(lines[1:]).strip("\n")
                pending = [("/*" + rest.replace("*/", "* /") + "*/")] if rest else []
            else:
                pending.append(c.group(0))
            pos = c.end()
            continue
        end = statement_end(body, pos)
        decl = re.sub(COMMENT, " ", body[pos:end], flags=re.S)
        pos = end + 1
        trailing = re.compile(r"[ \t]*(%s)" % COMMENT, re.S).match(body, pos)
        if trailing:
            pos = trailing.end()
        name, t = parse_decl(decl, "%s: struct %s" % (where, struct))
        doc = doc_of(pending + ([trailing.group(1)] if trailing else []))
        if t.kind == "fn":
            doc = doc or last_fn_doc
            last_fn_doc = doc
        fields.append(Field(name, t, doc, group))
        pending = []
    return fields


def load(backend_path, loader_path):
    h = Header()
    with open(backend_path) as f:
        parse_header(f.read(), "abi/t4a/gpu_backend_v1.h", h)
    top = h.top_doc
    with open(loader_path) as f:
        parse_header(f.read(), "loader/t4a/gpu_loader.h", h)
    h.top_doc = top
    # A forward declaration whose struct is defined later is not opaque.
    defined = {i[1].name for i in h.items if i[0] == "struct"}
    h.items = [i for i in h.items if not (i[0] == "forward" and i[1] in defined)]
    h.structs = {i[1].name: i[1] for i in h.items if i[0] == "struct"}
    h.enums = {i[1]: i[2] for i in h.items if i[0] == "enum"}
    h.opaque = {i[1] for i in h.items if i[0] == "forward"}
    h.fntypes = {i[1] for i in h.items if i[0] == "fntype"}
    for kind, name, value, _, _ in (i for i in h.items if i[0] == "size_through"):
        s, field = value
        if s not in h.structs or field not in [f.name for f in h.structs[s].fields]:
            raise BindgenError("#define %s: T4A_SIZE_THROUGH(%s, %s) names no field"
                               % (name, s, field))
    compute_layout(h)
    return h


# ---------------------------------------------------------------------------
# LP64 layout (what a C compiler does on x86-64/aarch64 Linux), used for
# Rust's compile-time size checks and frozen-size constants. The layout test
# compares every number with the C compiler's.
# ---------------------------------------------------------------------------


def size_align(h, t):
    if t.kind == "prim":
        n = PRIMS[t.name][0]
        return n, n
    if t.kind in ("ptr", "fn"):
        return POINTER_SIZE, POINTER_SIZE
    if t.kind == "array":
        s, a = size_align(h, t.inner)
        return s * array_len(h, t), a
    if t.name in h.enums:
        return 4, 4
    if t.name in h.structs:
        s = h.structs[t.name]
        return s.size, s.align
    raise BindgenError("type %s is used by value but not defined" % t.name)


def array_len(h, t):
    return int(t.n) if t.n.isdigit() else h.constants[t.n][0]


def compute_layout(h):
    for s in h.structs.values():
        off, align = 0, 1
        for f in s.fields:
            fs, fa = size_align(h, f.ctype)
            off = (off + fa - 1) // fa * fa
            f.offset, f.size = off, fs
            off += fs
            align = max(align, fa)
        s.size, s.align = (off + align - 1) // align * align, align


# ---------------------------------------------------------------------------
# Python (ctypes).
# ---------------------------------------------------------------------------


def py_type(h, t):
    if t.kind == "prim":
        if t.name == "void":
            return "None"
        return PRIMS[t.name][1]
    if t.kind == "named":
        if t.name in h.enums:
            return "c_int"  # C enums of this ABI are int-sized
        return t.name
    if t.kind == "array":
        return "%s * %s" % (py_type(h, t.inner), t.n)
    if t.kind == "fn":
        return "CFUNCTYPE(%s)" % ", ".join([py_type(h, t.ret)] +
                                           [py_type(h, p) for _, p in t.params])
    inner = t.inner
    if inner.kind == "prim" and inner.name == "char":
        return "c_char_p"
    if inner.kind == "prim" and inner.name == "void":
        return "c_void_p"
    if inner.kind == "fn":
        raise BindgenError("pointer to a function pointer")
    return "POINTER(%s)" % py_type(h, inner)


def py_comment(doc, indent):
    return ["%s# %s" % (indent, line) if line.strip() else indent + "#" for line in doc]


def py_docstring(doc, indent):
    if not doc:
        return []
    text = [line.replace("\\", "\\\\").replace('"""', '\\"\\"\\"') for line in doc]
    if len(text) == 1:
        return ['%s"""%s"""' % (indent, text[0])]
    return ['%s"""%s' % (indent, text[0])] + [(indent + x).rstrip() for x in text[1:]] + \
        ['%s"""' % indent]


def py_wrap(head, parts, tail, indent, width=99):
    """'head(part, part)tail' on one line, or one part per line."""
    one = "%s%s%s%s" % (indent, head, ", ".join(parts), tail)
    if len(one) <= width:
        return [one]
    return ["%s%s" % (indent, head)] + ["%s    %s," % (indent, p) for p in parts] + \
        ["%s%s" % (indent, tail)]


def python_module(h):
    out = ['"""t4a_gpu._abi -- the C ABI as ctypes declarations.',
           "",
           "GENERATED by %s from abi/t4a/gpu_backend_v1.h and" % GENERATOR,
           "loader/t4a/gpu_loader.h: do not edit; run `make bindings-regen`. Every",
           "struct, handle, constant, status, table slot and loader function of the",
           "headers is here, in header order, with the header's comments. The",
           "idiomatic API (t4a_gpu.Backend, ...) is built on it.",
           "",
           "Layouts are ctypes' (the C compiler's on every platform ctypes supports);",
           "tests/bindings compares them with the C compiler's sizeof/offsetof.",
           '"""',
           "@IMPORTS@",
           "",
           "__all__ = []  # filled below: every generated name",
           "",
           "",
           "def _export(*names):",
           "    __all__.extend(names)",
           "",
           ""]
    out += ["# " + "-" * 75,
            "# Statuses (T4A_STATUS_MAP): (name, value, message), in header order.",
            "# " + "-" * 75]
    out += py_comment(h.status_doc, "")
    out.append("STATUSES = (")
    for n, v, msg in h.statuses:
        out.append("    (%r, %d, %r)," % (n, v, msg))
    out.append(")")
    for n, v, _ in h.statuses:
        out.append("%s = %d" % (n, v))
    out += ["_export('STATUSES', *[s[0] for s in STATUSES])", "", ""]
    out += ["class Handle(Structure):",
            '    """Base of the handle structs: a 64-bit value, all-zero = null (false)."""',
            "",
            "    def __bool__(self):",
            "        return self.bits != 0",
            "",
            "    def __eq__(self, other):",
            "        return type(self) is type(other) and self.bits == other.bits",
            "",
            "    def __hash__(self):",
            "        return hash((type(self).__name__, self.bits))",
            "",
            "    def __repr__(self):",
            '        return "%s(0x%016x)" % (type(self).__name__, self.bits)',
            "", "",
            "class Opaque(Structure):",
            '    """Base of the opaque structs, only ever used behind a pointer."""',
            "", "",
            "_export('Handle', 'Opaque')",
            "STRUCTS = []  # every struct class in header order (handles, info structs, the table)",
            "", ""]
    frozen = []
    for item in h.items:
        kind = item[0]
        if kind == "const":
            _, name, value, doc, width = item
            out += py_comment(doc, "")
            out.append("%s = %s" % (name, repr(value) if width == "str" else
                                    (hex(value) if value > 9 and width != "int" else str(value))))
            out.append("_export(%r)" % name)
        elif kind == "enum":
            _, name, values, doc, _ = item
            out += py_comment(doc, "")
            out.append("%s = c_int  # a C enum (int-sized)" % name)
            for n, v in values:
                out.append("%s = %d" % (n, v))
            out.append("_export(%s)" % ", ".join(repr(x) for x in [name] + [n for n, _ in values]))
        elif kind == "forward":
            _, name, _, doc, _ = item
            out += ["", "class %s(Opaque):" % name] + (py_docstring(doc, "    ") or ["    pass"])
            out += ["", "", "_export(%r)" % name]
        elif kind == "struct":
            s = item[1]
            out += ["", "class %s(%s):" % (s.name, "Handle" if s.kind == "handle" else "Structure")]
            # A struct naming itself (a deleter taking a pointer to it) gets its
            # fields once the class exists.
            own = any(re.search(r"\b%s\b" % s.name, py_type(h, f.ctype)) for f in s.fields
                      if f.ctype.kind != "fn") or any(
                re.search(r"\b%s\b" % s.name, py_type(h, p))
                for f in s.fields if f.ctype.kind == "fn" for _, p in f.ctype.params)
            if own:
                out += (py_docstring(s.doc, "    ") or ["    pass"]) + ["", ""]
                out += ["%s._fields_ = [" % s.name]
                indent = "    "
            else:
                out += py_docstring(s.doc, "    ") + ["    _fields_ = ["]
                indent = "        "
            group = None
            for f in s.fields:
                if f.group != group:
                    group = f.group
                    out.append("%s# -- %s" % (indent, group))
                out += py_comment(f.doc, indent)
                if f.ctype.kind == "fn":
                    out += py_wrap("(%r, CFUNCTYPE(" % f.name,
                                   [py_type(h, f.ctype.ret)] +
                                   [py_type(h, p) for _, p in f.ctype.params], ")),", indent)
                else:
                    out.append("%s(%r, %s)," % (indent, f.name, py_type(h, f.ctype)))
            out += [indent[:-4] + "]", "", "", "STRUCTS.append(%s)" % s.name,
                    "_export(%r)" % s.name]
        elif kind == "fntype":
            _, name, t, doc, _ = item
            out += py_comment(doc, "")
            out += py_wrap("%s = CFUNCTYPE(" % name, [py_type(h, t.ret)] +
                           [py_type(h, p) for _, p in t.params], ")", "")
            out.append("_export(%r)" % name)
        elif kind == "size_through":
            frozen.append(item)
        elif kind == "function":
            pass  # below
        out.append("")
    out += ["", "def size_through(cls, field):",
            '    """T4A_SIZE_THROUGH(cls, field): bytes from the start of cls to the end of',
            '    field."""',
            "    f = getattr(cls, field)",
            "    return f.offset + f.size",
            "", "",
            "# The frozen v1.0 sizes: {struct name: (constant, last v1.0 field)}.",
            "FROZEN_SIZES = {"]
    for _, name, (s, field), doc, _ in frozen:
        out.append("    %r: (%r, %r)," % (s, name, field))
    out.append("}")
    for _, name, (s, field), doc, _ in frozen:
        out += py_comment(doc, "")
        out.append("%s = size_through(%s, %r)" % (name, s, field))
    out += ["_export('size_through', 'FROZEN_SIZES', *[v[0] for v in FROZEN_SIZES.values()])",
            "",
            "# The loader library's functions: (name, restype, argtypes, parameter names,",
            "# doc).",
            "LOADER_FUNCTIONS = ("]
    for item in h.items:
        if item[0] != "function":
            continue
        _, name, t, doc, _ = item
        out += py_comment(doc, "    ")
        out += py_wrap("(%r, %s, [" % (name, py_type(h, t.ret)),
                       [py_type(h, p) for _, p in t.params], "],", "    ")
        out.append("     %s," % repr(tuple(n for n, _ in t.params)))
        out += py_str(doc, "     ", "),")
    out += [")", "_export('LOADER_FUNCTIONS')", "",
            "# Doc text of every table slot, from the header.",
            "SLOT_DOCS = {"]
    table = [s for s in h.structs.values() if s.kind == "table"]
    for s in table:
        for f in s.fields:
            if f.ctype.kind == "fn":
                out += py_str(f.doc, "    %r: " % f.name, ",")
    out += ["}", "_export('SLOT_DOCS')", ""]
    text = re.sub(r"\n{4,}", "\n\n\n", "\n".join(out))
    # the ctypes names the code uses (not the comments, docstrings or strings)
    code = re.sub(r'"""(?:.|\n)*?"""|#[^\n]*|\'(?:[^\'\\\n]|\\.)*\'', "", text)
    used = sorted(set(re.findall(r"\b(CFUNCTYPE|POINTER|Structure|c_\w+)\b", code)),
                  key=lambda n: (n[0].islower(), n))
    imports = py_wrap("from ctypes import (", used, ")", "", 99)
    if len(imports) > 1:  # one continuation line per name is long: fill lines instead
        imports, line = [], "from ctypes import ("
        for i, n in enumerate(used):
            piece = n + (", " if i + 1 < len(used) else ")")
            if len(line + piece.rstrip()) > 99:
                imports.append(line.rstrip())
                line = " " * len("from ctypes import (")
            line += piece
        imports.append(line)
    return text.replace("@IMPORTS@", "\n".join(imports)).rstrip("\n") + "\n"


def py_str(doc, head, tail):
    """A doc as a Python string literal: one short line, or adjacent literals."""
    text = "\n".join(doc)
    if len(head + repr(text) + tail) <= 99:
        return [head + repr(text) + tail]
    lines = [x + "\n" for x in doc[:-1]] + doc[-1:]
    indent = " " * (len(head) - len(head.lstrip()) + 4)
    return [head + "("] + [indent + repr(x) for x in lines[:-1]] + \
        [indent + repr(lines[-1]) + ")" + tail]


# ---------------------------------------------------------------------------
# Rust.
# ---------------------------------------------------------------------------

RUST_KEYWORDS = {"type", "fn", "ref", "move", "match", "impl", "mod", "use", "loop", "box", "in",
                 "self", "super", "crate", "where", "async", "await", "dyn", "abstract", "final"}


def rs_ident(name):
    return "r#" + name if name in RUST_KEYWORDS else name


def rs_type(h, t):
    if t.kind == "prim":
        return PRIMS[t.name][2]
    if t.kind == "named":
        return t.name
    if t.kind == "array":
        # a #define'd length is a c_int constant in Rust: cast it
        return "[%s; %s]" % (rs_type(h, t.inner), t.n if t.n.isdigit() else t.n + " as usize")
    if t.kind == "fn":
        return "Option<%s>" % rs_fn(h, t)
    return ("*const " if t.const else "*mut ") + rs_type(h, t.inner)


def rs_fn(h, t, names=False):
    params = ", ".join(("%s: " % rs_ident(n) if names else "") + rs_type(h, p) for n, p in t.params)
    ret = "" if t.ret.kind == "prim" and t.ret.name == "void" else " -> " + rs_type(h, t.ret)
    return 'unsafe extern "C" fn(%s)%s' % (params, ret)


RS_URL = re.compile(r"https?://[^\s)>\]]*[^\s)>\].,;:]")


def rs_markdown(text):
    """The header's comment text as rustdoc Markdown that says the same:
    outside `code spans`, the brackets of what rustdoc would take for a link
    are escaped (strides[0]), a '<' that would open an HTML tag too (<what
    failed>), and a bare URL becomes <URL> (a link). Text inside code spans
    is left as it is."""
    out = []
    for i, part in enumerate(re.split(r"(`[^`]*`)", text)):
        if i % 2:  # a code span
            out.append(part)
            continue
        pieces = RS_URL.split(part)
        urls = RS_URL.findall(part)
        for j, piece in enumerate(pieces):
            piece = re.sub(r"\[([^\]\s,]*)\]", r"\\[\1\\]", piece)  # [0]: read as a link
            out.append(re.sub(r"<(?=[A-Za-z/])", r"\\<", piece))  # <what>: read as a tag
            if j < len(urls):
                out.append("<%s>" % urls[j])
    return "".join(out)


def rs_doc(doc, indent, inner=False):
    """/// lines; a doc with indented lines is fenced as text so that rustdoc
    neither reads them as Markdown code nor runs them as doctests; any other
    is Markdown (rs_markdown), so that cargo doc warns of nothing."""
    mark = "//!" if inner else "///"
    if not doc:
        return []
    lines = list(doc)
    if any(re.match(r"\s{4}", x) for x in lines) or inner:
        lines = ["```text"] + lines + ["```"]
    else:
        lines = rs_markdown("\n".join(lines)).split("\n")
    return [("%s%s %s" % (indent, mark, x)).rstrip() for x in lines]


def rs_int(value, width):
    if width == "str":
        return "&str", '"%s"' % value
    t = {"u64": "u64", "u32": "u32", "int": "c_int"}[width]
    if width == "u64" and value == 2**64 - 1:
        return t, "u64::MAX"
    return t, (hex(value) if value > 9 and width != "int" else str(value))


def rust_module(h):
    out = ["//! The C ABI of <t4a/gpu_backend_v1.h> and <t4a/gpu_loader.h>, declared for Rust.",
           "//!",
           "//! GENERATED by `%s` from the headers: do not edit; run" % GENERATOR,
           "//! `make bindings-regen`. Every struct, handle, constant, status, table slot",
           "//! and loader function of the headers is here, in header order, with the",
           "//! header's comments. The safe layer (the crate root) is built on it.",
           "//!",
           "//! Layout: the structs are `#[repr(C)]`; their sizes are checked at compile",
           "//! time against the LP64 layout (x86-64 and aarch64 Linux, the backend's",
           "//! targets), and `tests/layout.rs` compares every field offset with the C",
           "//! compiler's. Table slots are `Option<unsafe extern \"C\" fn ...>`: a NULL",
           "//! slot (unsupported, or beyond the plugin's struct_size in the loader's",
           "//! normalised table) is `None`.",
           "//!",
           "//! The header's own introduction:",
           "//!"]
    out += rs_doc(h.top_doc, "", inner=True)
    out += ["#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case)]",
            "#![allow(clippy::all)]",
            "",
            "pub use std::os::raw::{c_char, c_int, c_uint, c_void};",
            "",
            "// ---------------------------------------------------------------------------",
            "// Statuses (T4A_STATUS_MAP).",
            "// ---------------------------------------------------------------------------"]
    for n, v, msg in h.statuses:
        out += ["/// %s" % rs_markdown(msg), "pub const %s: c_int = %d;" % (n, v)]
    out += ["", "/// Every status of `T4A_STATUS_MAP`: (name, value, message), in header order.",
            "pub const STATUSES: &[(&str, c_int, &str)] = &["]
    for n, v, msg in h.statuses:
        out.append('    ("%s", %d, "%s"),' % (n, v, msg.replace("\\", "\\\\").replace('"', '\\"')))
    out += ["];", ""]
    out += rs_doc(h.status_doc, "")
    out += ["///",
            "/// `Unknown` holds a value this header does not list (a newer plugin's).",
            "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]",
            "pub enum Status {"]
    for n, v, msg in h.statuses:
        out += ["    /// `%s` (%d): %s" % (n, v, rs_markdown(msg)), "    %s," % n[4:]]
    out += ["    /// A status this header does not list.", "    Unknown(c_int),", "}", "",
            "impl Status {",
            "    /// The status of a returned code.",
            "    pub fn from_code(code: c_int) -> Status {",
            "        match code {"]
    out += ["            %d => Status::%s," % (v, n[4:]) for n, v, _ in h.statuses]
    out += ["            other => Status::Unknown(other),", "        }", "    }", "",
            "    /// The code (`T4A_*`).",
            "    pub fn code(self) -> c_int {",
            "        match self {"]
    out += ["            Status::%s => %d," % (n[4:], v) for n, v, _ in h.statuses]
    out += ["            Status::Unknown(code) => code,", "        }", "    }", "",
            '    /// The name, as t4a_status_name gives it ("T4A_EINVAL"; "T4A_UNKNOWN").',
            "    pub fn name(self) -> &'static str {",
            "        match self {"]
    out += ['            Status::%s => "%s",' % (n[4:], n) for n, v, _ in h.statuses]
    out += ['            Status::Unknown(_) => "T4A_UNKNOWN",', "        }", "    }", "",
            '    /// The one-line message, as t4a_status_message gives it.',
            "    pub fn message(self) -> &'static str {",
            "        match self {"]
    out += ['            Status::%s => "%s",' % (n[4:], m.replace('"', '\\"'))
            for n, v, m in h.statuses]
    out += ['            Status::Unknown(_) => "unknown status",', "        }", "    }", "}", ""]
    sizes = []
    for item in h.items:
        kind = item[0]
        if kind == "const":
            _, name, value, doc, width = item
            t, v = rs_int(value, width)
            out += rs_doc(doc, "") + ["pub const %s: %s = %s;" % (name, t, v), ""]
        elif kind == "enum":
            _, name, values, doc, _ = item
            out += rs_doc(doc, "") + ["pub type %s = c_int;" % name]
            out += ["pub const %s: %s = %d;" % (n, name, v) for n, v in values] + [""]
        elif kind == "forward":
            _, name, _, doc, _ = item
            out += rs_doc(doc, "") + ["#[repr(C)]", "pub struct %s {" % name,
                                      "    _private: [u8; 0],", "}", ""]
        elif kind == "fntype":
            _, name, t, doc, _ = item
            out += rs_doc(doc, "") + ["pub type %s = Option<%s>;" % (name, rs_fn(h, t, True)), ""]
        elif kind == "size_through":
            _, name, (s, field), doc, _ = item
            f = [x for x in h.structs[s].fields if x.name == field][0]
            out += rs_doc(doc, "")
            out += ["///", "/// `T4A_SIZE_THROUGH(%s, %s)` (LP64)." % (s, field),
                    "pub const %s: usize = %d;" % (name, f.offset + f.size), ""]
        elif kind == "struct":
            s = item[1]
            sizes.append(s)
            out += rs_doc(s.doc, "") + ["#[repr(C)]"]
            if s.kind == "handle":
                out += ["#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]"]
            else:
                out += ["#[derive(Clone, Copy, Debug)]"]
            out.append("pub struct %s {" % s.name)
            group = None
            for f in s.fields:
                if f.group != group:
                    group = f.group
                    out.append("    // -- %s" % group)
                out += rs_doc(f.doc, "    ")
                out.append("    pub %s: %s," % (rs_ident(f.name),
                                                rs_fn_field(h, f) if f.ctype.kind == "fn"
                                                else rs_type(h, f.ctype)))
            out += ["}", ""]
            if s.kind != "handle":
                out += ["impl Default for %s {" % s.name,
                        "    /// All zero: every field is an integer, a float, a bool, a raw",
                        "    /// pointer, an optional function pointer or an array or handle",
                        "    /// of those, for which all-zero bits are a valid value (0, false,",
                        "    /// NULL, None).",
                        "    fn default() -> Self {",
                        "        // SAFETY: see above; the generator admits no other field type.",
                        "        unsafe { std::mem::zeroed() }",
                        "    }",
                        "}", ""]
            if s.fields and s.fields[0].name == "struct_size":
                out += ["impl %s {" % s.name,
                        "    /// All zero, with `struct_size = size_of::<Self>()`, as a caller",
                        "    /// passes it.",
                        "    pub fn sized() -> Self {",
                        "        Self {",
                        "            struct_size: std::mem::size_of::<Self>() as %s,"
                        % rs_type(h, s.fields[0].ctype),
                        "            ..Self::default()",
                        "        }",
                        "    }",
                        "}", ""]
            if s.kind == "table":
                out += ["impl %s {" % s.name,
                        "    /// Every slot with its `T4A_SIZE_THROUGH(table, slot)` (LP64), in",
                        "    /// table order: a reader uses a slot only when `struct_size` covers",
                        "    /// it.",
                        "    pub const SLOTS: &'static [(&'static str, usize)] = &["]
                out += ['        ("%s", %d),' % (f.name, f.offset + f.size)
                        for f in s.fields if f.ctype.kind == "fn"]
                out += ["    ];", "}", ""]
    out += ["// ---------------------------------------------------------------------------",
            "// libt4a_gpu (<t4a/gpu_loader.h>). Linked by the build script (build.rs).",
            "// ---------------------------------------------------------------------------",
            'extern "C" {']
    for item in h.items:
        if item[0] != "function":
            continue
        _, name, t, doc, _ = item
        ret = "" if t.ret.kind == "prim" and t.ret.name == "void" else " -> " + rs_type(h, t.ret)
        params = ", ".join("%s: %s" % (rs_ident(n), rs_type(h, p)) for n, p in t.params)
        out += rs_doc(doc, "    ") + ["    pub fn %s(%s)%s;" % (name, params, ret)]
    out += ["}", "",
            "/// Sizes checked at compile time against the LP64 layout the generator",
            "/// computed (a mismatch fails the build, before any call can corrupt memory).",
            '#[cfg(target_pointer_width = "64")]',
            "const _: () = {",
            "    use std::mem::{align_of, size_of};"]
    for s in sizes:
        out.append("    assert!(size_of::<%s>() == %d && align_of::<%s>() == %d);"
                   % (s.name, s.size, s.name, s.align))
    out += ["    // A slot must be exactly a nullable C function pointer.",
            "    assert!(",
            "        size_of::<Option<unsafe extern \"C\" fn() -> c_int>>()",
            "            == size_of::<*const c_void>()",
            "    );",
            "};", ""]
    return "\n".join(out) + "\n"


def rs_fn_field(h, f):
    return "Option<%s>" % rs_fn(h, f.ctype, True)


def rust_layout_test(h):
    out = ["//! GENERATED by `%s`: do not edit; run `make bindings-regen`." % GENERATOR,
           "//!",
           "//! Every struct's size and every field's offset and size in `t4a_gpu::sys`",
           "//! against the C compiler's, printed by tests/bindings/layout.c (its output",
           "//! file is $T4A_LAYOUT), and every constant's value against the C one.",
           "//! Without $T4A_LAYOUT (a plain `cargo test`, no C build tree) each test",
           "//! skips, saying so; with T4A_REQUIRE_LAYOUT=1 (tests/consumers/test_rust.sh",
           "//! in `make check`) it fails instead, so it never passes unchecked there.",
           "#![allow(non_snake_case)]",
           "",
           "use std::collections::BTreeMap;",
           "use std::mem::{size_of, MaybeUninit};",
           "use t4a_gpu::sys::*;",
           "",
           "/// The C program's lines: `struct NAME SIZE ALIGN`, `field STRUCT.FIELD OFFSET",
           "/// SIZE`, `const NAME VALUE`; None (after saying why) to skip.",
           "fn c_layout(test: &str) -> Option<BTreeMap<String, String>> {",
           '    let path = match std::env::var("T4A_LAYOUT") {',
           "        Ok(p) => p,",
           '        Err(_) if std::env::var_os("T4A_REQUIRE_LAYOUT").is_none() => {',
           "            use std::io::Write;",
           "            let _ = writeln!(",
           "                std::io::stderr(),",
           '                "SKIP {test}: T4A_LAYOUT is not set (tests/bindings/layout\'s output)"',
           "            );",
           "            return None;",
           "        }",
           '        Err(e) => panic!("T4A_LAYOUT: {e}: the output of tests/bindings/layout"),',
           "    };",
           '    let text = std::fs::read_to_string(&path).expect("T4A_LAYOUT is readable");',
           "    let mut map = BTreeMap::new();",
           "    for line in text.lines() {",
           "        let mut words = line.splitn(3, ' ');",
           "        let kind = words.next().unwrap_or_default();",
           "        let name = words.next().unwrap_or_default();",
           '        let value = words.next().unwrap_or_default().to_string();',
           '        map.insert(format!("{kind} {name}"), value);',
           "    }",
           "    Some(map)",
           "}",
           "",
           "/// offset_of! for Rust 1.63 (core::mem::offset_of! is 1.77): the field's",
           "/// address minus the struct's, on an uninitialised value (nothing is read).",
           "macro_rules! field {",
           "    ($got:ident, $ty:ident, $field:ident) => {{",
           "        let value = MaybeUninit::<$ty>::uninit();",
           "        let base = value.as_ptr();",
           "        // SAFETY: addr_of! projects in bounds of a live allocation without reading.",
           "        let field = unsafe { std::ptr::addr_of!((*base).$field) };",
           "        fn size_of_pointee<T>(_: *const T) -> usize {",
           "            size_of::<T>()",
           "        }",
           "        $got.push((",
           '            format!("field {}.{}", stringify!($ty), stringify!($field)),',
           '            format!("{} {}", field as usize - base as usize, size_of_pointee(field)),',
           "        ));",
           "    }};",
           "}",
           "",
           "#[test]",
           "fn every_struct_and_field_matches_c() {",
           '    let c = match c_layout("every_struct_and_field_matches_c") {',
           "        Some(c) => c,",
           "        None => return,",
           "    };",
           "    let mut got: Vec<(String, String)> = Vec::new();"]
    for s in h.structs.values():
        out.append('    got.push(("struct %s".into(), format!("{} {}", size_of::<%s>(), '
                   'std::mem::align_of::<%s>())));' % (s.name, s.name, s.name))
        for f in s.fields:
            out.append("    field!(got, %s, %s);" % (s.name, rs_ident(f.name)))
    out += ["    let mut bad = Vec::new();",
            "    for (key, value) in &got {",
            "        match c.get(key) {",
            "            Some(want) if want == value => {}",
            '            want => bad.push(format!("{key}: Rust {value}, C {want:?}")),',
            "        }",
            "    }",
            '    let rust_keys: Vec<&String> = got.iter().map(|(k, _)| k).collect();',
            "    for key in c.keys() {",
            '        let layout = key.starts_with("struct ") || key.starts_with("field ");',
            '        if layout && !rust_keys.contains(&key) {',
            '            bad.push(format!("{key}: in C, not in the Rust bindings"));',
            "        }",
            "    }",
            '    assert!(bad.is_empty(), "layout mismatches:\\n{}", bad.join("\\n"));',
            '    assert_eq!(got.len(), %d, "structs and fields checked");'
            % sum(1 + len(s.fields) for s in h.structs.values()),
            "}",
            "",
            "#[test]",
            "fn every_constant_matches_c() {",
            '    let c = match c_layout("every_constant_matches_c") {',
            "        Some(c) => c,",
            "        None => return,",
            "    };",
            "    let got: Vec<(&str, i128)> = vec!["]
    for name, value in layout_constants(h):
        out.append('        ("%s", %s as i128),' % (name, name))
    out += ["    ];",
            "    for (name, value) in &got {",
            '        let want = c.get(&format!("const {name}"));',
            '        assert_eq!(want, Some(&value.to_string()), "{name}");',
            "    }",
            '    let c_count = c.keys().filter(|k| k.starts_with("const ")).count();',
            '    assert_eq!(got.len(), c_count, "every C constant has a Rust one");',
            "}", ""]
    return "\n".join(out)


def layout_constants(h):
    """(name, value) of every integer constant: statuses, #defines, enum values, frozen sizes."""
    out = [(n, v) for n, v, _ in h.statuses]
    for item in h.items:
        if item[0] == "const" and item[4] != "str":
            out.append((item[1], item[2]))
        elif item[0] == "enum":
            out += item[2]
        elif item[0] == "size_through":
            out.append((item[1], None))
    return out


# ---------------------------------------------------------------------------
# The C layout program.
# ---------------------------------------------------------------------------


def c_layout_program(h):
    out = ["/* tests/bindings/layout.c -- GENERATED by %s: do not edit; run" % GENERATOR,
           " * `make bindings-regen`.",
           " *",
           " * Prints what the C compiler makes of the headers, one fact a line, for the",
           " * Python and Rust layout tests to compare with their bindings:",
           " *   struct NAME SIZE ALIGN",
           " *   field STRUCT.FIELD OFFSET SIZE",
           " *   const NAME VALUE",
           " */",
           "#include <stdalign.h>",
           "#include <stddef.h>",
           "#include <stdio.h>",
           "",
           "#include <t4a/gpu_loader.h>",
           "",
           "#define STRUCT(s) printf(\"struct %s %zu %zu\\n\", #s, sizeof(s), alignof(s))",
           "#define FIELD(s, f) printf(\"field %s.%s %zu %zu\\n\", #s, #f, offsetof(s, f), "
           "sizeof(((s *)0)->f))",
           "#define CONST(c) printf(\"const %s %lld\\n\", #c, (long long)(c))",
           "#define UCONST(c) printf(\"const %s %llu\\n\", #c, (unsigned long long)(c))",
           "",
           "int main(void) {"]
    for s in h.structs.values():
        out.append("  STRUCT(%s);" % s.name)
        for f in s.fields:
            out.append("  FIELD(%s, %s);" % (s.name, f.name))
    for name, value in layout_constants(h):
        unsigned = value is None or value > 2**63 - 1
        out.append("  %s(%s);" % ("UCONST" if unsigned else "CONST", name))
    out += ["  return 0;", "}", ""]
    return "\n".join(out)


# ---------------------------------------------------------------------------

OUTPUTS = [("python/t4a_gpu/_abi.py", python_module), ("rust/src/sys.rs", rust_module),
           ("rust/tests/layout.rs", rust_layout_test),
           ("tests/bindings/layout.c", c_layout_program)]


def generate(backend, loader):
    h = load(backend, loader)
    return [(path, make(h)) for path, make in OUTPUTS]


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[-3].strip())
    ap.add_argument("--srcdir", default=os.path.join(HERE, ".."))
    ap.add_argument("--backend-header")
    ap.add_argument("--loader-header")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--out-dir")
    mode.add_argument("--check", action="store_true")
    a = ap.parse_args()
    backend = a.backend_header or os.path.join(a.srcdir, "abi/t4a/gpu_backend_v1.h")
    loader = a.loader_header or os.path.join(a.srcdir, "loader/t4a/gpu_loader.h")
    try:
        files = generate(backend, loader)
    except BindgenError as e:
        sys.exit("t4a_bindgen.py: %s" % e)
    ok = True
    for rel, text in files:
        if a.check:
            path = os.path.join(a.srcdir, rel)
            old = open(path).read() if os.path.exists(path) else ""
            if old != text:
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), text.splitlines(True), rel, rel + " (generated)"))
                sys.stderr.write("t4a_bindgen.py: %s is out of date; run `make bindings-regen`\n"
                                 % rel)
                ok = False
            continue
        path = os.path.join(a.out_dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", newline="\n") as f:
            f.write(text)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
