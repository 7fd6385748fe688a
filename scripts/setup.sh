#!/usr/bin/env bash
# Installs what memgate builds with, from Debian's packages only: Bazel 4.2.3
# (bazel-bootstrap) and the system Abseil, Protocol Buffers, gRPC, GoogleTest
# and Google Benchmark, and Lua 5.1 (the Slurm hooks' tests). Idempotent: installs only what is missing.
set -euo pipefail

packages=(
  bazel-bootstrap
  g++
  libabsl-dev
  libprotobuf-dev
  protobuf-compiler
  libgrpc++-dev
  protobuf-compiler-grpc
  libgtest-dev
  libgmock-dev
  libbenchmark-dev
  lua5.1
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: run as root or install sudo" >&2; exit 1; }
    sudo="sudo"
  fi
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The WORKSPACE points at Debian's copy of the platforms repository.
if [ ! -f /usr/share/bazel/platforms/WORKSPACE ]; then
  echo "setup: /usr/share/bazel/platforms is missing (bazel-bootstrap-data)" >&2
  exit 1
fi
echo "setup: ready ($(bazel --version 2>/dev/null || echo bazel))" >&2
