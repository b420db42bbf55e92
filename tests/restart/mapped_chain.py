#!/usr/bin/python3
"""Memory that a restart maps straight from an uncompressed image must be saved in full by the
next checkpoint: restart from generation 1 (pages mapped from its image, most never touched),
checkpoint as generation 2, delete generation 1, kill, restart from generation 2, and compare the
output with an uninterrupted run.

  mapped_chain.py STASIS BIG_MEMORY"""
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from e2e_common import Computation, fail, lines, wait_lines  # noqa: E402


def main(stasis, program):
    args = [program, "256", "24", "150", "4"]
    reference = subprocess.run(args, capture_output=True, text=True, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        comp = Computation(stasis, tmp)
        env, ckpt = comp.env, comp.ckpt
        out = Path(tmp, "out")
        try:
            with open(out, "w") as o:
                proc = comp.popen(["launch", "--compress", "none", "--", *args], o, None)
            wait_lines(out, 4)
            if comp.run("checkpoint").returncode:
                fail("first checkpoint failed")
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            printed = len(lines(out))  # by the killed run: the restart rewrites them in place
            proc = comp.popen(["restart", str(ckpt / "000001")], None, None)
            # The killed run may have printed more than the restart starts from: wait until the
            # restart process has become the program (its memory is mapped again), then for output.
            deadline = time.monotonic() + 60
            maps = ""
            while "big_memory" not in maps and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
                maps = Path(f"/proc/{proc.pid}/maps").read_text()
            # Lines beyond the killed run's: the restarted program runs again (and has joined).
            wait_lines(out, printed + 2)
            if ".stasis" not in maps:
                fail("the restart did not map memory from the uncompressed image")
            if comp.run("checkpoint").returncode:
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
            comp.cleanup()
    print("PASS mapped_chain")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
