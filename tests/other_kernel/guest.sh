#!/usr/bin/env bash
# Runs a command on another kernel: a QEMU guest that boots a Debian kernel other than this
# machine's and sees this machine's files (its root and the project read-only, WORKDIR writable,
# all through 9p, at the same paths), so a program checkpointed in there can be restarted out here
# and the other way round.
#
#   guest.sh check                  exit 0 if a guest can run here, else print why and exit 77
#   guest.sh run WORKDIR COMMAND    boot, run COMMAND with sh -c in WORKDIR, power off; exit with
#                                   COMMAND's status (its output goes to WORKDIR/guest.log)
#
# The guest's kernel: $STASIS_GUEST_KERNEL (a vmlinuz), else the newest /boot/vmlinuz-* that is not
# this machine's kernel and has its 9p modules (Debian: linux-image-amd64). Its /tmp, /dev/shm and
# host name are its own. No KVM is assumed: QEMU emulates the CPU (-cpu max) when KVM is absent.
set -euo pipefail

# The kernel, busybox and initramfs pieces are shared with tests/vm (tests/lib/guest_kernel.sh).
source "$(dirname "${BASH_SOURCE[0]}")/../lib/guest_kernel.sh"
GUEST_MODULES=(virtio_pci 9pnet_virtio 9p)
why_not() { guest_missing "${GUEST_MODULES[@]}"; }

if [ "${1:-}" = check ]; then
  reason=$(why_not)
  [ -z "$reason" ] && exit 0
  echo "SKIP: $reason"
  exit 77
fi
[ "${1:-}" = run ] && [ $# -eq 3 ] || { echo "usage: guest.sh check | guest.sh run WORKDIR COMMAND" >&2; exit 2; }
WORKDIR=$(cd "$2" && pwd)
COMMAND=$3
# The project, shared again after the guest's own /tmp: a clone under /tmp would be hidden by it.
PROJECT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
reason=$(why_not)
[ -z "$reason" ] || { echo "guest.sh: $reason" >&2; exit 77; }
KERNEL=$(guest_kernel "${GUEST_MODULES[@]}")
VERSION=${KERNEL#/boot/vmlinuz-}
INITRD=$(mktemp -d)
trap 'rm -rf "$INITRD" "$INITRD.cpio.gz"' EXIT

# The initramfs: busybox, the modules for virtio and 9p in load order, and /init.
printf '%s' "$COMMAND" > "$WORKDIR/guest.command"
rm -f "$WORKDIR/guest.status" "$WORKDIR/guest.log"
cat > "$INITRD/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mkdir -p /host
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
while read -r m; do insmod /modules/\$m || echo "guest: insmod \$m failed"; done < /modules/order
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro root /host || echo "guest: no root share"
mount -t proc proc /host/proc; mount -t sysfs sys /host/sys; mount -t devtmpfs dev /host/dev
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts devpts /host/dev/pts; mount -t tmpfs tmpfs /host/dev/shm; mount -t tmpfs tmpfs /host/tmp
mount -t tmpfs tmpfs /host/run
# After the guest's own /tmp: the project (read-only) and the work directory, either of which may
# lie under /tmp, are shared over it.
mkdir -p /host$PROJECT 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro project /host$PROJECT || echo "guest: no project share"
mkdir -p /host$WORKDIR 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none work /host$WORKDIR || echo "guest: no work share"
hostname guest
chroot /host /bin/sh -c 'ip link set lo up; cd "$WORKDIR" && exec /bin/sh -c "\$(cat guest.command)"' \
  > /host$WORKDIR/guest.log 2>&1 < /dev/null
echo \$? > /host$WORKDIR/guest.status
sync
poweroff -f
EOF
guest_initramfs "$INITRD.cpio.gz" "$KERNEL" "$INITRD/init" "${GUEST_MODULES[@]}"

ACCEL=(-accel tcg -cpu max)
if [ -w /dev/kvm ] && [ "${STASIS_GUEST_KVM:-0}" = 1 ]; then ACCEL=(-accel kvm -cpu host); fi
# The guest's console goes to guest.console; its kernel is quiet unless something fails.
timeout "${STASIS_GUEST_TIMEOUT:-600}" qemu-system-x86_64 "${ACCEL[@]}" -m 1536 -smp 1 \
  -nographic -no-reboot -nodefaults -serial "file:$WORKDIR/guest.console" \
  -kernel "$KERNEL" -initrd "$INITRD.cpio.gz" -append "console=ttyS0 quiet panic=-1" \
  -virtfs local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=warn \
  -virtfs "local,path=$PROJECT,mount_tag=project,security_model=none,readonly=on,multidevs=warn" \
  -virtfs "local,path=$WORKDIR,mount_tag=work,security_model=none,multidevs=warn" \
  </dev/null >/dev/null 2>"$WORKDIR/guest.qemu" || true
if [ ! -f "$WORKDIR/guest.status" ]; then
  echo "guest.sh: the guest ($VERSION) did not finish its command; console:" >&2
  tail -n 30 "$WORKDIR/guest.console" >&2 || true
  cat "$WORKDIR/guest.qemu" >&2 || true
  exit 3
fi
exit "$(cat "$WORKDIR/guest.status")"
