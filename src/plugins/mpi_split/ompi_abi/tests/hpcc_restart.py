#!/usr/bin/env python3
"""hpcc_restart.py STASIS MPI_RUN LAUNCHER INPUT

Debian's unmodified hpcc (built against Open MPI) as a split process through the Open MPI front
(README.md), checkpointed mid-run and restarted. First the native reference: `LAUNCHER -np 2
hpcc` without Stasis, to its end. Then `stasis launch --mpi -- LAUNCHER -np 2 hpcc`, checkpointed
and killed once hpcc has begun its first benchmark (MPIRandomAccess, whose user reduction
operation MPI_Op_create made and whose struct datatype MPI_Type_create_struct made before it),
and `LAUNCHER -np 2 stasis restart --mpi-rank GENERATION`: fresh lower halves make the operation
and the datatype again from the replay log, and hpcc must run to its end with the same
verification lines (every "passed"/"PASSED"/"FAILED" line, error counts, residuals) as the native
run, timings left out. Skipped (77) without hpcc."""
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[5] / "tests"))
from e2e_common import Computation, fail, wait_for  # noqa: E402

VERIFICATION = re.compile(r"passed|PASSED|FAILED|failed|Node\(s\) with error|Solution Validates|errors in|_Errors|"
                          r"_ErrorsFraction|Failure")


def verification_lines(output):
    """hpcc's verdicts: the lines that say passed or failed, without the timings on a PTRANS row (and
    without its CPU rows, which it prints or not by the CPU time measured)."""
    found = []
    for line in output.read_text(errors="replace").splitlines() if output.exists() else []:
        if VERIFICATION.search(line) and not line.startswith("CPU "):
            row = re.match(r"^(WALL) .* (PASSED|FAILED) ", line)
            found.append(f"{row.group(1)} {row.group(2)}" if row else line.strip())
    return found


def main():
    stasis, mpi_run, launcher, hpcc_input = sys.argv[1:5]
    if not shutil.which("hpcc"):
        print("SKIP: no hpcc (Debian: hpcc)")
        sys.exit(77)
    job = [mpi_run, launcher, "-np", "2", "--"]
    with tempfile.TemporaryDirectory(prefix="stasis-hpcc-restart-") as tmp:
        tmp = Path(tmp)
        native, split = tmp / "native", tmp / "split"
        for work in (native, split):
            work.mkdir()
            shutil.copy(hpcc_input, work / "hpccinf.txt")
        reference = subprocess.run([*job, "hpcc"], cwd=native, capture_output=True, text=True, timeout=240)
        expected = verification_lines(native / "hpccoutf.txt")
        if reference.returncode != 0 or not expected or "End of HPC Challenge tests" not in \
                (native / "hpccoutf.txt").read_text(errors="replace"):
            fail(f"the native hpcc failed ({reference.returncode}): {reference.stderr[-2000:]}")
        c = Computation(stasis, tmp)
        output = split / "hpccoutf.txt"
        processes = []
        try:
            with open(tmp / "launch.out", "w") as out, open(tmp / "launch.err", "w") as err:
                processes.append(subprocess.Popen([stasis, "launch", "--mpi", "--", *job, "hpcc"], cwd=split,
                                                  env=c.env, stdout=out, stderr=err))
            wait_for(lambda: "Begin of MPIRandomAccess section." in
                     (output.read_text(errors="replace") if output.exists() else ""),
                     "hpcc's first benchmark", 120)
            generation = None
            for _ in range(10):
                done = c.run("checkpoint", "--kill", timeout=120)
                if done.returncode == 0:
                    generation = Path(done.stdout.strip().splitlines()[-1])
                    break
                if "stayed inside the MPI library" not in done.stderr:
                    fail(f"`stasis checkpoint --kill` exited {done.returncode}: {done.stderr.strip()}")
                time.sleep(0.3)
            if generation is None:
                fail("10 checkpoints in a row were refused at the safe point")
            processes[0].wait(timeout=60)
            text = output.read_text(errors="replace")
            begun = re.findall(r"^Begin of (\w+) section", text, re.M)
            if "End of HPC Challenge tests" in text:
                fail("hpcc had ended before the checkpoint: nothing was restarted mid-run")
            with open(tmp / "restart.out", "w") as out, open(tmp / "restart.err", "w") as err:
                processes.append(subprocess.Popen([*job, stasis, "restart", "--mpi-rank", str(generation)], cwd=split,
                                                  env=c.env, stdout=out, stderr=err))
            try:
                status = processes[1].wait(timeout=240)
            except subprocess.TimeoutExpired:
                fail(f"the restarted hpcc did not end: {(tmp / 'restart.err').read_text()[-2000:]}")
            got = verification_lines(output)
            if status != 0 or "End of HPC Challenge tests" not in output.read_text(errors="replace"):
                fail(f"the restarted hpcc exited {status} before its end: {(tmp / 'restart.err').read_text()[-2000:]}")
            if got != expected:
                fail("the restarted hpcc's verification lines differ from the native run's:\n" +
                     "\n".join(f"native: {a}" for a in expected) + "\n" + "\n".join(f"split:  {b}" for b in got))
            log = (c.ckpt / "coordinator.log").read_text()
            fresh = re.findall(r"restarted over a fresh lower half \((\w+)\)", log)
            if len(fresh) != 2:
                fail(f"expected 2 ranks restarted over a fresh lower half, the log says {fresh}")
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
            c.cleanup()
    print(f"hpcc checkpointed in section {begun[-1] if begun else '?'} ({len(begun)} begun), killed, restarted over "
          f"fresh Open MPI lower halves: {len(got)} verification lines, the native run's")


if __name__ == "__main__":
    main()
