#!/usr/bin/env bash
# Installs what the tests need beyond Go: git, and PyTorch for the
# nanogpt-torch example and the kernel parity checks (Debian's python3-torch
# for /usr/bin/python3, since PyPI is not reachable everywhere we run) with
# OpenBLAS.
set -euo pipefail

need=()
command -v git >/dev/null || need+=(git)
if ! /usr/bin/python3 -c 'import torch, numpy' >/dev/null 2>&1; then
  need+=(python3-torch python3-numpy)
fi
# Without OpenBLAS, Debian's torch falls back to the reference BLAS, which
# makes the PyTorch example's training about 15 times slower.
if command -v dpkg >/dev/null && ! dpkg -s libopenblas0-pthread >/dev/null 2>&1; then
  need+=(libopenblas0-pthread)
fi
[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "install-test-deps: missing ${need[*]}; install them (Debian: apt-get install ${need[*]})" >&2
  echo "install-test-deps: without them the PyTorch tests are skipped outside CI" >&2
  exit 0
fi
echo "install-test-deps: apt-get install ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
