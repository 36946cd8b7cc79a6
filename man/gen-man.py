#!/usr/bin/env python3
"""man/gen-man.py -- the API man pages, generated from the public headers.

t4a_gpu_backend_v1.3 comes from abi/t4a/gpu_backend_v1.h, t4a_gpu_loader.3
from loader/t4a/gpu_loader.h, so the reference cannot drift from the contract:
every table slot needs a comment naming it, every T4A_LOADER_API function a
comment, and --check/--check-dir fail with a diff when a page is stale. The
output is deterministic (version from configure.ac, no date).

  gen-man.py [--srcdir DIR] --out-dir DIR | --check-dir DIR      both pages
  gen-man.py [--srcdir DIR] --header H --out F | --check F       backend page
  gen-man.py [--srcdir DIR] --loader-header H --out F | --check F
"""
import argparse
import difflib
import os
import re
import sys

COMMENT = r"/\*(?:(?!\*/).)*\*/"  # one /* ... */ comment, non-greedy


class Undocumented(Exception):
    """An API element without its comment: "LINE: what" (main adds the file)."""


def comment_lines(c):
    """Text lines of one comment, without /*, */ and the ' * ' margin;
    relative indentation (list items) is kept."""
    lines = c[2:-2].split("\n")
    out = [lines[0][1:] if lines[0].startswith(" ") else lines[0]]
    for line in lines[1:]:
        m = re.match(r"\s*\*(?: |$)", line)
        out.append(line[m.end():] if m else line.lstrip())
    text = "\n".join(line.rstrip() for line in out).strip("\n")
    # Re-join a word the comment broke at a line end ("GPU-" / "side wait").
    text = re.sub(r"(?<=[A-Za-z])-\n( *)([a-z]\S*)(?: +|\n)", r"-\2\n\1", text)
    return text.split("\n")


def esc(s):
    """Roff-escapes one line of comment text."""
    s = s.replace("\\", "\\e")
    # Option and minus dashes (-1, ->, --, -arch) stay copyable; word-hyphens stay.
    s = re.sub(r"(?<![A-Za-z0-9])-|-(?=[-> =])", r"\\-", s)
    s = re.sub(r"`([^`]+)`", r"\\fI\1\\fR", s)  # `arg` -> italic
    return "\\&" + s if s.startswith((".", "'")) else s


def blocks(lines, para=".PP", first=False):
    """Roff for comment text: paragraphs, '- ' bullets and 'term -- text'
    items (indented). `first`: the first paragraph needs no macro (it follows
    a .TP tag); `para` starts the others (.IP keeps a .TP body's indent)."""
    out, cur = [], None
    for line in lines:
        s = line.strip()
        if not s:
            cur = None
            continue
        indented = line[0] == " "
        bullet = re.match(r"- (.*)", s) if indented else None
        term = re.match(r"(\S+(?: \S+)?)\s+-- (.*)", s) if indented else None
        if bullet:
            out += [".IP \\(bu 2", esc(bullet.group(1))]
            cur = "item"
        elif term:
            out += [".TP", "\\fB%s\\fR" % esc(term.group(1)), esc(term.group(2))]
            cur = "item"
        elif cur == "p" or (cur == "item" and indented):
            out.append(esc(s))
        else:
            out += ([] if first and not out else [para]) + [esc(s)]
            cur = "p"
    return out


def sections(text):
    """(title, lines) of top-comment text; a title is framed by dashed rules
    or opens a paragraph as "Title words. text" (marked with NUL here)."""
    text = re.sub(r"^-{10,}\n(.+)\n-{10,}$", "\0\\1", text, flags=re.M)
    text = re.sub(r"(?<=\n\n)([A-Z][a-z]+(?: [a-z]+){0,3})\. ", "\0\\1\n", text)
    first, *rest = text.split("\0")
    return [(None, first)] + [c.split("\n", 1) for c in rest]


def proto(ret, name, args):
    """(bold "ret name(", [parameters with italic names]) of a prototype."""
    ret = ret.strip()
    head = "\\fB%s%s%s\\fR(" % (esc(ret), "" if not ret or ret.endswith("*") else " ", name)
    parts = []
    for a in re.split(r"\s*,\s*", args.strip()):
        m = re.match(r"(.*?)(\w+)$", a) if a != "void" else None
        p = esc(m.group(1)) + "\\fI" + m.group(2) + "\\fR" if m else esc(a)
        parts.append(p.replace(" ", "\\ "))  # filled text breaks only between parameters
    return head, parts


def synopsis_proto(ret, name, args):
    """A prototype for .nf mode, wrapped after commas below 80 columns."""
    head, parts = proto(ret, name, args)
    plain_len = lambda s: len(re.sub(r"\\f[BIR]|\\(?=[ \-&])", "", s))  # noqa: E731
    lines, cur = [], head
    for i, p in enumerate(parts):
        piece = p + (", " if i + 1 < len(parts) else ");")
        if cur.strip() and cur != head and plain_len(cur + piece) > 78:
            lines.append(cur.rstrip())
            cur = " " * plain_len(head)
        cur += piece
    return lines + [cur]


def entry(protos, doc, end=";"):
    """A .TP entry: the prototype(s) of one comment, then its text."""
    out = []
    for i, p in enumerate(protos):
        head, parts = proto(*p)
        out += [".TQ" if i else ".TP", head + ", ".join(parts) + ")" + end]
    m = re.match(r"(\w+(?: / \w+)*): ", doc[0])  # "a / b: text" naming exactly these
    if m and set(m.group(1).split(" / ")) == set(p[1] for p in protos):
        doc = [doc[0][m.end()].upper() + doc[0][m.end() + 1:]] + doc[1:]
    return out + blocks(doc, ".IP", True)


def tagged(src, pattern, what):
    """(comment lines, groups of `pattern`) for `pattern` directly after a comment."""
    m = re.search(r"(%s)\n%s" % (COMMENT, pattern), src, re.S | re.M)
    if not m:
        raise Undocumented(" %s has no comment directly before it" % what)
    return comment_lines(m.group(1)), m.groups()[1:]


def header_page(src, title, sect, version, origin, synopsis, body, see):
    top = comment_lines(re.search(COMMENT, src, re.S).group(0))
    desc = top[0].split(" -- ", 1)[1].rstrip(".")
    out = ['.\\" Generated by man/gen-man.py from %s; do not edit.' % origin,
           '.TH %s %d "" "t4a-gpu-backend %s" "t4a GPU backend"' % (title.upper(), sect, version),
           ".nh", ".ad l", ".SH NAME", "%s \\- %s" % (title, esc(desc)), ".SH SYNOPSIS", ".nf"]
    out += synopsis + [".fi", ".SH DESCRIPTION"]
    for name, text in sections("\n".join(top[1:])):
        out += (['.SS "%s"' % name] if name else []) + blocks(text.split("\n"))
    out += body + [".SH SEE ALSO"]
    out += [".BR %s (%d)%s" % (n, s, "," * (i + 1 < len(see))) for i, (n, s) in enumerate(see)]
    return "\n".join(out) + "\n"


def slot_entries(src):
    """Groups of the function table: [title, intro, entries]; an entry is
    ("field", text) or ("slots", [(ret, name, args)], doc lines). A slot's doc
    is the comments since the previous member; a slot with none shares the
    previous slot's ("a / b: ..."). Either way the doc must name the slot."""
    body = re.search(r"^struct t4a_gpu_backend_v1 \{\n(.*?)^\};", src, re.S | re.M)
    groups, pending, doc, last_end, last_member = [], [], None, 0, False
    for m in re.finditer(r"%s|[^;/]+;" % COMMENT, body.group(1), re.S):
        tok, gap = m.group(0), body.group(1)[last_end:m.start()]
        last_end = m.end()
        if tok.startswith("/*"):
            lines = comment_lines(tok)
            if last_member and "\n" not in gap and groups[-1][2][-1][0] == "field":
                groups[-1][2][-1] = ("field", groups[-1][2][-1][1] + "  " + tok)
                continue  # a trailing comment of a data member
            g = re.match(r"-- (.+?)\s*-{3,}$", lines[0]) if lines else None
            if g:  # a group marker: "-- transfers (v1.0) ----"
                groups.append([g.group(1)[0].upper() + g.group(1)[1:], [], []])
                lines, doc = lines[1:], None
                paras = "\n".join(lines).split("\n\n")
                while len(paras) > 1 and not re.match(r"\w+(?: / \w+)*:", paras[0]):
                    groups[-1][1] += paras.pop(0).split("\n") + [""]  # group intro
                lines = "\n\n".join(paras).split("\n") if lines else []
            if lines:
                pending += ([""] if pending else []) + lines
            last_member = False
            continue
        decl = " ".join(tok.split())
        last_member = True
        f = re.match(r"(.+?)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\);$", decl)
        if not f:
            groups[-1][2].append(("field", decl))
            continue
        ret, name, args = f.groups()
        if pending:
            doc, pending = pending, []
            groups[-1][2].append(("slots", [], doc))
        text = "\n".join(doc or [])
        if not re.search(r"(?<!\w)%s(?=:| /)|/ %s(?!\w)" % (name, name), text):
            line = src.count("\n", 0, body.start(1) + m.end()) + 1
            raise Undocumented("%d: slot '%s' has no comment naming it (write '%s: what it "
                               "does' above it)" % (line, name, name))
        groups[-1][2][-1][1].append((ret, name, args))
    return groups


def backend_page(src, version):
    """The ABI page: entry point and helpers, status codes, then the slots."""
    sym = re.search(r'#define T4A_GPU_BACKEND_V1_ENTRY_NAME "(\w+)"', src).group(1)
    e_doc, e = tagged(src, r"typedef (\w+) \(\*t4a_gpu_backend_v1_entry_fn\)\(([^;]*)\);",
                      "t4a_gpu_backend_v1_entry_fn")
    h_doc, h = tagged(src, r"#define (T4A_GPU_BACKEND_V1_HAS)\((.*?)\)", "T4A_GPU_BACKEND_V1_HAS")
    helpers = [(e_doc, (e[0], sym, " ".join(e[1].split()))), (h_doc, ("",) + h)]
    helpers += [tagged(src, r"static inline ([^\n(]*?)(%s)\(([^)]*)\) \{" % fn, fn)
                for fn in ("t4a_status_name", "t4a_status_message")]
    syn = [".B #include <t4a/gpu_backend_v1.h>", ""]
    syn += [x for _, p in helpers for x in synopsis_proto(*p)]
    out = [".SS Entry point and helpers"]
    for d, p in helpers:
        out += entry([p], d, "")
    s_doc, s = tagged(src, r"#define T4A_STATUS_MAP\(X\)((?:.*\\\n)*.*)", "T4A_STATUS_MAP")
    out += [".SH STATUS CODES"] + blocks([x for x in s_doc if not re.fullmatch(r"-{10,}", x)])
    for name, value, msg in re.findall(r'X\((\w+), (-?\d+), "([^"]*)"\)', s[0]):
        out += [".TP", "\\fBT4A_%s\\fR (%s)" % (name, esc(value)), esc(msg)]
    out += [".SH SLOTS", "The members of \\fBstruct t4a_gpu_backend_v1\\fR, in table order,"
            " grouped as in the header."]
    for title, intro, entries in slot_entries(src):
        out += ['.SS "%s"' % title] + blocks(intro)
        fields = [e[1] for e in entries if e[0] == "field"]
        if fields:
            out += [".PP", ".RS 4", ".nf"] + [esc(f) for f in fields] + [".fi", ".RE"]
        for _, protos, doc in (e for e in entries if e[0] == "slots"):
            out += entry(protos, doc)
    return header_page(src, "t4a_gpu_backend_v1", 3, version, "abi/t4a/gpu_backend_v1.h", syn,
                       out, [("t4a_gpu_loader", 3), ("t4a\\-gpu", 1)])


def loader_page(src, version):
    """The loader page; a declaration on the line after another shares its comment."""
    funcs, prev_end = [], None  # funcs: [doc, [(ret, name, args)]]
    for m in re.finditer(r"(?:(%s)\n)?^T4A_LOADER_API ([^;]*);" % COMMENT, src, re.S | re.M):
        ret, name, args = re.match(r"(.*?)(\w+)\((.*)\)$", " ".join(m.group(2).split())).groups()
        if m.group(1):
            funcs.append([comment_lines(m.group(1)), []])
        elif prev_end is None or src[prev_end:m.start()] != "\n":  # adjacent: shares the comment
            raise Undocumented("%d: %s has no comment" % (src.count("\n", 0, m.end()) + 1, name))
        funcs[-1][1].append((ret, name, args))
        prev_end = m.end()
    syn = [".B #include <t4a/gpu_loader.h>", ""]
    for t in re.findall(r"^typedef struct \w+ (?:\{\n.*?^\} )?\w+;", src, re.S | re.M):
        syn += [esc(x) for x in t.split("\n")] + [""]
    out = [".SH FUNCTIONS"]
    for doc, protos in funcs:
        syn += [x for p in protos for x in synopsis_proto(*p)]
        out += entry(protos, doc)
    syn += ["", "Link with \\fI\\-lt4a_gpu\\fR (pkg\\-config \\fBt4a\\-gpu\\fR)."]
    return header_page(src, "t4a_gpu_loader", 3, version, "loader/t4a/gpu_loader.h", syn, out,
                       [("t4a_gpu_backend_v1", 3), ("t4a\\-gpu", 1)])


def emit(text, path, check):
    """Writes `text` to path, or (check) compares and prints a unified diff."""
    if check:
        old = open(path).read() if os.path.exists(path) else ""
        sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                   path, path + " (generated)"))
        if old != text:
            sys.stderr.write("gen-man.py: %s is out of date; run `make man-regen`\n" % path)
        return old == text
    with open(path, "w", newline="\n") as f:
        f.write(text)
    return True


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[-1].lstrip())
    ap.add_argument("--srcdir", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--header", help="the backend ABI header (one-page mode)")
    ap.add_argument("--loader-header", help="the loader header (one-page mode)")
    mode = ap.add_mutually_exclusive_group(required=True)
    for opt in ("--out", "--check", "--out-dir", "--check-dir"):
        mode.add_argument(opt)  # write / compare one page, or both in a directory
    a = ap.parse_args()
    with open(os.path.join(a.srcdir, "configure.ac")) as f:  # the package version
        version = re.search(r"AC_INIT\(\[[^]]*\],\s*\[([^]]+)\]", f.read()).group(1)
    backend = a.header or os.path.join(a.srcdir, "abi/t4a/gpu_backend_v1.h")
    loader = a.loader_header or os.path.join(a.srcdir, "loader/t4a/gpu_loader.h")
    pages = [(backend, backend_page, "t4a_gpu_backend_v1.3"),
             (loader, loader_page, "t4a_gpu_loader.3")]
    if a.out or a.check:
        if bool(a.header) == bool(a.loader_header):
            ap.error("--out/--check need exactly one of --header, --loader-header")
        pages = [p for p in pages if p[0] == (a.header or a.loader_header)]
    ok, outdir = True, a.out_dir or a.check_dir
    for header, make, page in pages:
        try:
            with open(header) as f:
                text = make(f.read(), version)
        except Undocumented as e:
            sys.exit("gen-man.py: %s:%s" % (header, e))
        path = os.path.join(outdir, page) if outdir else a.out or a.check
        ok = emit(text, path, bool(a.check or a.check_dir)) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
