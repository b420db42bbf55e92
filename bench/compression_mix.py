#!/usr/bin/python3
"""Compressed checkpoints of a realistic memory mix against single-threaded `gzip -1`.

Runs tests' mixed_memory program (quarters of zero pages, repeated records, smooth doubles,
random bytes) under Stasis and, for each compression, takes --runs checkpoints and reports the
median checkpoint time (`stasis checkpoint`, until the image is durable), the program's pause
(from the coordinator log) and the image size. The baseline compresses the same bytes the
compressors see (the uncompressed image, which already leaves out zero pages) with `gzip -1`.
zstd and lz4 run once per --threads value (STASIS_COMPRESS_THREADS; `auto`: the runtime's choice,
1: the single-thread path), which shows what compressing on several cores gains.

usage: bench/compression_mix.py [--stasis build/bin/stasis] [--program build/tests/targets/mixed_memory]
                                [--mib 1024] [--runs 3] [--threads 1,auto] [--dir /var/tmp]
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stasis", default=str(ROOT / "build/bin/stasis"))
    ap.add_argument("--program", default=str(ROOT / "build/tests/targets/mixed_memory"))
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--threads", default="1,auto", help="compression threads to compare")
    args = ap.parse_args()
    rows = {}
    gzip_seconds, gzip_bytes, raw_bytes = [], 0, 0
    cases = [("none", "1")] + [(c, t) for c in ("zstd", "lz4") for t in args.threads.split(",")]
    for compress, threads in cases:
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            env = dict(os.environ, STASIS_RUNTIME_DIR=f"{tmp}/run")
            env.pop("STASIS_COMPRESS_THREADS", None)
            if threads != "auto":
                env["STASIS_COMPRESS_THREADS"] = threads
            ckpt = Path(tmp, "ckpt")
            subprocess.run([args.stasis, "coordinator", "--port", "0", "--port-file", f"{tmp}/port",
                            "--ckpt-dir", str(ckpt), "--daemon", "--exit-when-idle"], env=env, check=True)
            env["STASIS_COORD"] = "127.0.0.1:" + Path(tmp, "port").read_text().strip()
            out = Path(tmp, "out")
            with open(out, "w") as o:
                proc = subprocess.Popen([args.stasis, "launch", "--compress", compress, "--",
                                         args.program, str(args.mib), "100000", "200"], env=env, stdout=o)
            while "step 1 " not in out.read_text():
                time.sleep(0.1)
            seconds, sizes = [], []
            for _ in range(args.runs):
                t0 = time.monotonic()
                r = subprocess.run([args.stasis, "checkpoint"], env=env, capture_output=True, text=True)
                seconds.append(time.monotonic() - t0)
                gen = Path(r.stdout.strip())
                sizes.append(sum(f.stat().st_size for f in gen.glob("*.stasis")))
            pauses = [float(m) for m in re.findall(r"paused ([0-9.]+) s", (ckpt / "coordinator.log").read_text())]
            if compress == "none":
                image = next(gen.glob("*.stasis"))
                raw_bytes = image.stat().st_size
                for _ in range(args.runs):
                    t0 = time.monotonic()
                    with open(image, "rb") as src:
                        gz = subprocess.run(["gzip", "-1", "-c"], stdin=src, capture_output=True)
                    gzip_seconds.append(time.monotonic() - t0)
                    gzip_bytes = len(gz.stdout)
            proc.kill()
            proc.wait()
            subprocess.run([args.stasis, "kill"], env=env, capture_output=True)
            rows[f"{compress}/{threads}"] = (statistics.median(seconds), statistics.median(pauses), statistics.median(sizes))
    gz = statistics.median(gzip_seconds)
    print(f"\n{args.mib} MiB mixed memory (1/4 zero pages), median of {args.runs}; "
          f"non-zero bytes {raw_bytes / 2**20:.0f} MiB")
    print(f"{'method/threads':>14} {'ckpt s':>8} {'pause s':>8} {'image MiB':>10} {'vs gzip time':>13} "
          f"{'vs gzip size':>13}")
    for method, (s, p, b) in rows.items():
        print(f"{method:>14} {s:8.2f} {p:8.3f} {b / 2**20:10.1f} {gz / s:12.1f}x {b / gzip_bytes:12.2f}x")
    print(f"{'gzip -1':>14} {gz:8.2f} {'':>8} {gzip_bytes / 2**20:10.1f} {'1.0x':>13} {'1.00x':>13}")


if __name__ == "__main__":
    main()
