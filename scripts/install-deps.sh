#!/usr/bin/env bash
# Installs what building and testing Stasis needs (Debian 12). Used by .ci/run and scripts/demo.sh.
set -euo pipefail
PACKAGES=(build-essential cmake ninja-build pkg-config libzstd-dev liblz4-dev libxxhash-dev libcli11-dev
          nlohmann-json3-dev libfmt-dev libgtest-dev python3 perl zstd bash coreutils procps
          ibverbs-utils libibverbs-dev iproute2 sqlite3 openmpi-bin libopenmpi-dev python3-mpi4py
          python3-numpy mpich libmpich-dev lammps)
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=(sudo); else
    echo "install-deps: not root and no sudo; install these yourself: ${PACKAGES[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update
"${SUDO[@]}" apt-get install -y --no-install-recommends "${PACKAGES[@]}"
