#!/usr/bin/python3
"""Sizes of the product source: files over a line limit, C++ classes and
structs over a class limit, and file/line counts per folder.

    scripts/size_report.py [--root DIR] [--rev REV] [--max-file N]
                           [--max-class N] [--max-members N [--members-of CLASS]...]
                           [--check]

Product source is every C++ source or header and Python file in git outside
tests/, bench/ and third_party/. A class is
measured by its body, braces matched (comments and literals skipped); the
out-of-line members of a class (defined as Class::Member in any file, each
from the line that ended the definition before it, constructors too) are
reported beside it. With --rev the counts are of that
commit (git show), not of the working tree. --check exits 1 when a file is
over --max-file lines or a class or struct body over --max-class lines (the
suite's rule, tests/python/test_sizes.py). With --max-members N it also exits
1 when the out-of-line members of a class total more than N lines: of every
class, or only of the classes named by --members-of (repeatable; "Outer::Inner"
for a nested class), each of which must have out-of-line members (a name no
definition uses is an error, so that a renamed class is not held by
nothing).
Standard library only.
"""
import argparse
import collections
import os
import re
import subprocess
import sys

EXCLUDED = ("tests/", "bench/", "third_party/", "build/")
SUFFIXES = (".cc", ".h", ".py")


def product_files(root, rev):
    args = ["git", "-C", root, "ls-tree", "-r", "--name-only", rev] if rev else \
        ["git", "-C", root, "ls-files"]
    names = subprocess.run(args, check=True, stdout=subprocess.PIPE, text=True).stdout.split()
    return sorted(n for n in names if n.endswith(SUFFIXES) and not n.startswith(EXCLUDED))


def read(root, rev, name):
    if rev:
        return subprocess.run(["git", "-C", root, "show", f"{rev}:{name}"], check=True,
                              stdout=subprocess.PIPE, text=True, errors="replace").stdout
    with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
        return f.read()


def line_count(text):
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def code_only(text):
    """The text with comments, string and character literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


CLASS_RE = re.compile(r"\b(class|struct)\s+(?:GULPDB_EXPORT\s+)?([A-Za-z_][\w:]*)\s*(?:final\s*)?"
                      r"(?::[^;{()]*)?\{")


def classes(text):
    """(name, first line, lines) of every class or struct body in a C++ file."""
    code = code_only(text)
    found = []
    for m in CLASS_RE.finditer(code):
        start = m.end() - 1
        depth = 0
        for j in range(start, len(code)):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    first = code.count("\n", 0, m.start()) + 1
                    last = code.count("\n", 0, j) + 1
                    found.append((m.group(2), first, last - first + 1))
                    break
    return found


# A definition from the start of a line: a return type (and the comment
# and blank lines after the definition before it), or the class name itself
# (a constructor).
MEMBER_RE = re.compile(r"^(?:[^\s#/][^;{}]*?\b|(?=[A-Z]))((?:[A-Z]\w*::)+)~?\w+\([^;]*?\)[^;{]*\{",
                       re.M)


def out_of_line(text):
    """Lines of member functions defined outside their class, by class name."""
    code = code_only(text)
    sizes = collections.Counter()
    for m in MEMBER_RE.finditer(code):
        owner = m.group(1)[:-2]
        depth = 0
        for j in range(m.end() - 1, len(code)):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    sizes[owner] += code.count("\n", m.start(), j) + 1
                    break
    return sizes


def report(root, rev, max_file, max_class):
    files = product_files(root, rev)
    per_folder = collections.OrderedDict()
    big_files, big_classes = [], []
    members = collections.Counter()
    for name in files:
        text = read(root, rev, name)
        lines = line_count(text)
        folder = os.path.dirname(name) or "."
        count = per_folder.setdefault(folder, [0, 0])
        count[0] += 1
        count[1] += lines
        if lines > max_file:
            big_files.append((name, lines))
        if name.endswith((".cc", ".h")):
            for cls, first, size in classes(text):
                if size > max_class:
                    big_classes.append((f"{name}:{first}", cls, size))
            members.update(out_of_line(text))
    return files, per_folder, big_files, big_classes, members


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p.add_argument("--rev", help="measure this commit instead of the working tree")
    p.add_argument("--max-file", type=int, default=1000)
    p.add_argument("--max-class", type=int, default=400)
    p.add_argument("--max-members", type=int,
                   help="with --check, exit 1 if a class's out-of-line members total more lines")
    p.add_argument("--members-of", action="append", default=[], metavar="CLASS",
                   help="hold only this class to --max-members (repeatable)")
    p.add_argument("--check", action="store_true",
                   help="exit 1 if a file is over --max-file or a class over --max-class "
                        "(or its out-of-line members over --max-members)")
    a = p.parse_args()
    if a.max_file <= 0 or a.max_class <= 0:
        p.error("--max-file and --max-class must be positive")
    if a.max_members is not None and a.max_members <= 0:
        p.error("--max-members must be positive")
    if a.members_of and a.max_members is None:
        p.error("--members-of needs --max-members")
    for cls in a.members_of:
        if not re.fullmatch(r"[A-Za-z_]\w*(::[A-Za-z_]\w*)*", cls):
            p.error(f"--members-of {cls!r}: not a C++ class name")
    files, per_folder, big_files, big_classes, members = report(a.root, a.rev, a.max_file,
                                                                a.max_class)
    where = a.rev or "working tree"
    print(f"# Product source at {where}: {len(files)} files, "
          f"{sum(c[1] for c in per_folder.values())} lines")
    print(f"\n## Files over {a.max_file} lines: {len(big_files)}")
    for name, lines in sorted(big_files, key=lambda x: -x[1]):
        print(f"  {lines:6d}  {name}")
    print(f"\n## Class or struct bodies over {a.max_class} lines: {len(big_classes)}")
    for at, cls, size in sorted(big_classes, key=lambda x: -x[2]):
        print(f"  {size:6d}  {cls}  ({at})")
    print(f"\n## Out-of-line members over {a.max_class} lines per class (information)")
    for cls, size in members.most_common():
        if size > a.max_class:
            print(f"  {size:6d}  {cls}")
    over_members, unknown = [], []
    if a.max_members is not None:
        held = a.members_of or sorted(members)
        print(f"\n## Out-of-line members of "
              f"{'the named classes' if a.members_of else 'every class'}, limit {a.max_members}")
        for cls in held:
            size = members.get(cls, 0)
            if a.members_of:
                print(f"  {size:6d}  {cls}")
            if size == 0:
                unknown.append(cls)
            elif size > a.max_members:
                over_members.append((cls, size))
                if not a.members_of:
                    print(f"  {size:6d}  {cls}")
    print("\n## Per folder: files, lines")
    for folder, (n, lines) in sorted(per_folder.items()):
        print(f"  {folder:34s} {n:4d} {lines:7d}")
    failed = False
    if a.check and big_files:
        print(f"\nsize_report: {len(big_files)} product file(s) over {a.max_file} lines",
              file=sys.stderr)
        failed = True
    if a.check and big_classes:
        print(f"\nsize_report: {len(big_classes)} class or struct bod(y/ies) over "
              f"{a.max_class} lines: " + ", ".join(cls for _, cls, _ in big_classes),
              file=sys.stderr)
        failed = True
    if a.check and over_members:
        print(f"\nsize_report: {len(over_members)} class(es) with out-of-line members over "
              f"{a.max_members} lines: " + ", ".join(f"{c} ({n})" for c, n in over_members),
              file=sys.stderr)
        failed = True
    if a.check and unknown and a.members_of:
        print("\nsize_report: no out-of-line members of " + ", ".join(unknown) +
              " (a class renamed or gone? --members-of names it)", file=sys.stderr)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
