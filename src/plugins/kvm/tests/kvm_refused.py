#!/usr/bin/python3
"""A QEMU KVM guest is refused at once, naming KVM and the call Stasis cannot restore, and runs on.

QEMU is asked to drop the PIT's lost ticks (`-global kvm-pit.lost_tick_policy=discard`), which it
does with KVM_REINJECT_CONTROL, a call the KVM kind does not bring back (src/plugins/kvm/README.md):
the refusal must name it.

QEMU with -accel kvm holds /dev/kvm, a VM and a vCPU descriptor, and (on recent kernels) a kernel
worker thread in its thread group (`kvm-nx-lpage-recovery`) that never runs a signal handler.
`stasis checkpoint` must answer within seconds (not after the suspend's timeout), fail with a
message naming KVM, and leave the VM running: QEMU's monitor still answers "VM status: running".
Skips (77) without qemu-system-x86_64 or a /dev/kvm this user can open.

usage: kvm_refused.py STASIS
"""
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests"))
from e2e_common import Computation, fail  # noqa: E402


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(77)


def read_until(stream, text, timeout):
    """QEMU's output up to `text` (the monitor prompt has no newline after it)."""
    seen, deadline = b"", time.time() + timeout
    while text.encode() not in seen:
        if time.time() > deadline or not select.select([stream], [], [], deadline - time.time())[0]:
            fail(f"QEMU did not print {text!r} in {timeout} s; it printed {seen[-500:]!r}")
        chunk = os.read(stream.fileno(), 4096)
        if not chunk:
            fail(f"QEMU ended before printing {text!r}; it printed {seen[-500:]!r}")
        seen += chunk
    return seen.decode("utf-8", "replace")


def main():
    stasis = sys.argv[1]
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        skip("no qemu-system-x86_64 (Debian: qemu-system-x86)")
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR))
    except OSError as e:
        skip(f"cannot open /dev/kvm: {e.strerror}")
    with tempfile.TemporaryDirectory(prefix="stasis-kvm-") as tmp:
        c = Computation(stasis, tmp)
        vm = None
        try:
            vm = subprocess.Popen([stasis, "launch", "--", qemu, "-accel", "kvm", "-m", "64",
                                   "-display", "none", "-nodefaults", "-serial", "none",
                                   "-global", "kvm-pit.lost_tick_policy=discard",
                                   "-monitor", "stdio"],
                                  env=c.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(Path(tmp) / "qemu.err", "w"))
            read_until(vm.stdout, "(qemu)", 60)
            # The worker starts with the first vCPU run: wait for it where the kernel has one.
            workers = []
            for _ in range(100):
                workers = [t for t in os.listdir(f"/proc/{vm.pid}/task")
                           if Path(f"/proc/{vm.pid}/task/{t}/comm").read_text().startswith("kvm-")]
                if workers:
                    break
                time.sleep(0.1)
            start = time.time()
            try:
                refused = c.run("checkpoint", timeout=60)
            except subprocess.TimeoutExpired:
                fail("`stasis checkpoint` gave no answer in 60 s (a suspend waiting for a kernel worker?)")
            seconds = time.time() - start
            if refused.returncode == 0:
                fail(f"a KVM guest was checkpointed: {refused.stdout.strip()}")
            if "KVM" not in refused.stderr:
                fail(f"the refusal does not name KVM: {refused.stderr.strip()!r}")
            if not re.search(r"used KVM_REINJECT_CONTROL\b", refused.stderr):
                fail(f"the refusal does not name the KVM call it cannot restore: {refused.stderr.strip()!r}")
            if seconds > 10:
                fail(f"the refusal took {seconds:.1f} s")
            vm.stdin.write(b"info status\n")
            vm.stdin.flush()
            status = read_until(vm.stdout, "VM status: running", 30)
            if "stasis" in status.lower():
                fail(f"Stasis wrote on QEMU's monitor: {status!r}")
            vm.stdin.write(b"quit\n")
            vm.stdin.flush()
            if vm.wait(timeout=30) != 0:
                fail(f"QEMU ended with status {vm.returncode} after quit")
            print(f"PASS: refused in {seconds:.2f} s ({refused.stderr.strip()}); kernel workers in "
                  f"QEMU's thread group: {len(workers)}; the VM ran on and quit with status 0")
        finally:
            if vm and vm.poll() is None:
                vm.kill()
                vm.wait()
            c.cleanup()


if __name__ == "__main__":
    main()
