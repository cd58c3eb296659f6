#!/usr/bin/env python3
"""Lists the import cycles between the files of a crate's src/ (a file uses another when it names a
path `crate::...` or `super::...` that resolves to it). Exits 1 when there is a cycle.
Usage: scripts/import-cycles.py broker/src [storage/src ...]"""
import os
import re
import sys


def modules(src):
    """module path (tuple) -> file"""
    out = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            out[tuple(parts)] = os.path.join(src, rel)
    return out


def strip_tests(text):
    # Test modules may use anything; they are not part of the import graph.
    i = text.find("#[cfg(test)]")
    return text if i < 0 else text[:i]


def uses(path_mod, text, mods):
    found = set()
    for m in re.finditer(r"\b(crate|super)((?:::\w+)+)", text):
        head, rest = m.group(1), [p for p in m.group(2).split("::") if p]
        if head == "crate":
            base = []
        else:
            is_mod_file = mods.get(path_mod, "").endswith(("mod.rs", "lib.rs"))
            base = list(path_mod if is_mod_file else path_mod[:-1])
            while rest and rest[0] == "super":
                base, rest = base[:-1], rest[1:]
            base = base[:-1] if False else base
        full = base + rest
        for n in range(len(full), 0, -1):
            if tuple(full[:n]) in mods:
                target = tuple(full[:n])
                if target != path_mod:
                    found.add(target)
                break
    # `use super::{a, b}` and `use crate::x::{a, b}` groups
    for m in re.finditer(r"\b(crate|super)((?:::\w+)*)::\{([^}]*)\}", text):
        head, prefix = m.group(1), [p for p in m.group(2).split("::") if p]
        if head == "crate":
            base = []
        else:
            is_mod_file = mods.get(path_mod, "").endswith(("mod.rs", "lib.rs"))
            base = list(path_mod if is_mod_file else path_mod[:-1])
        for item in m.group(3).split(","):
            name = item.strip().split("::")[0].split(" ")[0]
            full = base + prefix + [name]
            if tuple(full) in mods and tuple(full) != path_mod:
                found.add(tuple(full))
    return found


def sccs(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def main():
    bad = 0
    for src in sys.argv[1:]:
        mods = modules(src)
        graph = {}
        for mod, f in mods.items():
            text = strip_tests(open(f, encoding="utf-8").read())
            # A parent module declaring its children (`mod x;`) is not a use.
            graph[mod] = {t for t in uses(mod, text, mods)}
        for comp in sccs(graph):
            bad += 1
            print(f"{src}: cycle of {len(comp)} files: " + ", ".join(sorted(mods[m] for m in comp)))
    if bad == 0:
        print("no import cycles")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
