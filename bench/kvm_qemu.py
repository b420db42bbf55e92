#!/usr/bin/python3
"""QEMU with -accel kvm (the KVM kind's test firmware, src/plugins/kvm/tests/qemu_guest.S: a step
every 20 ms on the serial port) checkpointed by Stasis: per run, `stasis checkpoint` (forked; wall
seconds, the computation's pause from the coordinator's log, image bytes), then
`stasis checkpoint --kill` and `stasis restart`, timed from the command to the guest's next line
(so within one 20 ms tick). Then QEMU's own snapshot of the same guest: HMP `migrate
"exec:cat > FILE"` (wall seconds, QEMU's reported downtime, file bytes) and `-incoming "exec:cat
FILE"`, timed from its start to the guest's next line. Prints each run and the medians.

usage: bench/kvm_qemu.py --guest build/tests/qemu_guest.bin [--stasis build/bin/stasis] [--mib 16] [--runs 3]
"""
import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
from e2e_common import Computation  # noqa: E402
from incremental import paused_seconds  # noqa: E402
from vm_vs_migration import hmp  # noqa: E402


def steps(path):
    return path.read_bytes().count(b"\nstep ") if path.exists() else 0


def wait_steps(path, n, timeout=60):
    deadline = time.monotonic() + timeout
    while steps(path) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the guest printed {steps(path)} steps of {n} in {timeout} s")
        time.sleep(0.002)


def guest_argv(args):
    return ["qemu-system-x86_64", "-accel", "kvm", "-nodefaults", "-no-reboot", "-display", "none",
            "-m", str(args.mib), "-serial", "stdio", "-bios", str(Path(args.guest).resolve())]


def one_run(args, tmp):
    c = Computation(args.stasis, tmp)
    out = tmp / "guest.out"
    argv = guest_argv(args)
    try:
        with open(out, "wb") as o:
            qemu = subprocess.Popen([args.stasis, "launch", "--", *argv], env=c.env, stdout=o,
                                    stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        wait_steps(out, 20)
        t0 = time.monotonic()
        cp = subprocess.run([args.stasis, "checkpoint"], env=c.env, capture_output=True, text=True, check=True)
        ckpt_s = time.monotonic() - t0
        gen = Path(cp.stdout.strip().splitlines()[-1])
        size = sum(f.stat().st_size for f in gen.rglob("*") if f.is_file())
        wait_steps(out, steps(out) + 5)
        killed = subprocess.run([args.stasis, "checkpoint", "--kill"], env=c.env, capture_output=True, text=True,
                                check=True)
        qemu.wait(timeout=60)
        before = steps(out)
        t0 = time.monotonic()
        # QEMU's stdout, the file, comes back with it
        r = subprocess.Popen([args.stasis, "restart", killed.stdout.strip().splitlines()[-1]], env=c.env,
                             stdout=subprocess.DEVNULL, stderr=open(tmp / "restart.err", "w"))
        try:
            wait_steps(out, before + 1)
        except RuntimeError:
            print((tmp / "restart.err").read_text(), file=sys.stderr)
            raise
        restart_s = time.monotonic() - t0
        subprocess.run([args.stasis, "kill"], env=c.env, capture_output=True)
        r.wait(timeout=60)
        return ckpt_s, paused_seconds(c.ckpt, 1), size, restart_s
    finally:
        c.cleanup()


def qemu_run(args, tmp):
    """QEMU's own migration to a file and -incoming from it, for the same guest."""
    out, sock, snapshot = tmp / "qemu.out", tmp / "monitor.sock", tmp / "snapshot.bin"
    with open(out, "wb") as o:
        qemu = subprocess.Popen([*guest_argv(args), "-monitor", f"unix:{sock},server,nowait"], stdout=o,
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        wait_steps(out, 20)
        t0 = time.monotonic()
        hmp(sock, f'migrate "exec:cat > {snapshot}"')
        while "Migration status: completed" not in (info := hmp(sock, "info migrate")):
            if "failed" in info:
                raise RuntimeError(info)
            time.sleep(0.01)
        migrate_s = time.monotonic() - t0
        downtime = re.search(r"downtime: (\d+) ms", info)
    finally:
        qemu.kill()
        qemu.wait()
    before = steps(out)
    t0 = time.monotonic()
    with open(out, "ab") as o:
        incoming = subprocess.Popen([*guest_argv(args), "-incoming", f"exec:cat {snapshot}"], stdout=o,
                                    stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        wait_steps(out, before + 1)
        incoming_s = time.monotonic() - t0
    finally:
        incoming.kill()
        incoming.wait()
    return migrate_s, int(downtime.group(1)) / 1000 if downtime else float("nan"), snapshot.stat().st_size, incoming_s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stasis", default=str(ROOT / "build/bin/stasis"))
    ap.add_argument("--guest", default=str(ROOT / "build/tests/qemu_guest.bin"))
    ap.add_argument("--mib", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    runs, qemu_runs = [], []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="stasis-bench-kvm-") as tmp:
            runs.append(one_run(args, Path(tmp)))
        print("run %d: checkpoint %.3f s, paused %.3f s, image %d bytes; restart to the next step %.3f s" % (i + 1, *runs[-1]))
        with tempfile.TemporaryDirectory(prefix="stasis-bench-kvm-") as tmp:
            qemu_runs.append(qemu_run(args, Path(tmp)))
        print("run %d: QEMU migrate %.3f s, downtime %.3f s, snapshot %d bytes; -incoming to the next step %.3f s"
              % (i + 1, *qemu_runs[-1]))
    med = [statistics.median(r[k] for r in runs) for k in range(4)]
    print("median (%d MiB guest): checkpoint %.3f s, paused %.3f s, image %d bytes; restart %.3f s" % (args.mib, *med))
    med = [statistics.median(r[k] for r in qemu_runs) for k in range(4)]
    print("median (%d MiB guest): QEMU migrate %.3f s, downtime %.3f s, snapshot %d bytes; -incoming %.3f s"
          % (args.mib, *med))


if __name__ == "__main__":
    main()
