#!/usr/bin/env bash
# Installs every Debian 12 package gulpdb needs to build, test and benchmark.
# Idempotent: when everything is already installed it prints nothing and exits 0.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  liblmdb-dev lmdb-utils
  libturbojpeg0-dev libjpeg62-turbo-dev
  libflatbuffers-dev flatbuffers-compiler
  libsimdjson-dev
  libboost-program-options-dev libboost-test-dev
  pybind11-dev python3-dev python3-numpy python3-pytest python3-pil
  python3-torch python3-imageio python3-matplotlib
  ffmpeg
  clang libclang-rt-14-dev llvm  # the fuzz preset: clang, libFuzzer + sanitizer runtimes, llvm-symbolizer
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
