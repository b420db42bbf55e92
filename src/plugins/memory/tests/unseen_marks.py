#!/usr/bin/python3
"""A fork mark set where Stasis cannot see it fails one checkpoint loudly, never silently.

After its first checkpoint a forked writer's pause keeps the fork marks it found instead of
reading /proc/self/smaps again (fork_exclusions.h), as long as no madvise() call set one. A mark
set through syscall(SYS_madvise) escapes that: wipe_on_fork ... raw marks new memory
MADV_WIPEONFORK at step 15, so the next forked writer would see it zeroed. That checkpoint must
fail naming MADV_WIPEONFORK and leave the program running; the one after it reads smaps again and
succeeds; restarted from it, the program ends with the output of an uninterrupted run (the
checksum covers the new memory).

usage: unseen_marks.py STASIS WIPE_ON_FORK
"""
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests"))
from e2e_common import Computation, fail, lines, wait_for, wait_lines  # noqa: E402

STEPS, DELAY = "60", "50"


def main():
    stasis, program = sys.argv[1], sys.argv[2]
    reference = subprocess.run([program, STEPS, DELAY, "raw"], capture_output=True, text=True, timeout=120)
    if reference.returncode != 0:
        fail(f"the reference run exited {reference.returncode}")
    with tempfile.TemporaryDirectory(prefix="stasis-unseen-marks-") as tmp:
        c = Computation(stasis, tmp)
        out = Path(tmp) / "out"
        try:
            with open(out, "w") as o:
                p = c.popen(["launch", "--", program, STEPS, DELAY, "raw"], stdout=o, stderr=subprocess.PIPE)
            wait_lines(out, 5)
            r = c.run("checkpoint", timeout=60)
            if r.returncode != 0:
                fail(f"first checkpoint: {r.stderr.strip()}")
            wait_for(lambda: any("raw marked" in l for l in lines(out)), "the raw madvise", 60)
            r = c.run("checkpoint", timeout=60)
            if r.returncode == 0:
                fail("the checkpoint after a MADV_WIPEONFORK set through syscall() succeeded: "
                     "its image holds the writer's zeros")
            if "MADV_WIPEONFORK" not in r.stderr:
                fail(f"the failed checkpoint does not name MADV_WIPEONFORK: {r.stderr.strip()}")
            print(f"second checkpoint refused: {r.stderr.strip()}")
            if p.poll() is not None:
                fail("the program did not run on after the failed checkpoint")
            r = c.run("checkpoint", "--kill", timeout=60)
            if r.returncode != 0:
                fail(f"third checkpoint: {r.stderr.strip()}")
            p.wait(timeout=30)
            cut = len(lines(out))
            with open(out, "a") as o:
                restarted = subprocess.run([stasis, "restart", r.stdout.strip().splitlines()[-1]], env=c.env,
                                           stdout=o, stderr=subprocess.PIPE, text=True, timeout=120)
            if restarted.returncode != 0:
                fail(f"restart exited {restarted.returncode}: {restarted.stderr.strip()[-400:]}")
            got = lines(out)
            if got != reference.stdout.splitlines():
                first = next((i for i, (a, b) in enumerate(zip(got, reference.stdout.splitlines())) if a != b),
                             min(len(got), len(reference.stdout.splitlines())))
                fail(f"output differs from the uninterrupted run's at line {first + 1} (restart cut at {cut}): "
                     f"{got[first:first + 1]} vs {reference.stdout.splitlines()[first:first + 1]}")
            print(f"PASS: one checkpoint refused, the next one restarted to the uninterrupted output ({len(got)} lines)")
        finally:
            c.cleanup()


if __name__ == "__main__":
    main()
