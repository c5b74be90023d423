#!/usr/bin/env bash
# Installs every Debian 12 package gulpdb needs to build, test and benchmark.
# Idempotent: when everything is already installed it prints nothing and exits 0.
# Also installs the S3 test server s3rver from the npm registry (build/tools).
set -euo pipefail

packages=(
  build-essential cmake pkg-config git clang-format
  liblmdb-dev lmdb-utils
  libturbojpeg0-dev libjpeg62-turbo-dev
  libflatbuffers-dev flatbuffers-compiler
  libsimdjson-dev
  libboost-program-options-dev libboost-test-dev
  pybind11-dev python3-dev python3-numpy python3-pytest python3-pil
  python3-torch python3-imageio python3-matplotlib
  ffmpeg
  clang libclang-rt-14-dev llvm  # the fuzz preset: clang, libFuzzer + sanitizer runtimes, llvm-symbolizer
  libcurl4-openssl-dev           # remote datasets: S3 over HTTP(S), SigV4 signing (s3/)
  libexpat1-dev libssl-dev       # s3/: S3's XML responses; payload SHA-256 (libcrypto)
  python3-botocore               # tests/harness/s3_proxy.py checks SigV4 signatures with it
  python3-hypothesis             # the model-based lifecycle test (tests/python/test_lifecycle.py)
  python3-distributed python3-dask  # distributed ingest (gulpdb.distributed)
  python3-boto3 python3-torchvision  # benchmark baselines only
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev  # H.264 chunks (GULPDB_WITH_H264)
  python3-av                     # the H.264 benchmark's baseline (PyAV)
  python3-venv python3-build python3-wheel python3-setuptools python3-installer  # packaging
  help2man dpkg-dev              # the man page; dpkg-shlibdeps for the .deb's Depends
  rsync                          # tests: copies of imported GulpIO directories
  libcpp-httplib-dev             # gulpdb view's HTTP server (view/server.cc)
  chromium chromium-driver python3-selenium  # the viewer's page tested in headless Chromium
)

missing=()
# Node.js and npm run the S3 test server (s3rver, installed below); any
# Node.js >= 12 will do, so a machine that already has one keeps it.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The S3-compatible test server, from the npm registry, into a folder this
# script owns (not committed): build/tools/s3rver/node_modules/.bin/s3rver.
s3rver_version=3.7.1
tools=$(cd "$(dirname "$0")/.." && pwd)/build/tools
if [ ! -x "$tools/s3rver/node_modules/.bin/s3rver" ] ||
   ! grep -q "\"version\": \"$s3rver_version\"" "$tools/s3rver/node_modules/s3rver/package.json" 2>/dev/null; then
  echo "setup: installing s3rver@$s3rver_version (npm) into $tools/s3rver" >&2
  mkdir -p "$tools/s3rver"
  npm install --prefix "$tools/s3rver" --no-audit --no-fund --loglevel=error \
    "s3rver@$s3rver_version" >/dev/null
fi
# s3rver 3.7.1 answers a PUT before the object's file is written (it waits for
# the request body, not for the file), and overwrites objects in place, so a
# GET right after a PUT, or during one, can see an empty or partial object.
# S3 guarantees read-after-write and atomic replacement; so that the tests
# see S3's semantics, this patch writes each object (and part) to a temporary
# file and renames it into place before answering.
s3rver_store=$tools/s3rver/node_modules/s3rver/lib/stores/filesystem.js
if ! grep -q "gulpdb's test setup applies this change" "$s3rver_store"; then
  patch --quiet --forward -d "$tools/s3rver/node_modules/s3rver" -p1 \
    <"$(dirname "$0")/../tests/harness/s3rver-atomic-put.patch"
fi
# s3rver 3.7.1 ignores If-None-Match and If-Match on writes and If-Match on
# reads; S3 honours them (conditional writes, 412 PreconditionFailed), and
# push and remote reads rely on them. This second patch (on top of the first)
# checks each condition atomically with the write under a per-key lock, as
# S3 does; S3RVER_IGNORE_CONDITIONAL_WRITES=1 turns the writes' conditions
# off again, to test stores without them.
s3rver_objects=$tools/s3rver/node_modules/s3rver/lib/controllers/object.js
if ! grep -q "gulpdb's test setup: conditional" "$s3rver_objects"; then
  patch --quiet --forward -d "$tools/s3rver/node_modules/s3rver" -p1 \
    <"$(dirname "$0")/../tests/harness/s3rver-conditional-requests.patch"
fi
