#!/usr/bin/python3
"""The rooms of the build and the arrows between them, read from the tree:
each CMakeLists.txt outside tests/ and bench/ that adds a gulpdb_* library
(and the command and Python module of cli/ and bindings/),
and the gulpdb_* libraries its target_link_libraries names (PUBLIC and
PRIVATE alike; gulpdb_policy and gulpdb_api, which every room links, are
left out).

    scripts/room_graph.py [--root DIR] [--rev REV] [--dot]

Prints one line per room: `folder (target) -> target, target, ...`, then
the rooms nothing links to and those that link to nothing; --dot prints a
Graphviz digraph instead. With --rev, the CMakeLists of that commit.
Standard library only.
"""
import argparse
import os
import re
import subprocess
import sys

SKIP = ("tests/", "bench/", "build/", "third_party/")
COMMON = {"gulpdb_policy", "gulpdb_api"}
FRONTS = ("cli", "bindings")


def cmake_files(root, rev):
    args = ["git", "-C", root, "ls-tree", "-r", "--name-only", rev] if rev else \
        ["git", "-C", root, "ls-files"]
    names = subprocess.run(args, check=True, stdout=subprocess.PIPE, text=True).stdout.split()
    return sorted(n for n in names
                  if os.path.basename(n) == "CMakeLists.txt" and not n.startswith(SKIP))


def read(root, rev, name):
    if rev:
        return subprocess.run(["git", "-C", root, "show", f"{rev}:{name}"], check=True,
                              stdout=subprocess.PIPE, text=True).stdout
    with open(os.path.join(root, name), encoding="utf-8") as f:
        return f.read()


def strip_comments(text):
    return "\n".join(line.split("#", 1)[0] for line in text.split("\n"))


def rooms(root, rev):
    """{target: (folder, set of gulpdb_* targets it links)}"""
    out = {}
    for name in cmake_files(root, rev):
        text = strip_comments(read(root, rev, name))
        folder = os.path.dirname(name) or "."
        for m in re.finditer(r"add_library\(\s*(gulpdb_\w+)\s+(\w+)", text):
            if m.group(2) != "INTERFACE":
                out.setdefault(m.group(1), (folder, set()))
        if folder in FRONTS:  # the command and the Python module, on top
            for m in re.finditer(r"(?:add_executable|pybind11_add_module)\(\s*(\w+)", text):
                out.setdefault(m.group(1), (folder, set()))
        for m in re.finditer(r"target_link_libraries\(\s*(\w+)([^)]*)\)", text):
            target, args = m.group(1), m.group(2)
            if target not in out:
                continue
            links = set(re.findall(r"\b(gulpdb_\w+)\b", args)) - COMMON - {target}
            out[target][1].update(links)
    for target in out:
        out[target] = (out[target][0], out[target][1] & set(out))
    return {t: v for t, v in out.items() if t not in COMMON}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p.add_argument("--rev", help="read the CMakeLists of this commit")
    p.add_argument("--dot", action="store_true", help="print a Graphviz digraph")
    a = p.parse_args()
    graph = rooms(a.root, a.rev)
    if not graph:
        print(f"room_graph: no gulpdb_* library found under {a.root}", file=sys.stderr)
        return 1
    order = sorted(graph, key=lambda t: graph[t][0])
    if a.dot:
        print("digraph rooms {\n  rankdir=BT;\n  node [shape=box];")
        for t in order:
            print(f'  "{graph[t][0]}";')
            for dep in sorted(graph[t][1], key=lambda d: graph[d][0]):
                print(f'  "{graph[t][0]}" -> "{graph[dep][0]}";')
        print("}")
        return 0
    print(f"# Rooms and their arrows ({a.rev or 'working tree'}): "
          f"{len(graph)} rooms, {sum(len(v[1]) for v in graph.values())} arrows")
    for t in order:
        deps = ", ".join(graph[d][0] for d in sorted(graph[t][1], key=lambda d: graph[d][0]))
        print(f"  {graph[t][0]:18s} ({t}) -> {deps or '(nothing)'}")
    used = {d for v in graph.values() for d in v[1]}
    print("  top (nothing links to them): " +
          ", ".join(graph[t][0] for t in order if t not in used))
    return 0


if __name__ == "__main__":
    sys.exit(main())
