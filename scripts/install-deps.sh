#!/usr/bin/env bash
# Installs everything building Stasis and running its whole test suite needs (Debian 12): the one
# package list, used by scripts/demo.sh (the README's first command) and by .ci/run. A test group
# whose tool is missing is reported by ctest as skipped, naming the package that brings it.
set -euo pipefail
PACKAGES=(
  # build
  build-essential cmake ninja-build pkg-config libzstd-dev liblz4-dev libxxhash-dev libcli11-dev
  nlohmann-json3-dev libfmt-dev libgtest-dev
  # fuzzing the manifest parser and image reader (scripts/fuzz.sh: clang++ with libFuzzer)
  clang libclang-rt-14-dev
  # the test driver, interpreted targets and the tools the tests run
  python3 perl bash coreutils procps zstd sqlite3
  util-linux  # unshare (IPC and pid namespaces per test), runuser (the Slurm tests' munged), findmnt
  bsdutils    # script (a program in a pseudo-terminal)
  iproute2    # ip netns: network namespaces as the multi-host tests' hosts
  openssh-server openssh-client  # a real sshd in each multi-host test host, and its client
  # InfiniBand verbs: headers for softib and the plugin, Debian's unmodified pingpong tools
  ibverbs-utils libibverbs-dev
  # MPI jobs: Open MPI, MPICH, mpi4py (tests/scripts/jacobi.py needs numpy), LAMMPS
  openmpi-bin libopenmpi-dev mpich libmpich-dev python3-mpi4py python3-numpy lammps
  gfortran  # mpif90.openmpi: the split mode's Fortran front test (src/plugins/mpi_split/ompi_abi/fortran)
  hpcc    # Debian's HPC Challenge (Open MPI): how far the split mode's Open MPI front runs it
  nwchem  # its Open MPI build, across two test hosts over real ssh (multihost.ssh.openmpi.nwchem)
  # a private one-node Slurm cluster per Slurm test
  slurm-wlm munge
  # restart under another kernel: a QEMU guest booting Debian's kernel (tests/other_kernel)
  qemu-system-x86 busybox-static kmod cpio linux-image-amd64
  # QEMU guests checkpointed as programs (tests/vm): qcow2 disk overlays
  qemu-utils
  # X clients and their X server (src/plugins/x11): Xvfb, glxgears (Mesa), xdpyinfo, xwd, and
  # the headers of the OpenGL test programs (x11.gl33, opengl.textures); Mesa's libglapi for the
  # tests' Xvfb +iglx shim (src/plugins/opengl/tests/iglx_dispatch.c)
  xvfb mesa-utils x11-utils x11-apps libgl-dev libx11-dev libglapi-mesa
  libvulkan1  # the Vulkan loader, refused at checkpoint (x11.refuse_vulkan)
  pymol       # Qt and OpenGL 3.x through the X proxy (x11.pymol)
  # an SDL2 game's timedemo through the X proxy (x11.openarena): 30 packages, 453 MB fetched in
  # 35 s and installed in 64 s on the build machine
  openarena
)
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=(sudo); else
    echo "install-deps: not root and no sudo; install these yourself: ${PACKAGES[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update </dev/null
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${PACKAGES[@]}" </dev/null
