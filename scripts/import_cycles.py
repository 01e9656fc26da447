#!/usr/bin/env python3
"""The import graph of a crate's source files, and its circles.

Every `crate::…` path a file names (in `use` lines or inline, outside comments and its
`#[cfg(test)]` module) is an arrow from that file to the file of the deepest module the
path names; `super::…` paths likewise. A circle is a set of files that reach each other
(a strongly connected component of two files or more).

    scripts/import_cycles.py crates/switchyard-gateway/src            # lists the circles
    scripts/import_cycles.py crates/switchyard-gateway/src --max 3    # fails past 3 files
    scripts/import_cycles.py crates/switchyard-gateway/src --edges    # every arrow
"""
import argparse
import os
import re
import sys


def module_files(src):
    """Module path (tuple) -> file, for every .rs file under `src`."""
    out = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            out[tuple(rel)] = path
    return out


def code_of(path):
    text = open(path, encoding="utf-8").read()
    # The file's own tests are not part of its imports.
    cut = re.search(r"#\[cfg\(test\)\]\s*mod tests\s*\{", text)
    if cut:
        text = text[: cut.start()]
    lines = []
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith("//"):
            continue
        lines.append(re.sub(r'"(?:[^"\\]|\\.)*"', '""', line.split(" //")[0]))
    return "\n".join(lines)


def expand_use(body):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    body = body.strip()
    m = re.match(r"^(.*?)\{(.*)\}$", body, re.S)
    if not m:
        return [body]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        if p.strip():
            out += [prefix + q for q in expand_use(p)]
    return out


def arrows(src):
    mods = module_files(src)
    files = {v: k for k, v in mods.items()}
    edges = {}
    for path, me in files.items():
        code = code_of(path)
        paths = []
        for m in re.finditer(r"\buse\s+([^;]+);", code):
            paths += expand_use(m.group(1).replace("\n", " "))
        # Paths named inline (not in `use` lines, read whole above).
        rest = re.sub(r"\buse\s+[^;]+;", "", code)
        paths += re.findall(r"\b(?:crate|super)(?:::\w+)+", rest)
        targets = set()
        for p in paths:
            p = re.sub(r"\s+as\s+\w+$", "", p.strip()).replace(" ", "")
            segs = p.split("::")
            if segs[0] == "crate":
                base, rest = (), segs[1:]
            elif segs[0] == "super":
                # A file's own module: `a/b.rs` is ("a", "b"); super of it is ("a",).
                base = me[:-1]
                rest = segs[1:]
                while rest and rest[0] == "super":
                    base, rest = base[:-1], rest[1:]
            else:
                continue
            best = None
            for n in range(len(rest), -1, -1):
                key = base + tuple(rest[:n])
                if key in mods:
                    best = mods[key]
                    break
            if best and best != path:
                targets.add(best)
        edges[path] = targets
    return edges


def circles(edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out, key=len, reverse=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src", help="a crate's src/ folder")
    ap.add_argument("--max", type=int, help="fail when a circle has more files than this")
    ap.add_argument("--edges", action="store_true", help="print every arrow")
    args = ap.parse_args()
    edges = arrows(args.src)
    if args.edges:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f"{a} -> {b}")
    found = circles(edges)
    n = sum(len(t) for t in edges.values())
    print(f"{len(edges)} files, {n} arrows, {len(found)} circle(s)")
    for c in found:
        inside = set(c)
        print(f"circle of {len(c)} files:")
        for a in c:
            for b in sorted(edges[a] & inside):
                print(f"  {a} -> {b}")
    if args.max is not None and any(len(c) > args.max for c in found):
        print(f"a circle has more than {args.max} files", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
