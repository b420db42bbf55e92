#!/usr/bin/env python3
"""split_restart.py STASIS MPI_RUN LAUNCHER RANKS NATIVE SPLIT STEPS DELAY_MS [RESTART_LAUNCHER IMPL]

The split checkpoint and restart end to end (README.md, The split checkpoint; Restart). A split
build's job, launched with `stasis launch --mpi -- LAUNCHER -np RANKS SPLIT STEPS DELAY_MS`, is
checkpointed and killed (generation A) while a message is in flight to every rank (SPLIT is
ring_in_flight: the drain takes them). `LAUNCHER -np RANKS stasis restart --mpi-rank A` starts
fresh lower halves (a new mpirun, new MPI_Init) under the restored upper halves; that job is
checkpointed and killed again (B), B is restarted and runs to its end, and A is restarted a
second time and runs to its end. Each run's output, after what the killed runs printed, must be
the native build's uninterrupted output. With RESTART_LAUNCHER (another MPI's launcher) and IMPL
(its library, as the lower half names it), every restart runs under that launcher, and every
restarted rank must say it started a lower half of IMPL: checkpointed under one MPI library,
restarted under another, one binary. With STASIS_SPLIT_LOG_EXPECTS (a regular expression), every
rank's report of each checkpoint (the coordinator's log) must match it."""
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests"))
from e2e_common import Computation, fail, lines, wait_for  # noqa: E402


def program_lines(path):
    """The program's lines: what a launcher adds about ranks a checkpoint killed (Hydra's "BAD
    TERMINATION" banner, on its stdout) is not the program's."""
    return [line for line in lines(path) if re.match(r"^(step \d+ |done ranks )", line)]


def checkpoint_and_kill(c, out, wanted):
    """Once `out` has `wanted` lines: checkpoint --kill (asked again when refused at the safe
    point); returns the generation directory and the lines printed before it."""
    wait_for(lambda: len(lines(out)) >= wanted, f"{wanted} lines in {out}", 90)
    for _ in range(10):
        done = c.run("checkpoint", "--kill", timeout=120)
        if done.returncode == 0:
            said = done.stdout + done.stderr
            drained = re.findall(r"drained (\d+) message", said)
            return Path(done.stdout.strip().splitlines()[-1]), drained
        if "stayed inside the MPI library" not in done.stderr:
            fail(f"`stasis checkpoint --kill` exited {done.returncode}: {done.stderr.strip()}")
        time.sleep(0.3)
    fail("10 checkpoints in a row were refused at the safe point")


def native_output(job, native, steps):
    """The lines the native build prints uninterrupted (no sleeps: they change no output)."""
    reference = subprocess.run([*job, native, steps, "0"], capture_output=True, text=True, timeout=120)
    if reference.returncode != 0 or "done ranks" not in reference.stdout:
        fail(f"the native job failed ({reference.returncode}): {reference.stderr[-2000:]}")
    return reference.stdout.splitlines()


def stop(processes, computation):
    """Kills what still runs of a test's jobs, then the computation."""
    for process in processes:
        if process.poll() is None:
            process.kill()
    computation.cleanup()


def main():
    stasis, mpi_run, launcher, ranks, native, split, steps, delay = sys.argv[1:9]
    restart_launcher, implementation = (sys.argv[9], sys.argv[10]) if len(sys.argv) > 10 else (launcher, None)
    job = [mpi_run, launcher, "-np", ranks, "--"]
    restart_job = [mpi_run, restart_launcher, "-np", ranks, "--"]
    expected = native_output(job, native, steps)
    with tempfile.TemporaryDirectory(prefix="stasis-split-restart-") as tmp:
        tmp = Path(tmp)
        c = Computation(stasis, tmp)
        runs = {}

        def start(name, command):
            out = tmp / f"{name}.out"
            with open(out, "w") as stdout, open(tmp / f"{name}.err", "w") as stderr:
                runs[name] = (c.popen(command, stdout, stderr), out)
            return out

        def restart(name, generation):
            out = tmp / f"{name}.out"
            with open(out, "w") as stdout, open(tmp / f"{name}.err", "w") as stderr:
                process = subprocess.Popen([*restart_job, stasis, "restart", "--mpi-rank", str(generation)], env=c.env,
                                           stdout=stdout, stderr=stderr)
            runs[name] = (process, out)
            return out

        def ended(name):
            process, _ = runs[name]
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                fail(f"{name} did not end: {(tmp / f'{name}.err').read_text()[-2000:]}")
            return process.returncode

        try:
            launched = start("launch", ["launch", "--mpi", "--", *job, split, steps, delay])
            a, drained_a = checkpoint_and_kill(c, launched, 4)
            ended("launch")
            before_a = program_lines(launched)
            first = restart("restart1", a)
            b, drained_b = checkpoint_and_kill(c, first, 5)
            ended("restart1")
            before_b = before_a + program_lines(first)
            second = restart("restart2", b)
            if ended("restart2") != 0:
                fail(f"the restart of {b.name} exited {runs['restart2'][0].returncode}: "
                     f"{(tmp / 'restart2.err').read_text()[-2000:]}")
            if before_b + program_lines(second) != expected:
                fail(f"launch, a restart of {a.name} and a restart of {b.name} printed other lines than the native "
                     f"build:\n" + "\n".join(before_b + lines(second)))
            if lines(second) != program_lines(second):
                fail(f"the restart of {b.name} printed lines of its launcher: {lines(second)}")
            again = restart("restart3", a)
            if ended("restart3") != 0:
                fail(f"the second restart of {a.name} exited {runs['restart3'][0].returncode}: "
                     f"{(tmp / 'restart3.err').read_text()[-2000:]}")
            if before_a + program_lines(again) != expected or lines(again) != program_lines(again):
                fail(f"the second restart of {a.name} printed other lines than the native build:\n"
                     + "\n".join(before_a + lines(again)))
            expects = os.environ.get("STASIS_SPLIT_LOG_EXPECTS")
            log = (c.ckpt / "coordinator.log").read_text() if expects or implementation else ""
            reports = re.findall(r"split MPI: checkpoint \d+ drained .*", log)
            if expects and (len(reports) < 2 * int(ranks) or any(not re.search(expects, line) for line in reports)):
                fail(f"every rank's report of each checkpoint must match {expects!r}: {reports}")
            if implementation:
                started = re.findall(r"restarted over a fresh lower half \((\w+)\)", log)
                if len(started) != 3 * int(ranks) or set(started) != {implementation}:
                    fail(f"the restarted ranks started lower halves of {started}, expected {3 * int(ranks)} of "
                         f"{implementation}")
        finally:
            stop([process for process, _ in runs.values()], c)
    print(f"split restart: {a.name} ({len(before_a)} lines before it; drained {drained_a}) restarted twice, "
          f"{b.name} taken from the first restart ({len(before_b)} lines before it; drained {drained_b}) and "
          f"restarted: each printed the native output ({len(expected)} lines)")


if __name__ == "__main__":
    main()
