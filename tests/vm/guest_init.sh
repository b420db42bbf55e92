#!/bin/busybox sh
# /init of the small guest the tests/vm cases boot: a deterministic workload that prints one
# progress line per step with a running hash, then powers off (QEMU exits 0). What it does comes
# from the kernel command line: guest.steps=N guest.delay=MICROSECONDS, guest.disk=1 (each step
# writes a block to /dev/vda and reads it back from the disk, not the page cache), guest.net=1
# (each step fetches a file over TFTP from QEMU's own user-mode network, 10.0.2.2),
# guest.gapcheck=1 (a line whenever the guest's monotonic clock, /proc/uptime, advanced more than
# 5 s in one step: the guest saw the time its VM was not running).
# Progress goes to the console (ttyS0) and, where there is a second serial port, to it too.
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mkdir -p /tmp
while read -r m; do insmod "/modules/$m" 2>/dev/null || echo "guest: insmod $m failed"; done < /modules/order
arg() { sed -n "s/.*guest\.$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
STEPS=$(arg steps); DELAY=$(arg delay); DISK=$(arg disk); NET=$(arg net); GAPCHECK=$(arg gapcheck)
uptime_cs() { read -r up _ < /proc/uptime; echo "${up%.*}${up#*.}"; }
say() { echo "$*"; [ -e /sys/class/tty/ttyS1/type ] && [ "$(cat /sys/class/tty/ttyS1/type)" != 0 ] && echo "$*" > /dev/ttyS1; }
say "guest boot"
if [ "$NET" = 1 ]; then
  ip link set lo up; ip link set eth0 up
  ip addr add 10.0.2.15/24 dev eth0 || say "guest: no eth0"
fi
h=0
i=1
last=$(uptime_cs)
[ "$GAPCHECK" = 1 ] && say "guest clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
while [ "$i" -le "${STEPS:-20}" ]; do
  h=$(echo "$h $i" | sha256sum | cut -c1-16)
  if [ "$DISK" = 1 ]; then
    echo "block $i $h" | dd of=/dev/vda bs=4096 seek="$i" conv=sync,fsync 2>/dev/null
    echo 3 > /proc/sys/vm/drop_caches
    h=$(dd if=/dev/vda bs=4096 skip="$i" count=1 2>/dev/null | sha256sum | cut -c1-16)
  fi
  if [ "$NET" = 1 ]; then
    rm -f /tmp/data
    tftp -g -r data -l /tmp/data 10.0.2.2 || say "guest: tftp failed at step $i"
    h=$( (echo "$h"; cat /tmp/data) | sha256sum | cut -c1-16)
  fi
  say "guest step $i hash $h"
  if [ "$GAPCHECK" = 1 ]; then
    now=$(uptime_cs)
    [ $((now - last)) -gt 500 ] && say "guest: the clock jumped $(( (now - last) / 100 )) s in one step"
    last=$now
  fi
  usleep "${DELAY:-100000}"
  i=$((i + 1))
done
if [ "$DISK" = 1 ]; then
  sync; echo 3 > /proc/sys/vm/drop_caches
  say "guest disk $(dd if=/dev/vda bs=4096 count=$((STEPS + 1)) 2>/dev/null | sha256sum | cut -c1-16)"
fi
say "guest done hash $h"
poweroff -f
