#!/usr/bin/env bash
# Quick start (2): set up, build from scratch and run every test.
#   scripts/test.sh              the dev preset (warnings are errors)
#   scripts/test.sh asan-ubsan   the same suite under AddressSanitizer + UBSan
#   scripts/test.sh package      the packages: the wheel in a venv, CMake and
#                                pkg-config consumers, the .deb (tests/package)
#   scripts/test.sh lifecycle    the model-based lifecycle test, long: builds the
#                                dev preset, then runs tests/python/test_lifecycle.py
#                                with 400 examples of up to 30 steps and a random
#                                seed (printed; GULPDB_LIFECYCLE_EXAMPLES, _STEPS and
#                                _SEED override them; see the test's docstring).
#                                CI runs the same test small, as ctest's lifecycle_test,
#                                and lifecycle_finds_bugs shows it finds fixed bugs put
#                                back (GULPDB_TEST_BUG; `ctest -L lifecycle` runs both).
#   scripts/test.sh powerloss    the power-loss simulator full size (tests/powerloss,
#                                docs/testing.md): builds the dev preset, then checks
#                                over 10,000 distinct crash states and prints the count
#                                per operation. CI runs it small (`ctest -L powerloss`).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-dev}
bash scripts/setup.sh
if [ "$preset" = package ]; then
  exec bash tests/package/package_test.sh
fi
if [ "$preset" = lifecycle ]; then
  cmake --preset dev >/dev/null
  cmake --build --preset dev -j"$(nproc)"
  export GULPDB_LIFECYCLE_EXAMPLES=${GULPDB_LIFECYCLE_EXAMPLES:-400}
  export GULPDB_LIFECYCLE_STEPS=${GULPDB_LIFECYCLE_STEPS:-30}
  export GULPDB_LIFECYCLE_SEED=${GULPDB_LIFECYCLE_SEED:-random}
  PYTHONPATH=build/dev/python exec /usr/bin/python3 -m pytest -q -s -p no:cacheprovider \
    tests/python/test_lifecycle.py
fi
if [ "$preset" = powerloss ]; then
  cmake --preset dev >/dev/null
  cmake --build --preset dev -j"$(nproc)"
  PYTHONPATH=build/dev/python exec /usr/bin/python3 tests/powerloss/run_powerloss.py \
    --shim build/dev/tests/powerloss/libgulpdb_powerloss_shim.so --cli build/dev/cli/gulpdb \
    --scale full
fi
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j"$(nproc)"
ctest --preset "$preset" -j"$(nproc)"
