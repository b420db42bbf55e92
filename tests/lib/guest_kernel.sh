# Sourced by the tests that boot a small Linux guest in QEMU (tests/other_kernel, tests/vm): a
# Debian kernel from /boot and an initramfs of a static busybox, the modules asked for (in the
# order `modprobe --show-depends` gives) and an /init of the test's own.
#   guest_kernel MODULE...          the kernel: $STASIS_GUEST_KERNEL, else the newest readable
#                                   /boot/vmlinuz-* other than this machine's that has MODULEs
#   guest_missing MODULE...         prints why no guest can boot here (nothing if one can)
#   guest_initramfs OUT KERNEL INIT MODULE...
#                                   writes OUT (cpio, gzip): busybox (its applets linked at boot
#                                   by `busybox --install`), /modules/order and INIT as /init
guest_kernel() {
  if [ -n "${STASIS_GUEST_KERNEL:-}" ]; then echo "$STASIS_GUEST_KERNEL"; return; fi
  local k v m
  for k in $(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -rV); do
    v=${k#/boot/vmlinuz-}
    [ "$v" = "$(uname -r)" ] && continue
    [ -r "$k" ] && [ -d "/lib/modules/$v" ] || continue
    for m in "$@"; do
      modprobe -S "$v" --show-depends "$m" >/dev/null 2>&1 || continue 2
    done
    echo "$k"
    return
  done
}

guest_missing() {
  command -v qemu-system-x86_64 >/dev/null || { echo "no qemu-system-x86_64 (Debian: qemu-system-x86)"; return; }
  [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 ||
    { echo "no static /bin/busybox for the guest's first steps (Debian: busybox-static)"; return; }
  command -v modprobe >/dev/null || { echo "no modprobe to order the guest's modules (Debian: kmod)"; return; }
  command -v cpio >/dev/null || { echo "no cpio to pack the guest's initramfs (Debian: cpio)"; return; }
  [ -n "$(guest_kernel "$@")" ] ||
    { echo "no kernel other than $(uname -r) with modules $* in /boot (Debian: linux-image-amd64)"; return; }
}

guest_initramfs() {
  local out=$1 kernel=$2 init=$3 version=${2#/boot/vmlinuz-} tree path verb
  shift 3
  tree=$(mktemp -d)
  mkdir -p "$tree"/{bin,dev,proc,sys,modules}
  cp /bin/busybox "$tree/bin/busybox"
  local modules=() m
  for m in "$@"; do
    while read -r verb path _; do
      [ "$verb" = insmod ] || continue
      cp "$path" "$tree/modules/"
      modules+=("$(basename "$path")")
    done < <(modprobe -S "$version" --show-depends "$m" 2>/dev/null)
  done
  printf '%s\n' "${modules[@]}" | awk 'NF && !seen[$0]++' > "$tree/modules/order"
  cp "$init" "$tree/init"
  chmod +x "$tree/init"
  (cd "$tree" && find . | cpio -o -H newc 2>/dev/null | gzip -1 > "$out.tmp.$$") && mv "$out.tmp.$$" "$out"
  rm -rf "$tree"
}
