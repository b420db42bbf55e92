#!/usr/bin/python3
"""Memory that a restart maps straight from an uncompressed image must be saved in full by the
next checkpoint: restart from generation 1 (pages mapped from its image, most never touched),
checkpoint as generation 2, delete generation 1, kill, restart from generation 2, and compare the
output with an uninterrupted run.

  mapped_chain.py STASIS BIG_MEMORY"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def wait_lines(path, n, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= n:
            return
        time.sleep(0.05)
    fail(f"timed out waiting for {n} lines in {path}")


def main(stasis, program):
    args = [program, "256", "24", "150", "4"]
    reference = subprocess.run(args, capture_output=True, text=True, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, STASIS_RUNTIME_DIR=f"{tmp}/run")
        ckpt = Path(tmp, "ckpt")
        subprocess.run([stasis, "coordinator", "--port", "0", "--port-file", f"{tmp}/port",
                        "--ckpt-dir", str(ckpt), "--daemon", "--exit-when-idle"], env=env, check=True)
        env["STASIS_COORD"] = "127.0.0.1:" + Path(tmp, "port").read_text().strip()
        out = Path(tmp, "out")
        try:
            with open(out, "w") as o:
                proc = subprocess.Popen([stasis, "launch", "--compress", "none", "--", *args], env=env, stdout=o)
            wait_lines(out, 4)
            if subprocess.run([stasis, "checkpoint"], env=env, capture_output=True).returncode:
                fail("first checkpoint failed")
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            proc = subprocess.Popen([stasis, "restart", str(ckpt / "000001")], env=env)
            wait_lines(out, 8)
            maps = Path(f"/proc/{proc.pid}/maps").read_text()
            if ".stasis" not in maps:
                fail("the restart did not map memory from the uncompressed image")
            if subprocess.run([stasis, "checkpoint"], env=env, capture_output=True).returncode:
                fail("checkpoint of the restarted process failed")
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            shutil.rmtree(ckpt / "000001")  # the image the memory was mapped from is gone
            restarted = subprocess.run([stasis, "restart", str(ckpt)], env=env, timeout=120)
            if restarted.returncode != reference.returncode:
                fail(f"restart exited {restarted.returncode}")
            if out.read_text() != reference.stdout:
                fail("output after the second restart differs from an uninterrupted run")
        finally:
            subprocess.run([stasis, "kill"], env=env, capture_output=True)
    print("PASS mapped_chain")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
