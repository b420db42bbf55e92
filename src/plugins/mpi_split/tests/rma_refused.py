#!/usr/bin/env python3
"""rma_refused.py STASIS MPI_RUN LAUNCHER NATIVE SPLIT STEPS DELAY_MS

A window the MPI library holds the memory of (MPI_Win_allocate_shared) refuses a split checkpoint,
naming the function, and never aborts the job (README.md, One-sided communication): `rma_epochs
STEPS DELAY_MS shared` under `stasis launch --mpi -- LAUNCHER -np 2`, checkpointed while it runs;
the checkpoint must fail with a message naming MPI_Win_allocate_shared, and the job must run on to
the native build's output."""
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests"))
from e2e_common import Computation, fail, lines, wait_for  # noqa: E402


def main():
    stasis, mpi_run, launcher, native, split, steps, delay = sys.argv[1:8]
    job = [mpi_run, launcher, "-np", "2", "--"]
    reference = subprocess.run([*job, native, steps, "0", "shared"], capture_output=True, text=True, timeout=120)
    if reference.returncode != 0 or "done ranks" not in reference.stdout:
        fail(f"the native job failed ({reference.returncode}): {reference.stderr[-2000:]}")
    with tempfile.TemporaryDirectory(prefix="stasis-rma-refused-") as tmp:
        tmp = Path(tmp)
        c = Computation(stasis, tmp)
        try:
            out = tmp / "launch.out"
            with open(out, "w") as stdout, open(tmp / "launch.err", "w") as stderr:
                job_process = c.popen(["launch", "--mpi", "--", *job, split, steps, delay, "shared"], stdout, stderr)
            wait_for(lambda: len(lines(out)) >= 2, f"2 lines in {out}", 90)
            refused = c.run("checkpoint", timeout=120)
            said = refused.stdout + refused.stderr
            if refused.returncode == 0 or "MPI_Win_allocate_shared" not in said:
                fail(f"the checkpoint exited {refused.returncode} without naming MPI_Win_allocate_shared: {said}")
            try:
                job_process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                job_process.kill()
                fail("the job did not end after the refused checkpoint")
            if job_process.returncode != 0 or lines(out) != reference.stdout.splitlines():
                fail(f"the job exited {job_process.returncode} and printed other lines than the native build:\n"
                     + "\n".join(lines(out)) + "\n" + (tmp / "launch.err").read_text()[-2000:])
        finally:
            c.cleanup()
    print(f"refused, naming MPI_Win_allocate_shared: {said.strip().splitlines()[-1]}; the job ran on to the native "
          f"output")


if __name__ == "__main__":
    main()
