#!/usr/bin/python3
"""A QEMU guest checkpointed by Stasis against QEMU's own snapshot (migration to a file).

The guest: tests/vm/tcg_guest.sh (Debian's kernel, a busybox initramfs printing a progress line
every --step-ms), `-accel tcg -m MIB`, console on stdout. Each mode, median of --runs runs:
  stasis forked       `stasis checkpoint` (forked writer; the guest runs on)
  stasis in place     `stasis checkpoint` with STASIS_FORKED_CHECKPOINT=0 (what QEMU got before
                      its MADV_DONTFORK guest RAM was lent to the forked writer)
  stasis incremental  the second `stasis checkpoint` under `launch --incremental` (an increment)
  stasis kill         `stasis checkpoint --kill --full --compress none` (in place, the VM ends)
  qemu migrate        HMP `migrate "exec:cat > FILE"` until `info migrate` says completed
for each: wall seconds, how long the guest was paused (Stasis: the coordinator's "computation
paused"; QEMU: its reported downtime) and image bytes; then restart, timed from the command to
the guest's next output: `stasis restart` (zstd images), `stasis restart --lazy` from
uncompressed images (mapped restart), `qemu -incoming "exec:cat FILE"`. Prints the medians and
Stasis/QEMU ratios.

usage: bench/vm_vs_migration.py [--stasis build/bin/stasis] [--mib 256] [--runs 3] [--step-ms 50]
"""
import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from e2e_common import Computation  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from incremental import paused_seconds  # noqa: E402

GUEST = ROOT / "tests/vm/tcg_guest.sh"


def guest_argv(cache, mib, step_ms):
    """The QEMU command tcg_guest.sh runs, with the memory size asked for."""
    kernel = (cache / "kernel").read_text().strip()
    return ["qemu-system-x86_64", "-accel", "tcg", "-m", str(mib), "-display", "none", "-nodefaults",
            "-no-reboot", "-kernel", kernel, "-initrd", str(cache / "initrd.gz"), "-append",
            f"console=ttyS0 quiet loglevel=1 printk.time=0 panic=-1 guest.steps=100000 "
            f"guest.delay={step_ms * 1000}", "-serial", "stdio", "-nic", "none"]


class Output:
    """A process's stdout in a file, read for progress lines."""

    def __init__(self, path):
        self.path = path

    def steps(self):
        return len(re.findall(rb"^guest step", self.path.read_bytes(), re.M)) if self.path.exists() else 0

    def wait_steps(self, n, timeout=180):
        deadline = time.monotonic() + timeout
        while self.steps() < n:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {n} progress lines in {self.path}")
            time.sleep(0.01)

    def wait_growth(self, t0, timeout=120):
        """Seconds from t0 until the file grows past the smallest size it had since: a restart
        first cuts the program's output file back to its size at the checkpoint, then the
        guest's next line lands."""
        smallest = self.path.stat().st_size
        while time.monotonic() - t0 < timeout:
            size = self.path.stat().st_size
            if size > smallest:
                return time.monotonic() - t0
            smallest = min(smallest, size)
            time.sleep(0.002)
        raise RuntimeError(f"{self.path} did not grow")


def dir_bytes(path):
    return sum(f.stat().st_size for f in Path(path).rglob("*.stasis"))


def timed(argv, env):
    t0 = time.monotonic()
    cp = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    if cp.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[1:])}: {cp.stderr.strip()}")
    return time.monotonic() - t0, cp.stdout.strip().splitlines()[-1]


def stasis_run(args, cache, tmp, results):
    c = Computation(args.stasis, tmp)
    out = Output(tmp / "guest.out")
    try:
        # forked and incremental: one computation launched with --incremental (gen 1 full, gen 2 increment)
        with open(out.path, "wb") as o:
            qemu = subprocess.Popen([args.stasis, "launch", "--incremental", "--",
                                     *guest_argv(cache, args.mib, args.step_ms)],
                                    env=c.env, stdout=o, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        out.wait_steps(20)
        secs, gen = timed([args.stasis, "checkpoint"], c.env)
        results["stasis forked"].append((secs, paused_seconds(c.ckpt, 1), dir_bytes(gen)))
        out.wait_steps(out.steps() + 20)
        secs, gen = timed([args.stasis, "checkpoint"], c.env)
        results["stasis incremental"].append((secs, paused_seconds(c.ckpt, 2), dir_bytes(gen)))
        # --kill (in place), uncompressed so that the lazy restart maps it
        secs, gen = timed([args.stasis, "checkpoint", "--kill", "--full", "--compress", "none"], c.env)
        results["stasis kill (none)"].append((secs, float("nan"), dir_bytes(gen)))  # the VM ends
        qemu.wait(timeout=60)
        for name, extra, generation in (("stasis restart --lazy (mapped)", ["--lazy"], gen),
                                        ("stasis restart (zstd, gen 1)", [], str(c.ckpt / "000001"))):
            t0 = time.monotonic()
            r = subprocess.Popen([args.stasis, "restart", *extra, generation], env=c.env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            results[name].append((out.wait_growth(t0), float("nan"), 0))
            subprocess.run([args.stasis, "kill"], env=c.env, capture_output=True)
            r.wait(timeout=60)
            c = Computation(args.stasis, tmp / f"again-{len(results[name])}-{len(extra)}")
    finally:
        c.cleanup()


def stasis_in_place_run(args, cache, tmp, results):
    """What a QEMU guest got before MADV_DONTFORK memory was lent to the writer: in place."""
    c = Computation(args.stasis, tmp)
    out = Output(tmp / "guest.out")
    try:
        with open(out.path, "wb") as o:
            subprocess.Popen([args.stasis, "launch", "--", *guest_argv(cache, args.mib, args.step_ms)],
                             env=dict(c.env, STASIS_FORKED_CHECKPOINT="0"), stdout=o,
                             stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        out.wait_steps(20)
        secs, gen = timed([args.stasis, "checkpoint"], c.env)
        results["stasis in place"].append((secs, paused_seconds(c.ckpt, 1), dir_bytes(gen)))
    finally:
        c.cleanup()


def hmp(sock_path, command):
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(sock_path))
        s.settimeout(30)
        data = b""
        while b"(qemu)" not in data:
            data += s.recv(65536)
        s.sendall(command.encode() + b"\n")
        data = b""
        while data.count(b"(qemu)") < 1:
            data += s.recv(65536)
        return data.decode("utf-8", "replace")


def qemu_run(args, cache, tmp, results):
    out = Output(tmp / "qemu.out")
    sock = tmp / "monitor.sock"
    snapshot = tmp / "snapshot.bin"
    base = guest_argv(cache, args.mib, args.step_ms)
    with open(out.path, "wb") as o:
        qemu = subprocess.Popen([*base, "-monitor", f"unix:{sock},server,nowait"], stdout=o,
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        out.wait_steps(20)
        t0 = time.monotonic()
        hmp(sock, f'migrate "exec:cat > {snapshot}"')
        while True:
            info = hmp(sock, "info migrate")
            if "Migration status: completed" in info:
                break
            if "failed" in info:
                raise RuntimeError(info)
            time.sleep(0.01)
        secs = time.monotonic() - t0
        downtime = re.search(r"downtime: (\d+) ms", info)
        results["qemu migrate"].append((secs, int(downtime.group(1)) / 1000 if downtime else float("nan"),
                                        snapshot.stat().st_size))
    finally:
        qemu.kill()
        qemu.wait()
    t0 = time.monotonic()
    with open(out.path, "ab") as o:
        incoming = subprocess.Popen([*base, "-incoming", f"exec:cat {snapshot}"], stdout=o,
                                    stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        results["qemu -incoming"].append((out.wait_growth(t0), float("nan"), 0))
    finally:
        incoming.kill()
        incoming.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stasis", default=str(ROOT / "build/bin/stasis"))
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--step-ms", type=int, default=50)
    args = ap.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="stasis-vm-bench-cache-"))
    if subprocess.run(["bash", str(GUEST), "prepare", str(cache)]).returncode != 0:
        sys.exit("no guest can boot here")
    results = {k: [] for k in ("stasis forked", "stasis in place", "stasis incremental", "stasis kill (none)", "qemu migrate",
                               "stasis restart (zstd, gen 1)", "stasis restart --lazy (mapped)",
                               "qemu -incoming")}
    for run in range(args.runs):
        for fn in (stasis_run, stasis_in_place_run, qemu_run):
            with tempfile.TemporaryDirectory(prefix="stasis-vm-bench-", dir="/var/tmp") as tmp:
                fn(args, cache, Path(tmp), results)
        print(f"run {run + 1} of {args.runs} done", file=sys.stderr)
    med = {k: tuple(statistics.median(x[i] for x in v) for i in range(3)) for k, v in results.items() if v}
    print(f"QEMU {args.mib} MiB TCG guest, median of {args.runs} runs")
    print(f"{'mode':34} {'seconds':>8} {'paused s':>9} {'image MB':>9}")
    for k, (s, p, b) in med.items():
        print(f"{k:34} {s:8.3f} {p:9.3f} {b / 1e6:9.1f}")
    q = med["qemu migrate"]
    for k in ("stasis forked", "stasis in place", "stasis incremental", "stasis kill (none)"):
        print(f"{k} / qemu migrate: time {med[k][0] / q[0]:.2f}x, pause {med[k][1] / q[1]:.2f}x, "
              f"size {med[k][2] / q[2]:.2f}x")
    for k in ("stasis restart (zstd, gen 1)", "stasis restart --lazy (mapped)"):
        print(f"{k} / qemu -incoming: {med[k][0] / med['qemu -incoming'][0]:.2f}x")


if __name__ == "__main__":
    main()
