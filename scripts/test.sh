#!/usr/bin/env bash
# Quick start (2): set up, build from scratch and run every test.
#   scripts/test.sh              the dev preset (warnings are errors)
#   scripts/test.sh asan-ubsan   the same suite under AddressSanitizer + UBSan
#   scripts/test.sh package      the packages: the wheel in a venv, CMake and
#                                pkg-config consumers, the .deb (tests/package)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-dev}
bash scripts/setup.sh
if [ "$preset" = package ]; then
  exec bash tests/package/package_test.sh
fi
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j"$(nproc)"
ctest --preset "$preset" -j"$(nproc)"
