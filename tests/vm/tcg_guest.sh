#!/usr/bin/env bash
# A small Linux guest in QEMU under TCG (no KVM), run as an ordinary program.
#
#   tcg_guest.sh prepare CACHE     kernel path and initramfs (guest_init.sh as /init) into CACHE;
#                                  exit 77 with the reason when no guest can boot here
#   tcg_guest.sh run CACHE VARIANT STEPS DELAY_US
#                                  in the current directory: make what VARIANT needs, then exec
#                                  QEMU (256 MiB, -accel tcg, -serial stdio, no network):
#     stdio   the console on QEMU's stdout
#     clock   the same, the guest says when its clock jumped (guest.gapcheck=1), keeps no TSC time
#     file    the console (ttyS0) to console.txt, progress also on stdout (ttyS1)
#     disk    also a virtio disk, disk.qcow2: an overlay over a raw base the guest writes
#     net     also -nic user (virtio-net) with QEMU's TFTP server on tftp/ (all inside QEMU)
#     pty     the console (ttyS0) on a pseudo-terminal QEMU makes (-serial pty), which cat reads
#             into console.txt; progress also on stdout (ttyS1)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../lib/guest_kernel.sh"
MODULES=(virtio_pci virtio_blk virtio_net)

case "${1:-}" in
prepare)
  CACHE=$2
  reason=$(guest_missing "${MODULES[@]}")
  [ -z "$reason" ] || { echo "SKIP: $reason"; exit 77; }
  command -v qemu-img >/dev/null || { echo "SKIP: no qemu-img for the disk overlay (Debian: qemu-utils)"; exit 77; }
  mkdir -p "$CACHE"
  KERNEL=$(guest_kernel "${MODULES[@]}")
  # Built again when the kernel or /init changed; renamed into place (cases may run at once).
  if [ ! -s "$CACHE/initrd.gz" ] || [ "$(cat "$CACHE/kernel" 2>/dev/null)" != "$KERNEL" ] ||
     [ "$HERE/guest_init.sh" -nt "$CACHE/initrd.gz" ]; then
    guest_initramfs "$CACHE/initrd.gz" "$KERNEL" "$HERE/guest_init.sh" "${MODULES[@]}"
    echo "$KERNEL" > "$CACHE/kernel.tmp.$$" && mv "$CACHE/kernel.tmp.$$" "$CACHE/kernel"
  fi
  ;;
run)
  CACHE=$2 VARIANT=$3 STEPS=$4 DELAY=$5
  KERNEL=$(cat "$CACHE/kernel")
  APPEND="console=ttyS0 quiet loglevel=1 printk.time=0 panic=-1 guest.steps=$STEPS guest.delay=$DELAY"
  ARGS=(-serial stdio)
  case "$VARIANT" in
  stdio) ;;
  # notsc: under TCG the guest's TSC is the host's (QEMU reads it with rdtsc), which no
  # user-space offset reaches; without it the guest keeps time from QEMU's clocks (HPET, PIT),
  # which follow the host's CLOCK_MONOTONIC as QEMU reads it through clock_gettime.
  clock) APPEND+=" guest.gapcheck=1 notsc" ;;
  file) ARGS=(-serial file:console.txt -serial stdio) ;;
  disk)
    rm -f disk.raw disk.qcow2
    qemu-img create -q -f raw disk.raw 1M
    qemu-img create -q -f qcow2 -b disk.raw -F raw disk.qcow2
    ARGS+=(-drive file=disk.qcow2,if=virtio,format=qcow2)
    APPEND+=" guest.disk=1" ;;
  pty) ;;
  net)
    mkdir -p tftp
    head -c 65536 /dev/zero | tr '\0' 'q' > tftp/data
    ARGS+=(-nic user,model=virtio-net-pci,tftp=tftp)
    APPEND+=" guest.net=1" ;;
  *) echo "tcg_guest.sh: unknown variant $VARIANT" >&2; exit 2 ;;
  esac
  [ "$VARIANT" = net ] || ARGS+=(-nic none)
  if [ "$VARIANT" = pty ]; then
    # QEMU names its pty first on stdout ("char device redirected to /dev/pts/N (label serial0)",
    # N differs between runs): the line is taken off, and cat holds the pty's other end from then
    # on. The pty ends with QEMU: cat's read fails then (EIO), its normal end here, and what the
    # pty held unread is gone.
    qemu-system-x86_64 -accel tcg -m 256 -display none -nodefaults -no-reboot \
      -kernel "$KERNEL" -initrd "$CACHE/initrd.gz" -append "$APPEND" -serial pty -serial stdio -nic none \
      </dev/null | {
      IFS= read -r named
      pts=${named#char device redirected to }
      pts=${pts%% *}
      [ -c "$pts" ] || { echo "tcg_guest.sh: QEMU named no pty: $named" >&2; exit 1; }
      cat "$pts" > console.txt 2>/dev/null &
      cat
      wait || true
      # The kernel's "reboot: Power down" races QEMU's exit, which ends the pty with it: the
      # console is compared up to the guest's last line.
      sed -i '/^guest done/q' console.txt
    }
    exit
  fi
  exec qemu-system-x86_64 -accel tcg -m 256 -display none -nodefaults -no-reboot \
    -kernel "$KERNEL" -initrd "$CACHE/initrd.gz" -append "$APPEND" "${ARGS[@]}" </dev/null
  ;;
*) echo "usage: tcg_guest.sh prepare CACHE | run CACHE VARIANT STEPS DELAY_US" >&2; exit 2 ;;
esac
