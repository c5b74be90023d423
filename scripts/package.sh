#!/usr/bin/env bash
# Builds what gulpdb ships, into dist/ (or OUT_DIR):
#   gulpdb-<version>-<python tag>-linux_<arch>.whl   the Python package with the
#       gulpdb command bundled: `pip install` it into a virtual environment
#   gulpdb_<version>_<arch>.deb   the command, libgulpdb (shared), its headers,
#       CMake and pkg-config files, the man page, bash completion and the
#       Python package for Debian's python3
# Both come from one CMake tree (the `package` preset: optimised, shared
# libgulpdb, no tests), built once.
#
#   scripts/package.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist}")
bash scripts/setup.sh
cmake --preset package >/dev/null
cmake --build --preset package -j"$(nproc)"

mkdir -p "$out"
rm -f "$out"/gulpdb-*.whl "$out"/gulpdb_*.deb
# CPack stages and writes under its own directory; only the .deb is kept.
rm -rf build/package/cpack
cpack --config build/package/CPackConfig.cmake -B build/package/cpack
mv build/package/cpack/gulpdb_*.deb "$out"/
# The wheel from the same tree: setup.py installs its python components.
GULPDB_CMAKE_BUILD_DIR=$PWD/build/package \
  /usr/bin/python3 -m build --no-isolation --wheel --outdir "$out" . >build/package/wheel.log ||
  { cat build/package/wheel.log >&2; exit 1; }
ls -l "$out"/gulpdb-*.whl "$out"/gulpdb_*.deb
