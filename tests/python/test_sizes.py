"""No product source file over 1,000 lines, no class or struct body over
400, and the classes split along their seams keep their out-of-line members
under 400 (scripts/size_report.py --check), and the report finds what it
should: a file over the limit, a class body over the class limit, a class's
members over the members limit, braces in comments and strings not counted."""

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "size_report.py")


def _run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=300)


def _git_repo(path, files):
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    for name, text in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    subprocess.run(["git", "-C", str(path), "add", "-A"], check=True)


def test_no_product_file_is_over_1000_lines():
    if not os.path.isdir(os.path.join(REPO, ".git")) and not os.path.isfile(
            os.path.join(REPO, ".git")):
        pytest.fail("the size check needs the source tree's git checkout at " + REPO)
    result = _run("--root", REPO, "--check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Files over 1000 lines: 0" in result.stdout


def test_no_product_class_is_over_400_lines():
    # The three that were over (JSON's value scanner, the health check, the
    # .gmeta reader) were split along their seams; the report still sees them.
    result = _run("--root", REPO, "--max-class", "400")
    assert result.returncode == 0, result.stderr
    assert "Class or struct bodies over 400 lines: 0" in result.stdout, result.stdout
    bodies = _run("--root", REPO, "--max-class", "1").stdout
    for cls in ("ValueScanner", "Checker", "GmetaReader::Impl"):
        sizes = [int(line.split()[0]) for line in bodies.splitlines()
                 if line.split()[1:2] == [cls]]
        assert sizes and all(0 < n <= 400 for n in sizes), (cls, sizes)


# Classes whose out-of-line members (Class::Member defined in any file) the
# check holds under 400 lines: the writer's orchestrator and the classes it
# was split into, an S3 request's transfer and its response, and the public
# Dataset facade with the decoded read it forwards to.
MEMBERS_HELD = (
    "Writer::Impl",
    "WriteBatch",
    "OpenChunk",
    "WriterRecovery",
    "Transfer",
    "ResponseReceiver",
    "Dataset",
    "DecodedRead",
)


def _members_check(root, limit, held):
    args = ["--root", str(root), "--check", "--max-members", str(limit)]
    for cls in held:
        args += ["--members-of", cls]
    return _run(*args)


def test_split_classes_keep_their_members_under_400_lines():
    result = _members_check(REPO, 400, MEMBERS_HELD)
    assert result.returncode == 0, result.stdout + result.stderr
    section = result.stdout.split("## Out-of-line members of the named classes")[1]
    section = section.split("\n## ")[0]
    sizes = {line.split()[1]: int(line.split()[0]) for line in section.splitlines()[1:]
             if line.strip()}
    for cls in MEMBERS_HELD:
        assert 0 < sizes.get(cls, 0) <= 400, (cls, sizes)


def test_members_over_the_limit_fail_the_check(tmp_path):
    # A declaration between definitions, so that each counts its own 3 lines.
    member = "int Big::F{n}() {{\n  return {n};\n}}\nint v{n};\n"
    _git_repo(tmp_path, {
        "engine/a.h": "class Big {\n  int F0();\n};\nclass Fits {\n  int G();\n};\n",
        "engine/a.cc": "".join(member.format(n=n) for n in range(134)),  # 402 lines
        "engine/b.cc": "int Fits::G() {\n  return 0;\n}\n",
        "tests/t.cc": "".join(member.format(n=n) for n in range(500)).replace("Big", "T"),
    })
    result = _members_check(tmp_path, 400, ["Big", "Fits"])
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Big (402)" in result.stderr and "Fits" not in result.stderr
    assert "     3  Fits" in result.stdout
    assert _members_check(tmp_path, 402, ["Big", "Fits"]).returncode == 0
    # A class named but never defined out of line (renamed, gone) fails too.
    gone = _members_check(tmp_path, 402, ["Big", "Gone"])
    assert gone.returncode == 1 and "Gone" in gone.stderr


def test_a_class_over_the_limit_fails_the_check(tmp_path):
    body = "  int f() { return 1; }\n"
    _git_repo(tmp_path, {
        "engine/a.h": "class Big {\n" + body * 401 + "};\nclass Fits {\n" + body * 398 + "};\n",
        "tests/b.h": "class TestOnly {\n" + body * 900 + "};\n",
    })
    result = _run("--root", str(tmp_path), "--check")
    assert result.returncode == 1
    assert "Class or struct bodies over 400 lines: 1" in result.stdout
    assert "   403  Big  (engine/a.h:1)" in result.stdout
    assert "Big" in result.stderr and "Fits" not in result.stdout
    assert "TestOnly" not in result.stdout


def test_a_file_over_the_limit_fails_the_check(tmp_path):
    _git_repo(tmp_path, {
        "engine/big.cc": "int x;\n" * 1001,
        "engine/small.cc": "int y;\n" * 1000,
        "tests/huge_test.cc": "int z;\n" * 5000,  # tests are not product code
    })
    result = _run("--root", str(tmp_path), "--check")
    assert result.returncode == 1
    assert "1001  engine/big.cc" in result.stdout
    assert "small.cc" not in result.stdout.split("## Class")[0]
    assert "huge_test" not in result.stdout
    assert "engine                                2    2001" in result.stdout


def test_class_bodies_are_brace_matched(tmp_path):
    body = "  int f() { return 1; }\n" * 450
    _git_repo(tmp_path, {
        "util/a.h": ("// a { in a comment\nclass Big {\n" + body + "  const char* s = \"}}}\";\n"
                     "};\nstruct Small {\n  int x;\n};\n"),
    })
    result = _run("--root", str(tmp_path), "--max-class", "400")
    assert result.returncode == 0
    assert "Big  (util/a.h:2)" in result.stdout
    assert "   453  Big" in result.stdout
    assert "Small" not in result.stdout


@pytest.mark.parametrize("args", [["--max-file", "0"], ["--max-class", "-3"],
                                  ["--max-file", "many"], ["--max-members", "0"],
                                  ["--members-of", "Writer::Impl"],
                                  ["--max-members", "400", "--members-of", "not a class"]])
def test_bad_limits_are_refused(args):
    result = _run(*args)
    assert result.returncode == 2
    assert "--max-" in result.stderr


def test_room_graph_reads_the_arrows_from_the_cmakelists(tmp_path):
    _git_repo(tmp_path, {
        "util/CMakeLists.txt": "add_library(gulpdb_util STATIC a.cc)\n",
        "engine/low/CMakeLists.txt": ("# gulpdb_high is named only in this comment\n"
                                      "add_library(gulpdb_low STATIC b.cc)\n"
                                      "target_link_libraries(gulpdb_low PRIVATE gulpdb_policy "
                                      "gulpdb_util)\n"),
        "engine/high/CMakeLists.txt": ("add_library(gulpdb_high STATIC c.cc)\n"
                                       "target_link_libraries(gulpdb_high\n  PUBLIC gulpdb_api\n"
                                       "  PRIVATE gulpdb_low gulpdb_util Threads::Threads)\n"),
        "tests/CMakeLists.txt": "add_library(gulpdb_test_only STATIC t.cc)\n",
    })
    script = os.path.join(REPO, "scripts", "room_graph.py")
    out = subprocess.run([sys.executable, script, "--root", str(tmp_path)], check=True,
                         stdout=subprocess.PIPE, text=True, timeout=300).stdout
    assert "3 rooms, 3 arrows" in out
    assert "engine/high" in out and "(gulpdb_high) -> engine/low, util" in out
    assert "(gulpdb_low) -> util" in out
    assert "(gulpdb_util) -> (nothing)" in out
    assert "test_only" not in out
    dot = subprocess.run([sys.executable, script, "--root", str(tmp_path), "--dot"], check=True,
                         stdout=subprocess.PIPE, text=True, timeout=300).stdout
    assert '"engine/high" -> "engine/low";' in dot
    assert '"engine/low" -> "engine/high";' not in dot
