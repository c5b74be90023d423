#!/usr/bin/env bash
# The packaging test (scripts/test.sh package): gulpdb installed the ways its
# users install it, used from outside the source and build trees.
#
#   package_sh          scripts/package.sh writes the wheel and the .deb
#                       (the `package` preset's tree: shared libgulpdb)
#   deb_contents        dpkg-deb -c: the files expected, no build-tree path,
#                       no test or benchmark program, no RPATH; the
#                       machine-readable copyright file at
#                       /usr/share/doc/gulpdb/copyright
#   deb_control         the control fields: Version, Depends (dpkg-shlibdeps
#                       plus python3, python3-numpy), Recommends, Suggests
#   pip_source          `pip install --no-build-isolation --no-index .` into a
#                       --system-site-packages venv (its own static tree,
#                       build/wheel); `python3 -m build --no-isolation --wheel`
#   python_suite        tests/python against that venv's package, from outside
#                       the repository, PYTHONPATH unset (conftest.py checks
#                       that gulpdb comes from the venv); all but
#                       test_lifecycle_finds_bugs.py, which shows the lifecycle
#                       test finds bugs put back, a property of the test and
#                       not of the package (the dev suite runs it)
#   dist_wheel          package.sh's wheel in another venv: import, command,
#                       metadata (dependencies, licence, licence files)
#   cmake_shared        cmake --install of the package tree; find_package and
#                       pkg-config consumers (tests/package); exported symbols;
#                       the command's sources and the Python module's objects
#                       linked to libgulpdb.so alone
#   cmake_static        the same for a static libgulpdb (build/wheel's tree),
#                       with `pkg-config --static`
#   completion_and_man  the installed bash completion against every
#                       subcommand's --help; the installed man page
#   versions            one version everywhere: CMakeLists.txt, gulpdb
#                       --version, gulpdb.__version__, the wheel's metadata,
#                       the .deb, gulpdbConfigVersion.cmake, gulpdb.pc
#   deb_install         as root: dpkg -i, then the command, `import gulpdb`
#                       and a consumer against /usr, then dpkg -P (also on
#                       failure) leaves nothing behind; otherwise dpkg -x
#                       into a directory and the same from there
#
#   tests/package/package_test.sh [STEP...]
#
# Each step logs to $work/<step>.log (its end is printed when it fails;
# GULPDB_KEEP_PACKAGE_TEST=1 keeps $work). The last line
# is "package: N passed, M failed"; the exit status is 1 if a step failed.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONDONTWRITEBYTECODE=1
unset PYTHONPATH
# pip as a fresh machine has it: no configuration (find-links, indexes) from here.
export PIP_CONFIG_FILE=/dev/null
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL
python=/usr/bin/python3
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
version=$(sed -nE 's/^project\(gulpdb VERSION ([0-9.]+).*/\1/p' "$repo/CMakeLists.txt")
work=$(mktemp -d "${TMPDIR:-/tmp}/gulpdb-package-test.XXXXXX")
dist=$work/dist

cleanup() {
  if [ "${GULPDB_KEEP_PACKAGE_TEST:-0}" = 1 ]; then
    echo "kept $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

# grep for a pipeline's end: reads all its input, so that the command before
# it never dies of SIGPIPE (which pipefail would count as a failure).
has() {
  grep "$@" >/dev/null
}

fail() {
  echo "FAILED: $*" >&2
  return 1
}

# Runs the commands of a test consumer build: consumer DIR must print ok.
run_consumer() {
  local program=$1 dir=$2
  "$program" "$dir" | tee "$dir.out"
  grep -q '^consumer: ok' "$dir.out" || fail "$program did not print ok"
}

# ---------------------------------------------------------------------------

step_package_sh() {
  bash "$repo/scripts/package.sh" "$dist"
  ls "$dist"/gulpdb-"$version"-*.whl "$dist"/gulpdb_"$version"_"$arch".deb
}

step_deb_contents() {
  local deb=$dist/gulpdb_${version}_${arch}.deb
  dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' | sort >"$work/deb_files"
  cat "$work/deb_files"
  local lib=/usr/lib/$multiarch py=/usr/lib/python3/dist-packages/gulpdb
  local expected=(
    /usr/bin/gulpdb
    "$lib/libgulpdb.so.$version"
    /usr/include/gulpdb/dataset.h /usr/include/gulpdb/error.h /usr/include/gulpdb/export.h
    "$lib/cmake/gulpdb/gulpdbConfig.cmake" "$lib/cmake/gulpdb/gulpdbConfigVersion.cmake"
    "$lib/cmake/gulpdb/gulpdbTargets.cmake"
    "$lib/pkgconfig/gulpdb.pc"
    /usr/share/man/man1/gulpdb.1.gz
    /usr/share/bash-completion/completions/gulpdb
    /usr/share/doc/gulpdb/copyright
    "$py/__init__.py" "$py/__main__.py" "$py/torch.py" "$py/_gulpdb.pyi" "$py/py.typed"
  )
  for f in "${expected[@]}"; do
    grep -qxF "$f" "$work/deb_files" || fail "$f is not in the .deb"
  done
  # The .so links (dpkg-deb -c shows them as "name -> target").
  dpkg-deb -c "$deb" >"$work/deb_listing"
  grep -q "$lib/libgulpdb.so -> " "$work/deb_listing" || fail "no libgulpdb.so link"
  grep -qE "^$py/_gulpdb\.cpython-[0-9]+-$multiarch\.so$" "$work/deb_files" ||
    fail "no extension module"
  # Only the public headers, every one of them.
  diff <(grep '^/usr/include/.*\.h$' "$work/deb_files") \
       <(cd "$repo/include" && ls gulpdb/*.h | sed 's|^|/usr/include/|' | sort) ||
    fail "the .deb's headers are not include/gulpdb/*.h"
  # No test, benchmark or fuzz program, no bundled command, nothing outside /usr.
  ! grep -E 'test|bench|fuzz|/_bin/' "$work/deb_files" || fail "test or build files in the .deb"
  ! grep -v '^/usr/' "$work/deb_files" | grep -v '^/$' || fail "files outside /usr"
  # No build- or source-tree path in any file, and no RPATH.
  rm -rf "$work/deb_x" && dpkg-deb -x "$deb" "$work/deb_x"
  ! grep -rlF -e "$repo" -e "/build/" "$work/deb_x" || fail "build-tree paths in the files above"
  # The copyright file (Debian policy 12.5): the project's, machine-readable,
  # naming the licence of every file and of what they hold from other projects.
  local copyright=$work/deb_x/usr/share/doc/gulpdb/copyright
  cmp "$copyright" "$repo/cmake/debian/copyright" || fail "copyright is not cmake/debian/copyright"
  head -1 "$copyright" |
    grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
    fail "copyright: not the machine-readable format"
  for license in Apache-2.0 BSD-3-Clause BSL-1.0; do
    grep -qx "License: $license" "$copyright" || fail "copyright: no text of $license"
  done
  grep -qx 'Files: \*' "$copyright" || fail "copyright: no stanza for every file"
  [ "$(stat -c %a "$copyright")" = 644 ] || fail "copyright: mode $(stat -c %a "$copyright")"
  local elf
  for elf in "$work/deb_x/usr/bin/gulpdb" "$work/deb_x$lib/libgulpdb.so.$version" \
             "$work/deb_x"$py/_gulpdb*.so; do
    ! readelf -d "$elf" | grep -E 'RPATH|RUNPATH' || fail "$elf has an RPATH"
  done
}

step_deb_control() {
  local deb=$dist/gulpdb_${version}_${arch}.deb
  dpkg-deb -f "$deb" | tee "$work/control"
  [ "$(dpkg-deb -f "$deb" Package)" = gulpdb ] || fail "Package"
  [ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "Version"
  [ "$(dpkg-deb -f "$deb" Architecture)" = "$arch" ] || fail "Architecture"
  local depends
  depends=$(dpkg-deb -f "$deb" Depends)
  local py_minor
  py_minor=$($python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  # dpkg-shlibdeps found the native libraries; python3 is pinned to the
  # minor version the extension module is built for.
  for dep in libc6 libstdc++6 liblmdb0 libturbojpeg0 libboost-program-options libcpp-httplib \
             "python3 (>= $py_minor)" "python3 (<< " python3-numpy; do
    [[ $depends == *"$dep"* ]] || fail "Depends lacks $dep: $depends"
  done
  [[ $(dpkg-deb -f "$deb" Recommends) == *ffmpeg* ]] || fail "Recommends lacks ffmpeg"
  local suggests
  suggests=$(dpkg-deb -f "$deb" Suggests)
  [[ $suggests == *python3-torch* && $suggests == *python3-distributed* ]] ||
    fail "Suggests: $suggests"
  # shlibs (libgulpdb's soname) and the ldconfig trigger and Python scripts.
  dpkg-deb -I "$deb" | tee "$work/deb_info"
  for f in shlibs triggers postinst prerm md5sums; do
    grep -qE "^ +[0-9]+ bytes, +[0-9]+ lines +\*? *$f" "$work/deb_info" || fail "no $f"
  done
  local soversion=${version%.*}
  [ "$(dpkg-deb -I "$deb" shlibs)" = "libgulpdb $soversion gulpdb (>= $version)" ] ||
    fail "shlibs: $(dpkg-deb -I "$deb" shlibs)"
  [ "$(dpkg-deb -I "$deb" triggers)" = "activate-noawait ldconfig" ] || fail "triggers"
}

step_pip_source() {
  $python -m venv --system-site-packages "$work/venv_src"
  (cd "$repo" && CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
     "$work/venv_src/bin/pip" install --no-build-isolation --no-index .)
  cd "$work"
  local site
  site=$("$work/venv_src/bin/python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
  "$work/venv_src/bin/python" - "$site" <<'PY'
import os, sys
import gulpdb
site = os.path.realpath(sys.argv[1])
assert os.path.realpath(gulpdb.__file__).startswith(site + os.sep), gulpdb.__file__
assert os.path.realpath(gulpdb._gulpdb.__file__).startswith(site + os.sep), gulpdb._gulpdb.__file__
print("gulpdb", gulpdb.__version__, "from", gulpdb.__file__)
PY
  # The command on the venv's PATH, without activating it, and python -m.
  [ "$(command -v gulpdb || true)" != "$work/venv_src/bin/gulpdb" ] || fail "test setup: PATH"
  PATH=$work/venv_src/bin:$PATH gulpdb --version | tee "$work/venv_src.version"
  [ "$(cat "$work/venv_src.version")" = "gulpdb $version" ] || fail "gulpdb --version"
  [ "$("$work/venv_src/bin/python" -m gulpdb --version)" = "gulpdb $version" ] ||
    fail "python -m gulpdb --version"
  PATH=$work/venv_src/bin:$PATH gulpdb create "$work/cli_ds" --videos-per-chunk 2
  PATH=$work/venv_src/bin:$PATH gulpdb info "$work/cli_ds" --json | has '"videos": 0' ||
    fail "gulpdb info of a new dataset"
  # The other documented way: a wheel from python3 -m build (same tree, no rebuild).
  (cd "$repo" && $python -m build --no-isolation --wheel --outdir "$work/wheel_src" .) >/dev/null
  ls "$work/wheel_src"/gulpdb-"$version"-*.whl
}

step_python_suite() {
  [ -x "$work/venv_src/bin/python" ] || fail "no venv (pip_source failed)"
  local site
  site=$("$work/venv_src/bin/python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
  # test_bench_smoke times the C++ read loop too: an installed package has no
  # build tree beside it, so the dev build's bench folder (built if missing).
  if [ ! -x "$repo/build/dev/bench/python_read_loop" ]; then
    (cd "$repo" && cmake --preset dev >/dev/null &&
      cmake --build build/dev --target python_read_loop -j"$(nproc)") || fail "cannot build bench/python_read_loop"
  fi
  export GULPDB_BENCH_DIR=$repo/build/dev/bench
  mkdir -p "$work/pytest_cwd" && cd "$work/pytest_cwd"
  # The package's directory, not the build tree's, is where gulpdb must come from.
  GULPDB_EXPECT_PACKAGE_DIR=$site/gulpdb \
    "$work/venv_src/bin/python" -m pytest -q -p no:cacheprovider \
    --rootdir "$work/pytest_cwd" "$repo/tests/python" \
    --ignore="$repo/tests/python/test_lifecycle_finds_bugs.py"
}

step_dist_wheel() {
  $python -m venv --system-site-packages "$work/venv_whl"
  "$work/venv_whl/bin/pip" install --no-index "$dist"/gulpdb-"$version"-*.whl
  cd "$work"
  "$work/venv_whl/bin/python" - "$work/venv_whl" <<'PY'
import os, sys
import numpy as np
import gulpdb
venv = os.path.realpath(sys.argv[1])
assert os.path.realpath(gulpdb.__file__).startswith(venv + os.sep), gulpdb.__file__
frames = np.zeros((2, 8, 8, 3), np.uint8)
with gulpdb.Dataset(os.path.join(venv, "ds"), "x") as ds:
    with ds.writer() as w:
        w.append("v", frames, {"label": 1})
with gulpdb.Dataset(os.path.join(venv, "ds")) as ds:
    assert ds.read("v").shape == (2, 8, 8, 3) and ds.meta("v")["label"] == 1
print("wheel: ok", gulpdb.__version__)
PY
  [ "$("$work/venv_whl/bin/gulpdb" --version)" = "gulpdb $version" ] || fail "gulpdb --version"
  "$work/venv_whl/bin/gulpdb" ls "$work/venv_whl/ds" | has '^v' || fail "gulpdb ls"
  # Metadata: the dependencies and extras.
  "$work/venv_whl/bin/python" - <<'PY'
import re
from importlib import metadata
requires = metadata.requires("gulpdb")
print(requires)
assert "numpy" in requires, requires
def extra(name, requirement):
    return any(r.startswith(name) and re.search(f"extra == [\"']{requirement}[\"']", r)
               for r in requires)
assert extra("torch", "torch") and extra("dask", "distributed") and extra("distributed", "distributed"), requires
# The licence, and its files in the wheel (the copyright file lists the code
# the binaries hold from pybind11, FlatBuffers, simdjson and Boost).
meta = metadata.metadata("gulpdb")
assert meta["License"] == "Apache-2.0", meta["License"]
assert "License :: OSI Approved :: Apache Software License" in meta.get_all("Classifier"), meta
files = {f.name for f in metadata.files("gulpdb") if ".dist-info" in str(f)}
assert {"LICENSE", "copyright"} <= files, files
PY
}

# Installs a tree into a prefix; builds and runs both consumers against it.
#   consumers TREE PREFIX static|shared
consumers() {
  local tree=$1 prefix=$2 kind=$3
  rm -rf "$prefix"
  cmake --install "$tree" --prefix "$prefix"
  local lib=$prefix/lib/$multiarch
  [ -d "$lib" ] || lib=$prefix/lib
  # The installed headers are include/gulpdb/*.h and nothing else.
  diff <(cd "$prefix/include" && find . -type f | sort) \
       <(cd "$repo/include" && find . -type f -name '*.h' | sort) || fail "installed headers"
  if [ "$kind" = shared ]; then
    [ -f "$lib/libgulpdb.so.$version" ] && [ ! -e "$lib/libgulpdb.a" ] || fail "shared library"
  else
    [ -f "$lib/libgulpdb.a" ] && [ ! -e "$lib/libgulpdb.so" ] || fail "static library"
  fi
  ! grep -rlF "$repo" "$lib/cmake" "$lib/pkgconfig" || fail "build-tree paths"

  # find_package(gulpdb <version> EXACT CONFIG REQUIRED) + gulpdb::gulpdb
  cmake -S "$repo/tests/package" -B "$work/consumer_cmake_$kind" \
    -DCMAKE_PREFIX_PATH="$prefix" -DGULPDB_EXPECTED_VERSION="$version" -DCMAKE_BUILD_TYPE=Release
  cmake --build "$work/consumer_cmake_$kind"
  run_consumer "$work/consumer_cmake_$kind/consumer" "$work/ds_cmake_$kind"

  # pkg-config (--static for the static library)
  local static_flag=()
  [ "$kind" = static ] && static_flag=(--static)
  export PKG_CONFIG_PATH=$lib/pkgconfig
  [ "$(pkg-config --modversion gulpdb)" = "$version" ] || fail "pkg-config --modversion"
  local flags
  flags=$(pkg-config --cflags --libs "${static_flag[@]}" gulpdb)
  echo "pkg-config ${static_flag[*]} --cflags --libs gulpdb: $flags"
  # shellcheck disable=SC2086
  c++ -std=c++17 -O1 -o "$work/consumer_pc_$kind" "$repo/tests/package/consumer.cc" $flags
  unset PKG_CONFIG_PATH
  if [ "$kind" = shared ]; then
    LD_LIBRARY_PATH=$lib ldd "$work/consumer_pc_$kind" | has "libgulpdb.so" ||
      fail "the pkg-config consumer does not link libgulpdb.so"
    LD_LIBRARY_PATH=$lib run_consumer "$work/consumer_pc_$kind" "$work/ds_pc_$kind"
    LD_LIBRARY_PATH=$lib ldd "$work/consumer_cmake_$kind/consumer" | has "$lib/libgulpdb.so" ||
      fail "the CMake consumer does not link the installed libgulpdb.so"
  else
    ! ldd "$work/consumer_pc_$kind" | has "libgulpdb" || fail "links a shared libgulpdb"
    run_consumer "$work/consumer_pc_$kind" "$work/ds_pc_$kind"
  fi
  # The installed command runs, with no library path set.
  [ "$("$prefix/bin/gulpdb" --version)" = "gulpdb $version" ] || fail "installed command"
}

step_cmake_shared() {
  consumers "$repo/build/package" "$work/prefix_shared" shared
  # Exported symbols: the public API, none of the internals (index, engine).
  local so=$work/prefix_shared/lib/$multiarch/libgulpdb.so.$version
  nm -DC --defined-only "$so" >"$work/exported"
  grep -c ' gulpdb::' "$work/exported"
  for symbol in 'gulpdb::Dataset::Open(' 'gulpdb::Writer::Commit()' 'gulpdb::ingest::Ingest(' \
                'typeinfo for gulpdb::IdNotFoundError'; do
    grep -qF "$symbol" "$work/exported" || fail "$symbol is not exported"
  done
  # (Symbol names only: nm -C prints "address type name(arguments)".)
  cut -d' ' -f3- "$work/exported" >"$work/exported_names"
  ! grep -E '^gulpdb::(index|engine)::|::Impl::' "$work/exported_names" ||
    fail "internal symbols exported"
  ! grep -E '^(mdb_|tj[A-Z])' "$work/exported_names" || fail "LMDB or TurboJPEG symbols exported"
  # The command's sources link against libgulpdb.so alone (no internals), and
  # run: ingest, check --deep and extract through the shared library.
  cmake --build "$repo/build/package" --target gulpdb_export_check -j"$(nproc)"
  local check=$repo/build/package/gulpdb_export_check
  ldd "$check" | has "$repo/build/package/lib/libgulpdb.so" || fail "not linked to the .so"
  "$check" ingest "$work/export_check_ds" --frames-dir "$repo/tests/fixtures/frames_src" \
    --keep-jpeg --quiet
  "$check" check "$work/export_check_ds" --deep
  "$check" ls "$work/export_check_ds" --limit 1
  # The Python module's objects against libgulpdb.so: no gulpdb:: symbol may
  # stay undefined (Python's own ones do: the interpreter provides them).
  cmake --build "$repo/build/package" --target gulpdb_module_export_check -j"$(nproc)"
  local module=$repo/build/package/gulpdb_module_export_check.so
  ldd -r "$module" 2>&1 | sed -n 's/^undefined symbol: \([^[:space:]]*\).*/\1/p' | c++filt |
    tee "$work/module_undefined" | has '^Py' || fail "no Python symbol undefined: check broken"
  ! grep 'gulpdb::' "$work/module_undefined" || fail "public API that libgulpdb.so does not export"
}

step_cmake_static() {
  # build/wheel is the tree pip_source configured (static, Release).
  [ -f "$repo/build/wheel/CMakeCache.txt" ] || fail "no build/wheel tree (pip_source failed)"
  grep -q '^BUILD_SHARED_LIBS:BOOL=OFF' "$repo/build/wheel/CMakeCache.txt" || fail "not static"
  cmake --build "$repo/build/wheel" -j"$(nproc)"
  consumers "$repo/build/wheel" "$work/prefix_static" static
}

step_completion_and_man() {
  local prefix=$work/prefix_shared gulpdb=$work/prefix_shared/bin/gulpdb
  local completion=$prefix/share/bash-completion/completions/gulpdb
  [ -f "$completion" ] || fail "no completion installed"
  # Completion, as bash runs it: COMP_WORDS/COMP_CWORD in, COMPREPLY out.
  compopt() { :; }  # only valid inside a real completion
  # shellcheck disable=SC1090
  source "$completion"
  complete -p gulpdb | has -- '-F _gulpdb' || fail "complete -p gulpdb"
  complete_words() {
    COMP_WORDS=("$@")
    COMP_CWORD=$(($# - 1))
    COMPREPLY=()
    _gulpdb
    printf '%s\n' "${COMPREPLY[@]}"
  }
  local commands command option
  commands=$("$gulpdb" --help | sed -nE '/^commands:/,/^$/s/^  ([a-z]+) .*/\1/p')
  [ -n "$commands" ] || fail "no commands in --help"
  for command in $commands; do
    complete_words gulpdb "${command:0:2}" | has -x "$command" ||
      fail "'gulpdb ${command:0:2}' does not complete to $command"
    complete_words gulpdb "$command" -- >"$work/options"
    for option in $("$gulpdb" "$command" --help | grep -oE '^  (-[a-z] \[ )?--[a-z0-9-]+' |
                    grep -oE -- '--[a-z0-9-]+$'); do
      grep -qx -- "$option" "$work/options" || fail "gulpdb $command: $option does not complete"
    done
  done
  [ "$(complete_words gulpdb ingest --on-duplicate '' | tr '\n' ' ')" = "error skip replace " ] ||
    fail "ingest --on-duplicate values"
  mkdir -p "$work/completion_dir/frames_here"
  (cd "$work/completion_dir" && complete_words gulpdb ingest x --frames-dir fr) |
    grep -qx frames_here || fail "--frames-dir does not complete a directory"
  [ -z "$(complete_words gulpdb ingest x --quality '')" ] || fail "--quality completes something"
  (cd "$work/completion_dir" && complete_words gulpdb info fr) | has -x frames_here ||
    fail "DIR does not complete a directory"

  # The man page: a section for every subcommand, the version, renders cleanly.
  local man=$prefix/share/man/man1/gulpdb.1.gz
  zcat "$man" >"$work/gulpdb.1"
  grep -qE "^\.TH GULPDB \"1\" .*\"gulpdb $version\"" "$work/gulpdb.1" || fail "man: .TH"
  for command in $commands; do
    grep -qF ".SS \"gulpdb $command\"" "$work/gulpdb.1" || fail "man: no $command section"
  done
  if command -v man >/dev/null; then
    MANWIDTH=80 man --warnings -l "$man" >"$work/man.txt" 2>"$work/man.err"
    cat "$work/man.err"
    [ ! -s "$work/man.err" ] || fail "man reports problems"
    grep -q -- '--on-duplicate' "$work/man.txt" || fail "man: options missing"
  fi
}

step_versions() {
  local deb=$dist/gulpdb_${version}_${arch}.deb
  echo "CMakeLists.txt: $version"
  [ -n "$version" ] || fail "no version in CMakeLists.txt"
  [ "$("$work/prefix_shared/bin/gulpdb" --version)" = "gulpdb $version" ] || fail "--version"
  [ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail ".deb Version"
  local py
  py=$(cd "$work" && "$work/venv_whl/bin/python" -c \
    'import gulpdb; from importlib.metadata import version; print(gulpdb.__version__, version("gulpdb"))')
  [ "$py" = "$version $version" ] || fail "__version__ and wheel metadata: $py"
  ls "$dist" | has -x "gulpdb-$version-.*\.whl" || fail "wheel file name"
  grep -qF "set(PACKAGE_VERSION \"$version\")" \
    "$work/prefix_shared/lib/$multiarch/cmake/gulpdb/gulpdbConfigVersion.cmake" ||
    fail "gulpdbConfigVersion.cmake"
  grep -qx "Version: $version" "$work/prefix_shared/lib/$multiarch/pkgconfig/gulpdb.pc" ||
    fail "gulpdb.pc"
}

# Checks an installed or extracted .deb under ROOT (/ or a directory).
check_deb_files() {
  local root=$1
  [ "$("$root/usr/bin/gulpdb" --version)" = "gulpdb $version" ] || fail "/usr/bin/gulpdb"
  "$root/usr/bin/gulpdb" create "$work/deb_ds"
  "$root/usr/bin/gulpdb" check "$work/deb_ds"
  (cd "$work" && env -u PYTHONPATH PYTHONPATH="${2:-}" $python -c "
import gulpdb, sys
assert gulpdb.__file__.startswith('$root/usr/lib/python3/dist-packages/'.replace('//', '/')), gulpdb.__file__
assert gulpdb.__version__ == '$version'
print('import gulpdb:', gulpdb.__file__)")
}

step_deb_install() {
  local deb=$dist/gulpdb_${version}_${arch}.deb
  local status
  status=$(dpkg-query -W -f='${Status}' gulpdb 2>/dev/null || true)
  if [ "$(id -u)" -eq 0 ] && { [ -z "$status" ] || [ "$status" = "unknown ok not-installed" ]; }; then
    echo "dpkg -i (as root)"
    # One package test at a time installs the package (dpkg has its own lock,
    # which fails rather than waits).
    exec 9>"${TMPDIR:-/tmp}/gulpdb-package-test.lock"
    flock -w 600 9
    # Whatever happens from here on (this step runs in a subshell), the
    # package goes again.
    trap 'echo "removing the package"; dpkg -P gulpdb || echo "dpkg -P gulpdb failed" >&2' EXIT
    dpkg -i "$deb"
    check_deb_files ""
    compgen -G "/usr/lib/python3/dist-packages/gulpdb/__pycache__/__init__.*.pyc" ||
      fail "postinst did not byte-compile"
    # A consumer of the system-wide install: no prefix, no library path.
    cmake -S "$repo/tests/package" -B "$work/consumer_system" -DGULPDB_EXPECTED_VERSION="$version"
    cmake --build "$work/consumer_system"
    run_consumer "$work/consumer_system/consumer" "$work/ds_system"
    c++ -std=c++17 -o "$work/consumer_system_pc" "$repo/tests/package/consumer.cc" \
      $(pkg-config --cflags --libs gulpdb)
    run_consumer "$work/consumer_system_pc" "$work/ds_system_pc"
    trap - EXIT
    dpkg -P gulpdb  # purge: remove and forget (it has maintainer scripts)
    [ ! -e /usr/lib/python3/dist-packages/gulpdb ] || fail "dpkg -P left the Python package"
    [ ! -e /usr/bin/gulpdb ] || fail "dpkg -P left /usr/bin/gulpdb"
  else
    echo "dpkg -x (not root, or dpkg knows a gulpdb package already: $status)"
    dpkg-deb -x "$deb" "$work/deb_root"
    LD_LIBRARY_PATH=$work/deb_root/usr/lib/$multiarch \
      check_deb_files "$work/deb_root" "$work/deb_root/usr/lib/python3/dist-packages"
  fi
}

# ---------------------------------------------------------------------------

steps=(package_sh deb_contents deb_control pip_source python_suite dist_wheel cmake_shared
       cmake_static completion_and_man versions deb_install)
# Arguments run some of the steps only (in the order given; a step needs the
# ones above it that make what it uses).
[ $# -eq 0 ] || steps=("$@")
passed=0
failed=0
start=$SECONDS
for step in "${steps[@]}"; do
  t0=$SECONDS
  (set -e; cd "$work"; "step_$step") >"$work/$step.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1))
    echo "== $step: ok ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1))
    echo "== $step: FAILED ($((SECONDS - t0)) s); the end of its log:"
    tail -n 40 "$work/$step.log" | sed 's/^/   | /'
  fi
done
echo "package tests took $((SECONDS - start)) s"
echo "package: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
