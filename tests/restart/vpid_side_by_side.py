#!/usr/bin/python3
"""Two copies of one checkpoint restarted at the same time: each is a computation of its own with
its own pid table, so the same virtual pids in both must not clash. A process tree that checks
pids in signals (vpid_signals) is checkpointed and killed, its checkpoint root copied, and both
copies restarted side by side (each with its own coordinator: COORD_MODE "own"; or both through
one coordinator: "shared"). Each restart's
output (its stdout is a pipe, reconnected to the restart's own) must be the rest of an
uninterrupted run.

  vpid_side_by_side.py STASIS VPID_SIGNALS [own|shared]"""
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from e2e_common import Computation, fail  # noqa: E402

STEPS, DELAY_MS = "40", "60"


def main(stasis, program, coord_mode="own"):
    args = [program, STEPS, DELAY_MS]
    reference = subprocess.run(args, capture_output=True, text=True, check=True).stdout.splitlines()
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("a", "b"):
            Path(tmp, name).mkdir()
        comps = [Computation(stasis, Path(tmp, "a"))]
        try:
            first = comps[0]
            proc = first.popen(["launch", "--", *args], subprocess.PIPE, None)
            for _ in range(6):  # a few steps before the checkpoint
                proc.stdout.readline()
            if first.run("checkpoint").returncode:
                fail("the checkpoint failed")
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            copy = Path(tmp, "b", "ckpt")
            shutil.copytree(first.ckpt, copy, symlinks=True)
            if coord_mode == "own":
                comps.append(Computation(stasis, Path(tmp, "b")))
            else:
                comps.append(first)
            restarts = [comps[0].popen(["restart", str(first.ckpt / "000001")], subprocess.PIPE, subprocess.PIPE)]
            # Through one coordinator the copy starts once the original runs: the first restart
            # starts that coordinator, and a second one racing it finds it answering before its
            # secret file is written.
            first_lines = [restarts[0].stdout.readline()] if coord_mode == "shared" else []
            restarts.append(comps[1].popen(["restart", str(copy / "000001")], subprocess.PIPE, subprocess.PIPE))
            for name, restart, early in zip(("original", "copy"), restarts, (first_lines, [])):
                try:
                    out, err = restart.communicate(timeout=120)
                except subprocess.TimeoutExpired:
                    for r in restarts:
                        r.kill()
                    fail(f"the restart of the {name} did not finish")
                got = [line.decode().rstrip("\n") for line in early] + out.decode().splitlines()
                if restart.returncode != 0:
                    fail(f"the restart of the {name} exited {restart.returncode}: {err.decode()[-2000:]}")
                if len(got) < 10 or got != reference[len(reference) - len(got):]:
                    fail(f"the restart of the {name} printed {len(got)} lines that are not the end of an "
                         f"uninterrupted run:\n" + "\n".join(got[:15]))
        finally:
            for comp in {id(c): c for c in comps}.values():
                comp.cleanup()
    print(f"PASS vpid_side_by_side ({coord_mode} coordinator)")


if __name__ == "__main__":
    main(*sys.argv[1:])
