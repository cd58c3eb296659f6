#!/usr/bin/env python3
"""Lists the import cycles between the files of each crate, as a reader sees them.

File A has an arrow to file B when A names B (or an item in B) by a path: `crate::a::b`,
`super::...`, `self::...`, a path that starts with one of A's child modules (`pull::handle()` in
processor/mod.rs, which declares `mod pull;`), a path that starts with a name A imported
(`use super::x;` then `x::f()`), each leaf of a `use` group (`use crate::a::{b, c::d}`), and the
paths of `pub use`. A path resolves to the deepest module that exists: `crate::a::b::Item` is
a/b.rs (or a/b/mod.rs, or an inline `mod b { .. }` of a.rs). A `mod x;` declaration alone is no
arrow: a parent declaring its child does not import it. Comments, string literals and
`#[cfg(test)]` items (a whole `mod tests { .. }` block, or the file of a `#[cfg(test)] mod x;`) are
dropped before scanning. A binary of a crate with a library reaches it by the crate's name.
(`#[path = ".."]` on a `mod` is not followed.)

A cycle is a strongly connected component of more than one file; each is printed with one way
round it and every arrow inside it with the names that tie them. Exits 1 when there is a cycle.

With --follow-reexports a name that the deepest module only re-exports (`pub use x::Name;`,
`pub use x::*;`) leads on to the file that defines it, so a lib.rs or mod.rs that just gathers
names is no stop on the way: it shows which cycles only run through such a facade.

Usage: scripts/import-cycles.py [--follow-reexports] [CRATE_DIR | CRATE_DIR/src ...]
       (no directories: every member of the workspace in the root Cargo.toml that has a src/)
       scripts/import-cycles.py --self-test
"""
import glob
import os
import re
import sys
import tempfile
from collections import deque

IDENT = r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*"


# --- text cleaning -------------------------------------------------------------------------------


def _is_ident_char(c):
    return c.isalnum() or c == "_"


def strip_comments_and_strings(text):
    """Comments become a space, string and char literals `""` / `' '`; lifetimes stay."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = text.find("\n", i)
            i = n if j < 0 else j
            out.append(" ")
            continue
        if c == "/" and nxt == "*":
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
            continue
        # raw strings: r"..", r#".."#, br"..", cr".." (not the raw identifier r#name)
        if c == "r" and (i == 0 or not _is_ident_char(text[i - 1]) or
                         (text[i - 1] in "bc" and (i < 2 or not _is_ident_char(text[i - 2])))):
            m = re.match(r'r(#*)"', text[i:])
            if m:
                end = text.find('"' + m.group(1), i + len(m.group(0)))
                i = n if end < 0 else end + 1 + len(m.group(1))
                out.append('""')
                continue
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
            continue
        if c == "'":
            # a char literal ('x', '\n', '\u{1F600}'), else a lifetime or label ('a, 'static)
            if nxt == "\\":
                j = text.find("'", i + 3)
                if j > 0:
                    i = j + 1
                    out.append("' '")
                    continue
            elif i + 2 < n and text[i + 2] == "'":
                i += 3
                out.append("' '")
                continue
        out.append(c)
        i += 1
    return "".join(out)


def match_close(text, i):
    """Index just past the bracket that closes the one at text[i]."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    stack = [pairs[text[i]]]
    j = i + 1
    while j < len(text) and stack:
        ch = text[j]
        if ch in pairs:
            stack.append(pairs[ch])
        elif ch in ")]}":
            stack.pop()
        j += 1
    return j


CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")
ITEM_START = re.compile(r"(?:pub\b|impl\b|fn\b|struct\b|enum\b|union\b|mod\b|trait\b|type\b|"
                        r"const\b|static\b|use\b|async\b|unsafe\b|extern\b|macro_rules\b)")
INNER_CFG_TEST = re.compile(r"#\s*!\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")


def strip_cfg_test(text):
    """Drops every item (module, fn, use, field, ..) marked `#[cfg(test)]`, brace-matched."""
    if INNER_CFG_TEST.search(text):
        return ""
    while True:
        m = CFG_TEST.search(text)
        if not m:
            return text
        j = m.end()
        # further attributes of the same item
        while True:
            while j < len(text) and text[j].isspace():
                j += 1
            if text.startswith("#", j):
                k = j + 1
                while k < len(text) and text[k].isspace():
                    k += 1
                if k < len(text) and text[k] == "[":
                    j = match_close(text, k)
                    continue
            break
        # the item: up to its `;` or through its `{ .. }` block; a field, arm or argument up to its
        # `,` or to the `}` closing its parent
        is_item = ITEM_START.match(text, j) is not None
        depth = 0
        while j < len(text):
            ch = text[j]
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif depth == 0 and (ch == ";" or (ch == "," and not is_item)):
                j += 1
                break
            elif depth == 0 and ch == "}":
                break
            elif ch == "{":
                j = match_close(text, j)
                break
            j += 1
        text = text[: m.start()] + " " + text[j:]


# --- the module tree -----------------------------------------------------------------------------


class Module:
    def __init__(self, name, file, parent, root, child_dir):
        self.name = name
        self.file = file
        self.parent = parent
        self.root = root or self
        self.child_dir = child_dir
        self.children = {}
        self.text = ""
        self.uses = []  # (segments, bound name or None, is_glob)
        self.bindings = {}  # name -> segments
        self.pub_bindings = set()  # names of `pub use`
        self.globs = []  # segments
        self.defines = {}  # name -> whether this module's own text defines an item of that name

    def path(self):
        out, m = [], self
        while m.parent is not None:
            out.append(m.name)
            m = m.parent
        return tuple(reversed(out))


MOD_BLOCK = re.compile(r"\bmod\s+(" + IDENT + r")\s*\{")
MOD_DECL = re.compile(r"\bmod\s+(" + IDENT + r")\s*;")
USE_STMT = re.compile(r"(\bpub\b\s*(?:\([^)]*\))?\s*)?\buse\s+([^;]*);")


def unraw(name):
    return name[2:] if name.startswith("r#") else name


def fill(module, text, seen_files):
    """Builds `module` (and its inline and file children) from its cleaned text."""
    # inline modules: their own scope, in the same file
    rest, pos = [], 0
    while True:
        m = MOD_BLOCK.search(text, pos)
        if not m:
            break
        open_at = m.end() - 1
        close = match_close(text, open_at)
        name = unraw(m.group(1))
        child = Module(name, module.file, module, module.root, os.path.join(module.child_dir, name))
        module.children[name] = child
        fill(child, text[open_at + 1 : close - 1], seen_files)
        rest.append(text[pos : m.start()])
        pos = close
    rest.append(text[pos:])
    text = " ".join(rest)
    for m in MOD_DECL.finditer(text):
        name = unraw(m.group(1))
        for cand in (os.path.join(module.child_dir, name + ".rs"),
                     os.path.join(module.child_dir, name, "mod.rs")):
            if os.path.isfile(cand):
                break
        else:
            continue  # not on disk (a build-script module, a typo): nothing to read
        child_dir = os.path.dirname(cand) if cand.endswith("mod.rs") else cand[:-3]
        child = Module(name, cand, module, module.root, child_dir)
        module.children[name] = child
        load_file(child, seen_files)
    text = MOD_DECL.sub(" ", text)
    for m in USE_STMT.finditer(text):
        for segs, bound, is_glob in parse_use(m.group(2)):
            module.uses.append((segs, bound, is_glob))
            if m.group(1) and bound and not is_glob:
                module.pub_bindings.add(bound)
    text = USE_STMT.sub(" ", text)
    module.text = re.sub(r"\bpub\s*\(\s*in\b[^)]*\)", " ", text)
    for segs, bound, is_glob in module.uses:
        if is_glob:
            module.globs.append(segs)
        elif bound and bound != "_":
            module.bindings[bound] = segs


def load_file(module, seen_files):
    seen_files.add(module.file)
    with open(module.file, encoding="utf-8") as f:
        raw = f.read()
    fill(module, strip_cfg_test(strip_comments_and_strings(raw)), seen_files)


def defines(module, name):
    """Whether `module`'s own text defines an item `name` (not counting what it imports)."""
    if name not in module.defines:
        module.defines[name] = re.search(
            r"(?:\b(?:fn|struct|enum|union|trait|type|const|static)\s+|\bmacro_rules\s*!\s*)"
            + re.escape(name) + r"\b", module.text) is not None
    return module.defines[name]


def parse_use(tree_text):
    """`crate::a::{b, c::d as e, f::*}` -> [(segments, bound name, is glob)]; none when external."""
    tokens = re.findall(r"\$?(?:r#)?\w+|::|[{},*]", tree_text)
    out = []
    pos = [0]

    def peek():
        return tokens[pos[0]] if pos[0] < len(tokens) else None

    def take():
        tok = peek()
        pos[0] += 1
        return tok

    def tree(prefix):
        segs = []
        if peek() == "::":  # `use ::std::..`: an external crate
            take()
            segs.append("::")
        while True:
            tok = peek()
            if tok == "{":
                take()
                while peek() not in ("}", None):
                    tree(prefix + segs)
                    if peek() == ",":
                        take()
                take()
                return
            if tok == "*":
                take()
                out.append((prefix + segs, None, True))
                return
            if tok is None or tok in (",", "}"):
                break
            if tok == "as":
                take()
                alias = take()
                full = prefix + segs
                if full and full[-1] == "self":
                    full = full[:-1]
                out.append((full, alias, False))
                return
            if tok == "::":
                take()
                continue
            segs.append(unraw(take()))
        full = prefix + segs
        if full and full[-1] == "self":
            full = full[:-1]
        if full:
            out.append((full, full[-1], False))

    while peek() is not None:
        tree([])
        if peek() == ",":
            take()
        elif peek() is not None:
            take()
    return [u for u in out if u[0] and u[0][0] != "::"]


# --- resolving paths -----------------------------------------------------------------------------


class Crate:
    def __init__(self, crate_dir, follow=False):
        self.dir = crate_dir
        self.follow = follow
        self.src = os.path.join(crate_dir, "src")
        self.lib_name, bin_paths = read_manifest(crate_dir)
        self.files = set()
        self.lib = None
        self.roots = []
        lib_rs = os.path.join(self.src, "lib.rs")
        if os.path.isfile(lib_rs):
            self.lib = Module("crate", lib_rs, None, None, self.src)
            self.roots.append(self.lib)
        bins = set(bin_paths)
        bins.add(os.path.join(self.src, "main.rs"))
        bins.update(glob.glob(os.path.join(self.src, "bin", "*.rs")))
        bins.update(glob.glob(os.path.join(self.src, "bin", "*", "main.rs")))
        bins = {os.path.normpath(b) for b in bins}
        for b in sorted(bins):
            if os.path.isfile(b):
                self.roots.append(Module("crate", b, None, None, os.path.dirname(b)))
        for r in self.roots:
            load_file(r, self.files)

    def start(self, module, first):
        """The module a path's first segment names, seen from `module`; None: not this crate."""
        if first in ("crate", "$crate"):
            return module.root, True
        if first == "self":
            return module, True
        if first == "super":
            return module.parent, True
        if first == self.lib_name and self.lib is not None and module.root is not self.lib:
            return self.lib, True
        return None, False

    def resolve(self, module, segs, busy=frozenset()):
        """`segs` as named in `module` -> (root, absolute segments) or None when outside the crate."""
        key = (id(module), tuple(segs))
        if key in busy or not segs:
            return None
        busy = busy | {key}
        first, rest = segs[0], list(segs[1:])
        base, ok = self.start(module, first)
        if ok:
            if base is None:
                return None
            while rest and rest[0] == "super":
                base, rest = base.parent, rest[1:]
                if base is None:
                    return None
            return base.root, list(base.path()) + rest
        found = self.lookup(module, first, busy)
        if found is None:
            return None
        root, abs_segs = found
        return root, abs_segs + rest

    def lookup(self, module, name, busy):
        """A name in `module`'s scope: a child module, an import, or a name a glob brought in."""
        if name in module.children:
            return module.root, list(module.children[name].path())
        if name in module.bindings:
            return self.resolve(module, module.bindings[name], busy)
        for g in module.globs:
            src = self.resolve(module, g, busy)
            target = None if src is None else self.module_at(*src, exact=True)
            key = (id(target), "*", name)
            if target is None or key in busy:
                continue
            if defines(target, name):
                return target.root, list(target.path()) + [name]
            found = self.lookup(target, name, busy | {key})
            if found is not None:
                return found
        return None

    @staticmethod
    def module_at(root, segs, exact=False):
        m = root
        for s in segs:
            if s not in m.children:
                return None if exact else (m, s)
            m = m.children[s]
        return m if exact else (m, segs[-1] if segs else m.name)

    def target(self, module, segs):
        """(file, name) that the path `segs` in `module` names, or None."""
        found = self.resolve(module, segs)
        return None if found is None else self.definer(*found)

    def definer(self, root, segs, hops=0):
        """(file, name) of the item at the absolute path `segs`: the deepest module on the path,
        or, when that module only re-exports the name (`pub use x::Name;`, `pub use x::*;`), the
        file the re-export leads to; None when it leads out of the crate."""
        m = root
        for i, s in enumerate(segs):
            if s in m.children:
                m = m.children[s]
                continue
            rest = segs[i + 1 :]
            if not self.follow or hops > 32 or defines(m, s):
                return m.file, s
            if s in m.bindings:
                found = self.resolve(m, m.bindings[s])
                return None if found is None else self.definer(found[0], found[1] + rest, hops + 1)
            for g in m.globs:
                found = self.resolve(m, g)
                source = None if found is None else self.module_at(*found, exact=True)
                if source is not None and (s in source.children or s in source.pub_bindings
                                           or defines(source, s)):
                    return self.definer(found[0], found[1] + [s] + rest, hops + 1)
            return m.file, s
        return m.file, segs[-1] if segs else m.name

    def modules(self):
        todo = list(self.roots)
        while todo:
            m = todo.pop()
            yield m
            todo.extend(m.children.values())

    def arrows(self):
        """{(from file, to file): {names}}"""
        out = {}
        path_re = re.compile(r"(?<![\w:$])(\$?" + IDENT + r")((?:\s*::\s*" + IDENT + r")+)")
        for m in self.modules():
            paths = [(segs, is_glob) for segs, _, is_glob in m.uses]
            for pm in path_re.finditer(m.text):
                segs = [pm.group(1)] + [s.strip() for s in pm.group(2).split("::") if s.strip()]
                paths.append(([unraw(s) for s in segs], False))
            for segs, is_glob in paths:
                t = self.target(m, segs)
                if t is None or t[0] == m.file:
                    continue
                out.setdefault((m.file, t[0]), set()).add("*" if is_glob else t[1])
        return out


def read_manifest(crate_dir):
    """(library name, [bin paths]) from the crate's Cargo.toml."""
    path = os.path.join(crate_dir, "Cargo.toml")
    name, bins = os.path.basename(os.path.abspath(crate_dir)), []
    if not os.path.isfile(path):
        return name.replace("-", "_"), bins
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        import tomllib

        data = tomllib.loads(text)
        name = data.get("lib", {}).get("name") or data.get("package", {}).get("name", name)
        bins = [os.path.join(crate_dir, b["path"]) for b in data.get("bin", []) if "path" in b]
    except (ImportError, ValueError):
        m = re.search(r'^\s*name\s*=\s*"([^"]+)"', text, re.M)
        if m:
            name = m.group(1)
    return name.replace("-", "_"), bins


# --- cycles --------------------------------------------------------------------------------------


def sccs(nodes, edges):
    """Tarjan's strongly connected components of more than one node."""
    graph = {v: sorted(w for (a, w) in edges if a == v) for v in nodes}
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
            out.append(sorted(comp))

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sorted(c for c in out if len(c) > 1)


def shortest_circle(comp, edges):
    """A shortest way round from the component's first file back to it, as a list of files."""
    inside = set(comp)
    start = comp[0]
    succ = {v: sorted(w for (a, w) in edges if a == v and w in inside) for v in comp}
    prev = {start: None}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in succ[v]:
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return [start]


def analyze(crate_dir, follow=False):
    """(crate, [components], arrows)"""
    crate = Crate(crate_dir, follow)
    edges = crate.arrows()
    nodes = set(crate.files) | {a for a, _ in edges} | {b for _, b in edges}
    return crate, sccs(nodes, edges), edges


def report(crate_dir, follow=False, label=None):
    crate, comps, edges = analyze(crate_dir, follow)
    label = label or os.path.relpath(crate.src)
    rel = lambda f: os.path.relpath(f, crate.src)  # noqa: E731
    for comp in comps:
        print(f"{label}: cycle of {len(comp)} files")
        circle = shortest_circle(comp, edges)
        print("  e.g. " + " -> ".join(rel(f) for f in circle))
        inside = set(comp)
        for (a, b) in sorted(edges):
            if a in inside and b in inside:
                print(f"  {rel(a)} -> {rel(b)}: {', '.join(sorted(edges[(a, b)]))}")
    return len(comps), len(crate.files)


def workspace_crates(root):
    path = os.path.join(root, "Cargo.toml")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        import tomllib

        members = tomllib.loads(text).get("workspace", {}).get("members", [])
    except (ImportError, ValueError):
        m = re.search(r"members\s*=\s*\[([^\]]*)\]", text)
        members = re.findall(r'"([^"]+)"', m.group(1)) if m else []
    out = []
    for pattern in members:
        for d in sorted(glob.glob(os.path.join(root, pattern))):
            if os.path.isdir(os.path.join(d, "src")):
                out.append(d)
    return out


def main(args):
    if args == ["--self-test"]:
        return self_test()
    follow = "--follow-reexports" in args
    args = [a for a in args if a != "--follow-reexports"]
    if args:
        # a crate's dir, or its src/
        dirs = []
        for a in args:
            a = os.path.normpath(a)
            dirs.append((os.path.dirname(a) or ".") if os.path.basename(a) == "src" else a)
    else:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        dirs = [os.path.relpath(d) for d in workspace_crates(root)]
    cycles = files = 0
    for d in dirs:
        if not os.path.isdir(os.path.join(d, "src")):
            print(f"{d}: no src/ here", file=sys.stderr)
            return 2
        c, n = report(d, follow)
        cycles += c
        files += n
    if cycles:
        print(f"{cycles} import cycle(s) in {len(dirs)} crate(s)")
        return 1
    print(f"no import cycles between the {files} files of {len(dirs)} crate(s)")
    return 0


# --- self-test -----------------------------------------------------------------------------------


def _write(base, files):
    for rel, text in files.items():
        path = os.path.join(base, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


FACADE = {
    "Cargo.toml": '[package]\nname = "facade"\n',
    "src/lib.rs": "mod a;\nmod b;\npub use a::A;\npub use b::{B, c::*};\n",
    "src/a.rs": "pub struct A(pub crate::B);\n",
    "src/b/mod.rs": "pub mod c;\npub struct B;\n",
    "src/b/c.rs": "pub struct C;\n",
}

SELF_TEST_CRATES = {
    # processor/mod.rs names its child `pull` by a relative path; pull.rs names its parent.
    "child_path": ({
        "Cargo.toml": '[package]\nname = "child_path"\n',
        "src/lib.rs": "mod processor;\n",
        "src/processor/mod.rs": "mod pull;\npub fn process_on() { pull::handle(1) }\n",
        "src/processor/pull.rs": "pub fn handle(_: u8) { super::process_on() }\n",
    }, False, [["processor/mod.rs", "processor/pull.rs"]],
        {("processor/mod.rs", "processor/pull.rs"): {"handle"},
         ("processor/pull.rs", "processor/mod.rs"): {"process_on"}}),
    # a.rs reaches b.rs only through a nested `use` group; b.rs names a.rs.
    "use_group": ({
        "Cargo.toml": '[package]\nname = "use_group"\n',
        "src/lib.rs": "mod a;\nmod b;\nmod c;\n",
        "src/a.rs": "use crate::{b::{Bee, bee as bee_fn}, c};\npub struct A;\n",
        "src/b.rs": "pub struct Bee;\npub fn bee() -> crate::a::A { crate::a::A }\n",
        "src/c.rs": "pub fn c() {}\n",
    }, False, [["a.rs", "b.rs"]], {("a.rs", "b.rs"): {"Bee", "bee"}, ("a.rs", "c.rs"): {"c"},
                            ("b.rs", "a.rs"): {"A"}}),
    # parents only declare their children (`mod x;`, inline `mod`), children name their parents.
    "mod_only": ({
        "Cargo.toml": '[package]\nname = "mod_only"\n',
        "src/lib.rs": "pub mod a;\npub fn root() {}\n",
        "src/a/mod.rs": "pub mod b;\nmod inner { pub fn f() -> super::A { super::A } }\npub struct A;\n",
        "src/a/b.rs": "use super::A;\npub fn g() { crate::root(); let _ = A; }\n",
    }, False, [], {("a/b.rs", "a/mod.rs"): {"A"}, ("a/b.rs", "lib.rs"): {"root"}}),
    # imports in test modules, comments and strings do not count; code after a test module does.
    "test_modules": ({
        "Cargo.toml": '[package]\nname = "test_modules"\n',
        "src/lib.rs": "mod a;\nmod b;\nmod c;\nmod d;\n",
        "src/a.rs": ("pub struct A;\n// crate::b::B\n/* use crate::b::B; /* nested */ */\n"
                     "pub const S: &str = \"crate::b::B {\";\npub const C: char = '{';\n"
                     "#[cfg(test)]\n#[allow(dead_code)]\nmod tests {\n    use crate::b::B;\n"
                     "    fn f() { let s = \"}\"; let _ = (s, B); }\n}\n"
                     "#[cfg(test)]\nmod more;\n"),
        "src/a/more.rs": "use crate::b::B;\n",
        "src/b.rs": "pub struct B;\npub fn b() -> crate::a::A { crate::a::A }\n",
        "src/c.rs": ("pub struct C;\n#[cfg(test)]\nmod tests {\n    fn f<'a>(x: &'a str) -> &'a str { x }\n}\n"
                     "#[cfg(test)]\nimpl<X, Y> From<(X, Y)> for C { fn from(_: (X, Y)) -> C { crate::b::b(); C } }\n"
                     "use crate::d::D;\npub fn c() -> D { D }\n"),
        "src/d.rs": "pub struct D;\npub fn d() -> crate::c::C { crate::c::C }\n",
    }, False, [["c.rs", "d.rs"]], {("b.rs", "a.rs"): {"A"}, ("c.rs", "d.rs"): {"D"},
                            ("d.rs", "c.rs"): {"C"}}),
    # `use super::x;` then `x::f()`, `self::` paths, `pub use`, globs, and a binary using the library.
    "scope": ({
        "Cargo.toml": '[package]\nname = "scope-crate"\n',
        "src/lib.rs": "pub mod net;\npub mod store;\npub use store::Store;\n",
        "src/main.rs": "use scope_crate::net::serve;\nfn main() { serve() }\n",
        "src/net/mod.rs": "mod conn;\npub fn serve() { self::conn::open() }\n",
        "src/net/conn.rs": "use super::super::store;\npub fn open() { store::put(); }\n",
        "src/store/mod.rs": "mod put;\npub use put::put;\npub struct Store;\n",
        "src/store/put.rs": "use super::*;\npub fn put() { let _ = Store; crate::net::serve() }\n",
    }, False, [["net/conn.rs", "net/mod.rs", "store/mod.rs", "store/put.rs"]],
        {("main.rs", "net/mod.rs"): {"serve"}, ("net/mod.rs", "net/conn.rs"): {"open"},
         ("net/conn.rs", "store/mod.rs"): {"store"}, ("net/conn.rs", "store/put.rs"): {"put"},
         ("lib.rs", "store/mod.rs"): {"Store"}, ("store/mod.rs", "store/put.rs"): {"put"},
         ("store/put.rs", "store/mod.rs"): {"*"}, ("store/put.rs", "net/mod.rs"): {"serve"}}),
    # lib.rs only re-exports: a cycle through it as written, none past it with --follow-reexports.
    "facade": (FACADE, False, [["a.rs", "lib.rs"]],
               {("a.rs", "lib.rs"): {"B"}, ("lib.rs", "a.rs"): {"A"}, ("lib.rs", "b/mod.rs"): {"B"},
                ("lib.rs", "b/c.rs"): {"*"}}),
    "facade_followed": (FACADE, True, [],
                        {("a.rs", "b/mod.rs"): {"B"}, ("lib.rs", "a.rs"): {"A"},
                         ("lib.rs", "b/mod.rs"): {"B"}, ("lib.rs", "b/c.rs"): {"*"}}),
}


def self_test():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (files, follow, want_cycles, want_arrows) in SELF_TEST_CRATES.items():
            crate_dir = os.path.join(tmp, name)
            _write(crate_dir, files)
            crate, comps, edges = analyze(crate_dir, follow)
            rel = lambda f: os.path.relpath(f, crate.src)  # noqa: E731
            got_cycles = [sorted(rel(f) for f in c) for c in comps]
            got_arrows = {(rel(a), rel(b)): names for (a, b), names in edges.items()}
            if got_cycles != want_cycles:
                failures.append(f"{name}: cycles {got_cycles}, expected {want_cycles}")
            if got_arrows != want_arrows:
                failures.append(f"{name}: arrows {sorted(got_arrows.items())}, "
                                f"expected {sorted(want_arrows.items())}")
    if failures:
        print("import-cycles self-test failed:\n  " + "\n  ".join(failures))
        return 1
    print(f"import-cycles self-test: {len(SELF_TEST_CRATES)} fake crates as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
