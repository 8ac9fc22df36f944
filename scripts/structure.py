#!/usr/bin/env python3
"""The core's walls, counted: which top-level modules of crates/jobsys/src
import which, the import circles among them, the longest files, and the
files that implement `Registry`.

Usage: python3 scripts/structure.py [--check] [--files] [SRC]

SRC is another crate's source folder (for example crates/jobsys-bench/src)
to count the same way; the default is crates/jobsys/src. `--files` counts
one level finer: every file is a module (`workloads/frame_graph`, a
`mod.rs` stands for its folder), `crate::a::b` and `super::x` paths
(braced groups included) name the deepest file module they reach, and an
import of a module's own ancestor (`super::emit` from a child of
`workloads/mod.rs`) is not counted: a parent declares its children, so a
child that uses its parent's shared helpers is layering, not a circle.

A module is a top-level item of the crate (`slot`, `trace`, `store`, ...);
a file under `src/trace/` belongs to `trace`. An import is any `crate::X`
path in non-test code (a file's `#[cfg(test)]`/`#[cfg(loom)]` tail and the
test-only files are skipped) naming another module. `--check` fails when a
circle exists or a file is longer than MAX_LINES: the targets of the
project's structure (docs/design-notes.md, "Modules" and "Layers"); without
it the script only reports. A name used through a lib.rs re-export
(`crate::JobSystem`) names no module and is not counted.
"""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(__file__), "..", "crates", "jobsys", "src")
MAX_LINES = 700
TEST_FILES = re.compile(r"(^|/)(tests|loom_tests)(\.rs|/)")


def module_of(rel):
    first = rel.split("/")[0]
    return first[:-3] if first.endswith(".rs") else first


def code_of(text):
    """The file without its trailing test modules."""
    m = re.search(r"^#\[cfg\((test|loom)\)\]\s*\n\s*mod \w+\s*(\{|;)", text, re.M)
    return text[: m.start()] if m else text


def file_module(rel):
    """`workloads/frame_graph.rs` -> `workloads/frame_graph`; `x/mod.rs` -> `x`."""
    m = rel[:-3]
    return m[: -len("/mod")] if m.endswith("/mod") else m


def file_edges(files):
    """Imports between file modules (see the module docs, `--files`)."""
    mods = {file_module(r) for r in files if r != "lib.rs"}
    edges = {}
    for rel, text in sorted(files.items()):
        if TEST_FILES.search(rel) or rel == "lib.rs":
            continue
        m = file_module(rel)
        parent = m.split("/")[:-1]
        code = code_of(text)
        paths = [(root, tail.split("::")) for root, tail in
                 re.findall(r"\b(crate|super)::((?:\w+::)*\w+)", code)]
        for root, prefix, group in re.findall(r"\b(crate|super)::((?:\w+::)*)\{([^}]*)\}", code):
            for item in re.findall(r"(?:^|,)\s*(\w+)", group):
                paths.append((root, [x for x in prefix.split("::") if x] + [item]))
        for root, segs in paths:
            base = [] if root == "crate" else list(parent)
            while segs and segs[0] == "super" and base:
                base, segs = base[:-1], segs[1:]
            node = None
            for seg in segs:
                if "/".join(base + [seg]) in mods:
                    base = base + [seg]
                    node = "/".join(base)
                else:
                    break
            if node is None or node == m or m.startswith(node + "/"):
                continue
            edges.setdefault(m, set()).add(node)
    return edges


def circles_of(edges):
    """Tarjan's strongly connected components of more than one module."""
    nodes = sorted(set(edges) | {t for ts in edges.values() for t in ts})
    index, low, stack, on, sccs = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
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
            sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return nodes, [c for c in sccs if len(c) > 1]


def report_files(files, check):
    edges = file_edges(files)
    nodes, circles = circles_of(edges)
    arrows = sum(len(t) for t in edges.values())
    print(f"file modules: {len(nodes)}, import arrows: {arrows}")
    for c in circles:
        print(f"circle of {len(c)}: {' '.join(c)}")
        inside = set(c)
        pairs = sorted((a, b) for a in c for b in edges.get(a, ()) if b in inside
                       and a < b and a in edges.get(b, ()))
        if pairs:
            print("  importing each other: " + ", ".join(f"{a}<->{b}" for a, b in pairs))
    if not circles:
        print("no import circle")
    if check and circles:
        sys.exit(1)


def main():
    global SRC
    check = "--check" in sys.argv
    paths = [a for a in sys.argv[1:] if not a.startswith("--")]
    if paths:
        SRC = paths[0]
    files = {}
    for root, _, names in os.walk(SRC):
        for n in names:
            if n.endswith(".rs"):
                p = os.path.join(root, n)
                files[os.path.relpath(p, SRC)] = open(p, encoding="utf-8").read()
    if "--files" in sys.argv:
        return report_files(files, check)
    edges = {}
    impls = {}
    for rel, text in sorted(files.items()):
        if TEST_FILES.search(rel) or rel == "lib.rs":
            continue
        m = module_of(rel)
        code = code_of(text)
        for target in re.findall(r"\bcrate::(\w+)", code):
            if target != m and os.path.exists(os.path.join(SRC, target + ".rs")) or \
                    os.path.isdir(os.path.join(SRC, target)) and target != m:
                edges.setdefault(m, set()).add(target)
        # `use crate::{a, b::c}` groups.
        for group in re.findall(r"\bcrate::\{([^}]*)\}", code):
            for target in re.findall(r"(?:^|,)\s*(\w+)", group):
                if target != m and (os.path.exists(os.path.join(SRC, target + ".rs"))
                                    or os.path.isdir(os.path.join(SRC, target))):
                    edges.setdefault(m, set()).add(target)
        n = len(re.findall(r"^impl(<[^>]*>)?\s+Registry\b", code, re.M))
        if n:
            impls[rel] = n
    nodes, circles = circles_of(edges)
    arrows = sum(len(t) for t in edges.values())
    print(f"modules: {len(nodes)}, import arrows: {arrows}")
    if circles:
        for c in circles:
            print(f"circle of {len(c)}: {' '.join(c)}")
            inside = set(c)
            pairs = sorted((a, b) for a in c for b in edges.get(a, ()) if b in inside
                           and a < b and a in edges.get(b, ()))
            if pairs:
                print("  importing each other: " + ", ".join(f"{a}<->{b}" for a, b in pairs))
    else:
        print("no import circle")
    long_files = sorted(((len(t.splitlines()), r) for r, t in files.items()), reverse=True)
    over = [(n, r) for n, r in long_files if n > MAX_LINES]
    print(f"longest files: " + ", ".join(f"{r} {n}" for n, r in long_files[:5]))
    print(f"files over {MAX_LINES} lines: {len(over)}")
    print("impl Registry in: " + ", ".join(f"{r} ({n})" for r, n in sorted(impls.items())))
    if check and (circles or over):
        sys.exit(1)


if __name__ == "__main__":
    main()
