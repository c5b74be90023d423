"""Every runnable example of README.md, docs/**/*.md and bench/README.md runs
as written, and the documentation's links lead somewhere.

The fenced blocks tagged ``sh`` (or ``bash``), ``python`` and ``cpp`` are the
runnable ones; a block that cannot run here carries an HTML comment
``<!-- not run: REASON -->`` on the line before its fence, and a runnable
block that neither runs nor says why fails the test. A block that needs a
codec only some builds have carries ``<!-- needs: h264 -->`` (blocks after it
that use what it made carry it too): it runs where the build has the codec
(``gulpdb.codecs``) and is counted as marked where it has not (the .deb and the
wheel; test_h264_dataset.py checks their refusal). Blocks tagged ``cmake``
must say why too; other blocks (untagged, ``json``, ...) are text. Each test
prints how many blocks ran and how many are marked.

The convention the examples are written for (docs/testing.md, "The examples
in the documentation"):

- each document runs in a scratch directory of its own, block after block
  (a block sees what the ones before it made); ``tests`` there is the
  repository's, so ``tests/fixtures/...`` paths work, and
  ``build/sample_dataset`` is the quick start's sample dataset
  (``scripts/sample_dataset.sh``);
- ``gulpdb`` on the PATH is the command under test and ``python3`` imports the
  package under test;
- ``s3://my-bucket`` is a local s3rver of the document's own (``AWS_ENDPOINT_URL``
  and credentials set, a private ``GULPDB_CACHE``), started when one of its
  examples names an ``s3://`` URL: two documents may push to the same prefix;
- ``sh`` blocks run under ``bash -e -o pipefail``; a ``python`` block is one
  program; a ``cpp`` block is a whole program, compiled against the build
  tree's libgulpdb and run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
import re
import shutil
import subprocess
import sys
from typing import Dict, List, Optional

import pytest

from conftest import GULPDB_CLI, PYTHON, python_subprocess_env

import gulpdb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tests", "harness"))
import s3_proxy  # noqa: E402  (tests/harness/s3_proxy.py)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUCKET = "my-bucket"
RUNNABLE = {"sh": "sh", "bash": "sh", "python": "python", "cpp": "cpp", "c++": "cpp"}
MUST_SAY_WHY = {"cmake"}
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.*?)\s*-->", re.S)
NEEDS = re.compile(r"<!--\s*needs:\s*([a-z0-9]+)\s*-->")
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[^\s`]*)[ \t]*$")


@dataclasses.dataclass
class Block:
    path: str  # relative to the repository
    line: int  # of the opening fence, 1-based
    lang: str  # "sh", "python", "cpp", or another tag
    code: str
    not_run: Optional[str]  # the reason, when marked


def documents() -> List[str]:
    """The documentation: the README, docs/, and the benchmarks' page."""
    found = [os.path.join(REPO, "README.md")]
    found += sorted(glob.glob(os.path.join(REPO, "docs", "**", "*.md"), recursive=True))
    found.append(os.path.join(REPO, "bench", "README.md"))
    return [os.path.relpath(p, REPO) for p in found]


def blocks_of(path: str) -> List[Block]:
    """The fenced blocks of a Markdown file, with the reason of a ``not run`` mark."""
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        lines = f.read().split("\n")
    out: List[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, tag = m.group("indent"), m.group("lang").lower()
        start = i
        body: List[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        if i == len(lines):
            raise AssertionError(f"{path}:{start + 1}: a fence that is never closed")
        i += 1
        previous = start - 1
        while previous >= 0 and not lines[previous].strip():
            previous -= 1
        mark = NOT_RUN.fullmatch(lines[previous].strip()) if previous >= 0 else None
        reason = mark.group(1) if mark else None
        if mark is not None and not reason:
            raise AssertionError(f"{path}:{start + 1}: a 'not run' mark without a reason")
        needs = NEEDS.fullmatch(lines[previous].strip()) if previous >= 0 else None
        if needs is not None and needs.group(1) not in ("jpeg", "h264"):
            raise AssertionError(f"{path}:{start + 1}: 'needs' names no codec: {needs.group(1)}")
        if needs is not None and needs.group(1) not in gulpdb.codecs:
            reason = f"needs a build with {needs.group(1)} support (this one has {gulpdb.codecs})"
        out.append(Block(path, start + 1, RUNNABLE.get(tag, tag), "\n".join(body) + "\n", reason))
    return out


# ---- the scratch directory ------------------------------------------------------------


class Scratch:
    """A document's scratch directory and the environment its examples run in."""

    def __init__(self, root: str, s3rver: Optional[s3_proxy.S3rverProcess]) -> None:
        self.root = root
        os.symlink(os.path.join(REPO, "tests"), os.path.join(root, "tests"))
        os.makedirs(os.path.join(root, "build"))
        bin_dir = os.path.join(root, ".bin")
        os.makedirs(bin_dir)
        os.symlink(GULPDB_CLI, os.path.join(bin_dir, "gulpdb"))
        wrapper = os.path.join(bin_dir, "python3")
        with open(wrapper, "w", encoding="utf-8") as f:
            f.write(f'#!/bin/sh\nexec "{PYTHON}" "$@"\n')
        os.chmod(wrapper, 0o755)
        env = python_subprocess_env()
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", os.defpath)
        env.update(
            # Without a server of its own, a document's URLs reach nothing.
            AWS_ENDPOINT_URL=s3rver.endpoint if s3rver else "http://127.0.0.1:9",
            AWS_ACCESS_KEY_ID=s3rver.ACCESS_KEY if s3rver else "none",
            AWS_SECRET_ACCESS_KEY=s3rver.SECRET_KEY if s3rver else "none",
            AWS_REGION="us-east-1",
            GULPDB_CACHE=os.path.join(root, ".cache"),
            GULPDB_S3_MAX_ATTEMPTS="3",
            OMP_NUM_THREADS="1",
        )
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "GULPDB_CACHE_DIR", "AWS_ENDPOINT_URL_S3"):
            env.pop(name, None)
        self.env = env

    def sample_dataset(self) -> None:
        """build/sample_dataset, as the quick start makes it."""
        subprocess.run(
            ["bash", os.path.join(REPO, "scripts", "sample_dataset.sh"), GULPDB_CLI,
             os.path.join(self.root, "build", "sample_dataset")],
            env=self.env, cwd=self.root, check=True, capture_output=True, timeout=300,
        )  # fmt: skip

    def run(self, block: Block, build: Optional[str]) -> subprocess.CompletedProcess:
        where = f"{block.path}:{block.line}"
        if block.lang == "sh":
            command = ["bash", "-e", "-o", "pipefail", "-c", block.code, where]
        elif block.lang == "python":
            command = [PYTHON, "-c", block.code]
        else:
            assert build is not None
            command = [self.compile_cpp(block, build)]
        return subprocess.run(
            command, env=self.env, cwd=self.root, capture_output=True, text=True, timeout=300
        )

    def compile_cpp(self, block: Block, build: str) -> str:
        source = os.path.join(self.root, f".example_{block.line}.cc")
        program = source[:-3]
        with open(source, "w", encoding="utf-8") as f:
            f.write(block.code)
        result = subprocess.run(
            ["c++", "-std=c++17", "-o", program, "-I", os.path.join(REPO, "include"), source,
             *link_flags(build)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, f"{block.path}:{block.line} does not compile:\n" + (
            result.stderr[-4000:]
        )
        return program


def build_tree() -> Optional[str]:
    """The build tree of the package under test, when it has the static libgulpdb
    (tests run against an installed wheel have none)."""
    candidate = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(gulpdb.__file__))))
    for name in ("lib/libgulpdb.a", "gulpdb.pc.prefix-later"):
        if not os.path.exists(os.path.join(candidate, name)):
            return None
    return candidate


def link_flags(build: str) -> List[str]:
    """libgulpdb.a of the build tree and what gulpdb.pc says it needs."""
    fields: Dict[str, str] = {}
    with open(os.path.join(build, "gulpdb.pc.prefix-later"), encoding="utf-8") as f:
        for line in f:
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
    modules = [m.strip() for m in fields.get("Requires.private", "").split(",") if m.strip()]
    flags = [os.path.join(build, "lib", "libgulpdb.a")]
    with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8") as f:
        if "GULPDB_SANITIZE:BOOL=ON" in f.read():  # the asan-ubsan preset's library
            flags.insert(0, "-fsanitize=address,undefined")
    if modules:
        flags += subprocess.run(
            ["pkg-config", "--libs", *modules], check=True, capture_output=True, text=True
        ).stdout.split()
    return flags + fields.get("Libs.private", "").split()


def run_document(path: str, root: str, langs: set) -> Dict:
    blocks = blocks_of(path)
    with contextlib.ExitStack() as stack:
        server = None
        if any("s3://" in b.code for b in blocks if not b.not_run and b.lang in langs):
            server = stack.enter_context(s3_proxy.S3rverProcess(BUCKET))
        return run_blocks(path, blocks, Scratch(root, server), langs)


def run_blocks(path: str, blocks: List[Block], scratch: "Scratch", langs: set) -> Dict:
    if any("build/sample_dataset" in b.code for b in blocks if not b.not_run):
        scratch.sample_dataset()
    build = build_tree()
    ran, marked, text = [], [], []
    for block in blocks:
        if block.lang not in RUNNABLE.values() and block.lang not in MUST_SAY_WHY:
            text.append(block)
            continue
        if block.not_run is not None:
            marked.append(block)
            continue
        assert block.lang not in MUST_SAY_WHY, (
            f"{path}:{block.line}: a {block.lang} block cannot run here: mark it "
            "<!-- not run: REASON -->"
        )
        if block.lang not in langs:
            continue
        if block.lang == "cpp" and build is None:
            pytest.skip("no build tree with libgulpdb.a to compile the C++ examples against")
        result = scratch.run(block, build)
        assert result.returncode == 0, (
            f"{path}:{block.line} ({block.lang}) exits {result.returncode}:\n"
            f"{block.code}\n--- stdout\n{result.stdout[-3000:]}\n--- stderr\n"
            f"{result.stderr[-3000:]}"
        )
        # An example must not meet the warnings that say it went wrong.
        assert "no video's meta has the key" not in result.stderr, (path, block.line, result.stderr)
        ran.append(block)
    print(
        f"{path}: {len(ran)} examples ran, {len(marked)} marked not run"
        + "".join(f"\n  {b.path}:{b.line} not run: {b.not_run}" for b in marked)
    )
    return {"ran": ran, "marked": marked, "text": text}


@pytest.mark.parametrize("path", documents())
def test_shell_and_python_examples_run_as_written(path, tmp_path):
    counts = run_document(path, str(tmp_path), {"sh", "python"})
    runnable = [b for b in counts["ran"] + counts["marked"] if b.lang in ("sh", "python")]
    if path == "README.md":
        # The README's own examples must not be marked away wholesale.
        assert len([b for b in counts["ran"] if b.lang in ("sh", "python")]) >= 6, runnable


@pytest.mark.parametrize(
    "path", [p for p in documents() if any(b.lang == "cpp" for b in blocks_of(p))]
)
def test_cpp_examples_compile_and_run_as_written(path, tmp_path):
    run_document(path, str(tmp_path), {"cpp"})


def test_the_block_parser_reads_marks_languages_and_indented_fences(tmp_path):
    """The parser itself: marks, languages, indented fences."""
    doc = tmp_path / "doc.md"
    doc.write_text(
        "text\n\n<!-- not run: needs a cluster -->\n```sh\nexit 1\n```\n\n"
        "- item\n\n  ```python\n  print(1)\n  ```\n\n```json\n{}\n```\n"
        "\n<!-- needs: h264 -->\n```sh\ngulpdb ingest d --codec h264\n```\n"
        "\n<!-- needs: jpeg -->\n```sh\ntrue\n```\n",
        encoding="utf-8",
    )
    blocks = blocks_of(os.path.relpath(str(doc), REPO))
    h264 = None if "h264" in gulpdb.codecs else (
        f"needs a build with h264 support (this one has {gulpdb.codecs})")
    assert [(b.lang, b.not_run) for b in blocks] == [
        ("sh", "needs a cluster"), ("python", None), ("json", None), ("sh", h264), ("sh", None),
    ]
    assert blocks[1].code == "print(1)\n"
    doc.write_text("<!-- needs: vp9 -->\n```sh\ntrue\n```\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="names no codec: vp9"):
        blocks_of(os.path.relpath(str(doc), REPO))


# ---- links, and one place for the documentation ----------------------------------------

LINK = re.compile(r"\]\(([^)\s]+)\)")
# Markdown files that may live outside docs/: the front page, the benchmarks'
# page, the changelog, and notes on what a folder holds, beside it.
MARKDOWN_OUTSIDE_DOCS = {
    "README.md", "CHANGELOG.md", "bench/README.md", "bench/results/latest.md",
    "bench/results/remote/latest.md", "bench/results/h264/latest.md",
    "bench/results/partitions/latest.md", "bench/results/damaged/latest.md",
    "bench/results/crc32c/latest.md", "bench/results/small_commits/latest.md",
    "bench/results/query_lang/latest.md", "bench/results/view/view.md",
    "bench/results/push_verify/latest.md",
    "bench/results/frame_cache/latest.md", "bench/results/frame_cache/blocks.md",
    "bench/results/frame_cache/readahead.md",
    "bindings/README.md", "tests/fixtures/README.md",
    "tests/harness/README.md", "tests/harness/tls/README.md",
}


def relative_links(path: str) -> List[str]:
    """The targets of a document's relative Markdown links (outside code blocks)."""
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"^[ \t]*```.*?^[ \t]*```", "", text, flags=re.S | re.M)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def anchors_of(path: str) -> set:
    """GitHub's anchors for a document's headings, plus explicit <a id=...>."""
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"^[ \t]*```.*?^[ \t]*```", "", text, flags=re.S | re.M)
    found = set(re.findall(r'<a id="([^"]+)"', text))
    for heading in re.findall(r"^#+[ \t]+(.+?)[ \t]*$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


@pytest.mark.parametrize("path", documents())
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(path):
    links = relative_links(path)
    broken = []
    for link in links:
        target, _, anchor = link.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
        if not os.path.exists(os.path.join(REPO, resolved)):
            broken.append(f"{link} (no {resolved})")
        elif anchor and resolved.endswith(".md") and anchor not in anchors_of(resolved):
            broken.append(f"{link} (no heading #{anchor} in {resolved})")
    assert not broken, f"{path}: broken links: " + ", ".join(broken)


def test_the_index_links_every_page_of_docs():
    linked = {
        os.path.normpath(os.path.join("docs", link.partition("#")[0]))
        for link in relative_links(os.path.join("docs", "index.md"))
    }
    pages = {p for p in documents() if p.startswith("docs" + os.sep) and p != "docs/index.md"}
    assert pages, "no pages found"
    assert not pages - linked, f"docs/index.md does not link {sorted(pages - linked)}"


def test_documentation_lives_in_docs():
    """Markdown outside docs/ is the README, the benchmarks' page, the changelog
    or a note on what a folder holds (listed above); everything else goes to docs/."""
    found = set()
    for root, dirs, files in os.walk(REPO):
        rel = os.path.relpath(root, REPO)
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "build"
                   and not (rel == "." and d == "docs") and d != "node_modules"]
        found |= {os.path.normpath(os.path.join(rel, f)) for f in files if f.endswith(".md")}
    assert "README.md" in found
    stray = sorted(p for p in found if p not in MARKDOWN_OUTSIDE_DOCS and
                   not p.startswith("tests/fixtures/"))
    assert not stray, f"documentation outside docs/: {stray} (move it to docs/ and index it)"


# ---- the man page's ENVIRONMENT section -----------------------------------------------

PRODUCT_FOLDERS = ("cli", "engine", "index", "ingest", "s3", "include", "bindings", "util")
ENV_READ = re.compile(
    r"""(?:getenv\(\s*|Get\(\s*env\s*,\s*|environ\.get\(\s*|for \(const char\* name : \{)"""
    r"""["']([A-Z][A-Z0-9_]+)["'](?:\s*,\s*["']([A-Z][A-Z0-9_]+)["'])?"""
)


def variables_the_code_reads() -> Dict[str, str]:
    """Every environment variable the product code reads (C++ getenv and
    S3Config's lookups, the Python package's os.environ.get), with where."""
    found: Dict[str, str] = {}
    for folder in PRODUCT_FOLDERS:
        for path in glob.glob(os.path.join(REPO, folder, "**", "*"), recursive=True):
            if not path.endswith((".cc", ".h", ".py")):
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for m in ENV_READ.finditer(text):
                for name in m.groups():
                    if name:
                        found.setdefault(name, os.path.relpath(path, REPO))
    return found


ENV_TABLE_ROW = re.compile(r"""\{"(GULPDB_[A-Z0-9_]+)",\s*K::k(\w+),\s*"([^"]*)",""")


def the_env_table() -> Dict[str, str]:
    """The GULPDB_* variables of util/env.cc's table, with their kinds."""
    with open(os.path.join(REPO, "util", "env.cc"), encoding="utf-8") as f:
        return {m.group(1): m.group(2) for m in ENV_TABLE_ROW.finditer(f.read())}


def test_gulpdb_variables_are_read_only_through_the_table():
    """A GULPDB_* variable is read by util/env.h's readers, from its one
    table; no product file calls getenv on one by itself."""
    table = the_env_table()
    assert {"GULPDB_CACHE_BYTES", "GULPDB_PUSH_GRACE", "GULPDB_S3_MAX_ATTEMPTS",
            "GULPDB_TEST_BUG"} <= set(table), sorted(table)  # fmt: skip
    assert set(table.values()) <= {"Text", "Flag", "Count", "Bytes", "Duration", "Choice"}
    read = variables_the_code_reads()
    unlisted = {n: w for n, w in read.items() if n.startswith("GULPDB_") and n not in table}
    assert not unlisted, f"GULPDB_* read but not in util/env.cc's table: {unlisted}"
    direct = re.compile(r"""(?:getenv|environ\.get)\(\s*["'](GULPDB_[A-Z0-9_]+)""")
    literal = re.compile(r'(?:Env\w*|ParseWhole(?:32)?|Get)\(\s*(?:env\s*,\s*)?"(GULPDB_[A-Z0-9_]+)"')
    seen = set()
    for folder in PRODUCT_FOLDERS:
        for path in glob.glob(os.path.join(REPO, folder, "**", "*"), recursive=True):
            if not path.endswith((".cc", ".h", ".py")) or path.endswith("util/env.cc"):
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            where = os.path.relpath(path, REPO)
            assert not direct.search(text), f"{where} reads a GULPDB_* variable by itself"
            for m in literal.finditer(text):
                assert m.group(1) in table, (m.group(1), where)
                seen.add(m.group(1))
    assert {"GULPDB_CACHE_BYTES", "GULPDB_PUSH_LEASE", "GULPDB_S3_PART_SIZE"} <= seen, seen


def test_the_man_page_lists_every_environment_variable_the_code_reads(tmp_path):
    read = variables_the_code_reads()
    for name in the_env_table():
        read.setdefault(name, "util/env.cc")
    for expected in ("AWS_ACCESS_KEY_ID", "GULPDB_S3_MAX_ATTEMPTS", "GULPDB_CACHE",
                     "GULPDB_PUSH_GRACE", "GULPDB_ALLOW_NETWORK_INDEX"):  # fmt: skip
        assert expected in read, (expected, sorted(read))  # the scan itself works
    with open(os.path.join(REPO, "cmake", "man_page.cmake"), encoding="utf-8") as f:
        page = f.read()
    section = page[page.index("[ENVIRONMENT]") : page.index("[SEE ALSO]")]
    listed = set()
    for line in section.splitlines():
        if line.startswith(".B "):
            listed |= {name.strip() for name in line[3:].split(",")}
    missing = sorted(name for name in read if name not in listed)
    assert not missing, "read by the code but not in the man page's ENVIRONMENT: " + ", ".join(
        f"{n} ({read[n]})" for n in missing
    )
    # And the page renders, with a line for each.
    help2man = shutil.which("help2man")
    if help2man is None:
        pytest.skip("help2man is not installed (scripts/setup.sh installs it)")
    out = tmp_path / "gulpdb.1.gz"
    subprocess.run(
        ["cmake", f"-DGULPDB={GULPDB_CLI}", f"-DHELP2MAN={help2man}", f"-DOUTPUT={out}", "-P",
         os.path.join(REPO, "cmake", "man_page.cmake")],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    import gzip

    text = gzip.decompress(out.read_bytes()).decode("utf-8")
    environment = text[text.index(".SH ENVIRONMENT") : text.index(".SH \"SEE ALSO\"")]
    for name in read:
        assert name in environment, name
    assert "\\-\\-ffmpeg" in environment and "\\-\\-grace" in environment


@pytest.mark.parametrize("page", ["h264.md", "distributed_ingest.md"])
def test_shell_examples_name_the_python_that_has_numpy(page):
    """A shell example that runs Python code of the package must name the
    interpreter that has it and NumPy (Debian's /usr/bin/python3, or a venv's
    python), not a bare ``python3`` that may be another one: the test harness
    maps ``python3`` to the interpreter under test, so only the text can show it."""
    bare = re.compile(r"(^|[;&|(]\s*|\$\(\s*)python3\b")
    found = []
    blocks = [b for b in blocks_of(os.path.join("docs", page)) if b.lang == "sh"]
    for block in blocks:
        for n, line in enumerate(block.code.splitlines()):
            if bare.search(line.split("#", 1)[0]):
                found.append(f"docs/{page}:{block.line + 1 + n}: {line.strip()}")
    assert any("/usr/bin/python3 " in b.code for b in blocks)  # the check saw the line
    assert not found, "\n".join(found)
