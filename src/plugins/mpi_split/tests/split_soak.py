#!/usr/bin/env python3
"""split_soak.py STASIS MPI_RUN LAUNCHER RANKS NATIVE SPLIT STEPS DELAY_MS SECONDS [RESTART_LAUNCHER IMPL]

Issue 17's held-in program under load (README.md, Tests): SPLIT (soak_everything: splits,
derived types, messages and a nonblocking collective in flight between steps, persistent
requests, Ssend, RMA fence and passive-target epochs, a second thread calling MPI) launched with
`stasis launch --mpi -- LAUNCHER -np RANKS`, checkpointed live once a second for SECONDS seconds
(a checkpoint refused at the safe point is asked again; more than a few in a row, or any other
failure, fails the test: a deadlock shows as a checkpoint or a step that never ends). The job must
print the native build's uninterrupted output. Then three of its checkpoints (an early one, one
in the middle, the last) are each restarted under `LAUNCHER -np RANKS stasis restart --mpi-rank`
(or RESTART_LAUNCHER, whose library IMPL every restarted rank must start) with the program's
fast-forward file present (its sleeps skipped, its output unchanged): each must print the native
output from the step after the lines it had printed when that checkpoint began."""
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests"))
from e2e_common import Computation, fail, lines, wait_for  # noqa: E402
from split_restart import program_lines  # noqa: E402  (the program's lines, not its launcher's)


def main():
    stasis, mpi_run, launcher, ranks, native, split, steps, delay, seconds = sys.argv[1:10]
    restart_launcher, implementation = (sys.argv[10], sys.argv[11]) if len(sys.argv) > 11 else (launcher, None)
    job = [mpi_run, launcher, "-np", ranks, "--"]
    reference = subprocess.run([*job, native, steps, "0"], capture_output=True, text=True, timeout=300)
    if reference.returncode != 0 or "done ranks" not in reference.stdout:
        fail(f"the native job failed ({reference.returncode}): {reference.stderr[-2000:]}")
    expected = reference.stdout.splitlines()
    with tempfile.TemporaryDirectory(prefix="stasis-split-soak-") as tmp:
        tmp = Path(tmp)
        fast = tmp / "fast-forward"
        c = Computation(stasis, tmp)
        processes = []
        try:
            out = tmp / "launch.out"
            with open(out, "w") as stdout, open(tmp / "launch.err", "w") as stderr:
                job_process = c.popen(["launch", "--mpi", "--", *job, split, steps, delay, str(fast)], stdout, stderr)
            processes.append(job_process)
            wait_for(lambda: len(program_lines(out)) >= 2, f"the job's first steps in {out}", 90)
            # (generation, lines printed before the checkpoint began, lines once it was taken)
            checkpoints, refused_in_a_row, refusals = [], 0, 0
            deadline = time.monotonic() + float(seconds)
            while time.monotonic() < deadline and job_process.poll() is None:
                started = time.monotonic()
                before = len(program_lines(out))
                done = c.run("checkpoint", timeout=120)
                if done.returncode == 0:
                    checkpoints.append((Path(done.stdout.strip().splitlines()[-1]), before,
                                        len(program_lines(out))))
                    refused_in_a_row = 0
                elif "stayed inside the MPI library" in done.stderr and refused_in_a_row < 5:
                    refused_in_a_row += 1
                    refusals += 1
                elif job_process.poll() is not None:
                    break  # the job ended while this checkpoint was asked for
                else:
                    fail(f"checkpoint {len(checkpoints) + 1} failed ({done.returncode}): {done.stderr.strip()}")
                time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
            if job_process.poll() is not None and len(program_lines(out)) < len(expected):
                fail(f"the job ended after {len(checkpoints)} checkpoints, early: "
                     f"{(tmp / 'launch.err').read_text()[-2000:]}")
            fast.touch()  # the rest of the live job, and every restart, without the sleeps
            try:
                job_process.wait(timeout=300)
            except subprocess.TimeoutExpired:
                fail(f"the job did not end after {len(checkpoints)} checkpoints (deadlock?): "
                     f"{(tmp / 'launch.err').read_text()[-2000:]}")
            if program_lines(out) != expected:
                fail("the checkpointed job printed other lines than the native build:\n" + "\n".join(lines(out)))
            if len(checkpoints) < 0.5 * float(seconds):
                fail(f"only {len(checkpoints)} checkpoints in {seconds} s")

            restart_job = [mpi_run, restart_launcher, "-np", ranks, "--"]
            chosen = sorted({0, len(checkpoints) // 2, len(checkpoints) - 1})
            for n in chosen:
                generation, before, taken = checkpoints[n]
                name = f"restart-{generation.name}"
                with open(tmp / f"{name}.out", "w") as stdout, open(tmp / f"{name}.err", "w") as stderr:
                    process = subprocess.Popen([*restart_job, stasis, "restart", "--mpi-rank", str(generation)],
                                               env=c.env, stdout=stdout, stderr=stderr)
                processes.append(process)
                try:
                    process.wait(timeout=300)
                except subprocess.TimeoutExpired:
                    fail(f"the restart of {generation.name} did not end: "
                         f"{(tmp / f'{name}.err').read_text()[-2000:]}")
                printed = lines(tmp / f"{name}.out")
                if process.returncode != 0 or printed != program_lines(tmp / f"{name}.out"):
                    fail(f"the restart of {generation.name} exited {process.returncode}: "
                         f"{(tmp / f'{name}.err').read_text()[-2000:]}\n" + "\n".join(printed))
                start = len(expected) - len(printed)
                if not (before <= start <= taken) or printed != expected[start:]:
                    fail(f"the restart of {generation.name} (taken after {before}-{taken} lines) printed other "
                         f"lines than the native build's last {len(printed)}:\n" + "\n".join(printed))
                print(f"{generation.name}: taken after line {before}-{taken}, restarted: lines {start + 1}-"
                      f"{len(expected)} as the native build's")
            if implementation:
                log = (c.ckpt / "coordinator.log").read_text()
                started = re.findall(r"restarted over a fresh lower half \((\w+)\)", log)
                if len(started) != len(chosen) * int(ranks) or set(started) != {implementation}:
                    fail(f"the restarted ranks started lower halves of {started}, expected "
                         f"{len(chosen) * int(ranks)} of {implementation}")
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
            c.cleanup()
    print(f"split soak: {len(checkpoints)} live checkpoints in {seconds} s ({refusals} refused at the safe point "
          f"and asked again), the native output ({len(expected)} lines); {len(chosen)} of them restarted to it")


if __name__ == "__main__":
    main()
