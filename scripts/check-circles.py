#!/usr/bin/env python3
"""Import circles among the files of crates/tessera-server/src (docs/architecture.md, "Checks").

Reads every `crate::…`, `super::…` and `self::…` path in the Rust code (comments and strings left
out), maps each to the file that defines it (the longest module prefix that is a file), and finds
the strongly connected components of that file graph. A circle is allowed only when it is two
files of one folder (a type and its error, a row reader and its query builder); any other circle
fails. Prints each circle with the names that tie it.

Usage: python3 scripts/check-circles.py            exit 0 when no forbidden circle, else 1
       python3 scripts/check-circles.py --all      also list the allowed two-file pairs
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "tessera-server", "src")
ROOT = os.path.normpath(ROOT)

PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP = re.compile(r"\buse\s+(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*)\};", re.S)


def strip(code):
    """Blank out comments, string and char literals (keeping line structure)."""
    out = []
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if code.startswith("//", i):
            j = code.find("\n", i)
            j = n if j < 0 else j
            i = j
            continue
        if code.startswith("/*", i):
            j = code.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * code.count("\n", i, j))
            i = j
            continue
        m = re.match(r'r(#*)"', code[i:]) if c == "r" and (i == 0 or not (code[i - 1].isalnum() or code[i - 1] == "_")) else None
        if m:
            end = '"' + m.group(1)
            j = code.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append("\n" * code.count("\n", i, j))
            i = j
            continue
        if c == '"':
            j = i + 1
            while j < n and code[j] != '"':
                j += 2 if code[j] == "\\" else 1
            out.append("\n" * code.count("\n", i, j))
            i = j + 1
            continue
        if c == "'" and re.match(r"'(\\.|[^\\'])'", code[i:i + 4] or ""):
            m2 = re.match(r"'(\\.|[^\\'])'", code[i:])
            i += len(m2.group(0))
            continue
        out.append(c)
        i += 1
    return "".join(out)


def module_of(path):
    """The module path (list of names) of a source file."""
    rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib", "main"):
        rel = rel[:-1]
    return rel


def files():
    for dirpath, _, names in os.walk(ROOT):
        for name in names:
            if name.endswith(".rs"):
                yield os.path.join(dirpath, name)


def main():
    show_all = "--all" in sys.argv
    by_module = {}
    for f in files():
        by_module[tuple(module_of(f))] = f

    def resolve(mod, kind, rest):
        base = list(mod) if kind == "self" else list(mod[:-1]) if kind == "super" else []
        if kind == "super" and is_dir_module.get(tuple(mod)) is False:
            # `super` of a file module is its folder's module.
            base = list(mod[:-1])
        parts = base + [p for p in rest.split("::") if p]
        best = None
        for k in range(len(parts), -1, -1):
            cand = tuple(parts[:k])
            if cand in by_module:
                best = by_module[cand]
                break
        return best, parts

    is_dir_module = {}
    for m, f in by_module.items():
        is_dir_module[m] = os.path.basename(f) in ("mod.rs", "lib.rs", "main.rs")

    edges = {}
    for f in by_module.values():
        mod = tuple(module_of(f))
        with open(f, encoding="utf-8") as fh:
            code = strip(fh.read())
        targets = {}
        paths = []
        for m in USE_GROUP.finditer(code):
            for item in re.split(r",", m.group(3)):
                item = item.strip().split(" as ")[0].strip()
                if not item or item in ("self", "*") or "{" in item:
                    continue
                paths.append((m.group(1), m.group(2) + "::" + item.split("::")[0]))
        for m in PATH.finditer(code):
            paths.append((m.group(1), m.group(2)))
        for kind, rest in paths:
            target, parts = resolve(mod, kind, rest)
            if target is None or target == f:
                continue
            # A path that only names a parent module (`crate::flows`) is not an import of it.
            if os.path.basename(target) in ("mod.rs", "lib.rs") and tuple(parts) == tuple(module_of(target)):
                continue
            name = parts[-1] if parts else ""
            targets.setdefault(target, set()).add(name)
        edges[f] = targets

    # Tarjan's strongly connected components.
    index, low, stack, on, sccs = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
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
                sccs.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)

    bad = 0
    for comp in sccs:
        rel = [os.path.relpath(c, ROOT) for c in comp]
        allowed = len(comp) == 2 and os.path.dirname(comp[0]) == os.path.dirname(comp[1])
        if allowed and not show_all:
            continue
        bad += 0 if allowed else 1
        print(("allowed (two files of one folder): " if allowed else "CIRCLE: ") + ", ".join(rel))
        for a in comp:
            for b in comp:
                if b in edges[a]:
                    names = ", ".join(sorted(edges[a][b])[:6])
                    print(f"  {os.path.relpath(a, ROOT)} -> {os.path.relpath(b, ROOT)}: {names}")
    if bad:
        print(f"check-circles: {bad} import circle(s) beyond two files of one folder")
        return 1
    print(f"check-circles: OK, no import circle among {len(edges)} files beyond two files of one folder")
    return 0


if __name__ == "__main__":
    sys.exit(main())
