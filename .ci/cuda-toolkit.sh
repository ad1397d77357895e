#!/usr/bin/env bash
# Installs Debian's CUDA 11.8 toolkit (nvcc, cuda.h, libcuda.so to link
# against) when nvcc or cuda.h is missing: the non-free components are
# added to the apt sources, then nvidia-cuda-toolkit is installed (about
# 3 minutes and 3 GB). Nothing here needs a GPU.
set -euo pipefail
if command -v nvcc >/dev/null && [ -f /usr/include/cuda.h ]; then
  exit 0
fi
SUDO=
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
src=/etc/apt/sources.list.d/debian.sources
if [ -f "$src" ] && grep -q '^Components: main$' "$src"; then
  $SUDO sed -i 's/^Components: main$/Components: main contrib non-free non-free-firmware/' "$src"
fi
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends nvidia-cuda-toolkit
