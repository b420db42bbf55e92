#!/usr/bin/python3
"""A checkpoint that fails because the disk is full must leave the previous checkpoint intact and
the computation running; a later checkpoint succeeds once there is room, and the program restarts
from it with the output of an uninterrupted run.

  disk_full.py STASIS COUNTER
Needs root (a small tmpfs is mounted as the checkpoint directory); skips (77) otherwise."""
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from e2e_common import Computation, fail  # noqa: E402


def main(stasis, counter):
    if os.geteuid() != 0:
        print("SKIP: needs root to mount a small tmpfs")
        sys.exit(77)
    reference = subprocess.run([counter, "60", "50"], capture_output=True, text=True)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = Path(tmp, "ckpt")
        ckpt.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "stasis-test", str(ckpt)]).returncode:
            print("SKIP: cannot mount tmpfs")
            sys.exit(77)
        proc = None
        comp = None
        try:
            comp = Computation(stasis, tmp)
            env = comp.env
            out = Path(tmp, "out")
            with open(out, "w") as o:
                proc = subprocess.Popen([stasis, "launch", "--compress", "none", "--", counter, "60", "50"],
                                        env=env, stdout=o)
            time.sleep(0.5)
            first = subprocess.run([stasis, "checkpoint"], env=env, capture_output=True, text=True)
            if first.returncode != 0:
                fail(f"first checkpoint failed: {first.stderr}")
            filler = Path(ckpt, "filler")
            subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k", "count=1000"],
                           capture_output=True)  # fills the tmpfs, stopping at ENOSPC
            second = subprocess.run([stasis, "checkpoint"], env=env, capture_output=True, text=True)
            if second.returncode == 0:
                fail("a checkpoint onto a full disk reported success")
            if "no space" not in second.stderr:
                fail(f"the failure does not say the disk is full: {second.stderr!r}")
            if os.readlink(ckpt / "latest") != "000001" or (ckpt / "000002").exists():
                fail(f"the failed checkpoint touched the previous one: {sorted(os.listdir(ckpt))}")
            if proc.poll() is not None:
                fail("the computation died with the failed checkpoint")
            filler.unlink()
            third = subprocess.run([stasis, "checkpoint"], env=env, capture_output=True, text=True)
            if third.returncode != 0:
                fail(f"checkpoint after freeing space failed: {third.stderr}")
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            restarted = subprocess.run([stasis, "restart", str(ckpt)], env=env, timeout=60)
            if restarted.returncode != reference.returncode or out.read_text() != reference.stdout:
                fail("the restart from the checkpoint after the failure differs from an uninterrupted run")
        finally:
            if proc and proc.poll() is None:
                proc.kill()
            if comp:
                comp.cleanup()
            time.sleep(0.2)
            subprocess.run(["umount", "-l", str(ckpt)])
    print("PASS disk_full")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
