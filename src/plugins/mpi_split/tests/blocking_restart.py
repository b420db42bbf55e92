#!/usr/bin/env python3
"""blocking_restart.py STASIS MPI_RUN LAUNCHER RANKS NATIVE SPLIT STEPS [storm CHECKPOINTS] [--restart-launcher L IMPL]

Checkpoints taken while ranks wait in blocking calls (README.md, Safe points inside blocking
calls). SPLIT and NATIVE are blocking_ranks: in each of its first two steps' four phases, the last
rank computes until this script opens a gate while the others wait in MPI_Recv, MPI_Wait,
MPI_Barrier, MPI_Allreduce, MPI_Comm_dup, MPI_Comm_split, MPI_Comm_create, MPI_Allgather and
MPI_Wait with five nonblocking collectives in flight, rank 0 in MPI_Probe with a persistent
receive started and a buffered message in flight to it (ten phases), and at the end in
MPI_Finalize (one phase more); every step also runs the other gathers, scatters, all-to-alls,
reduce-scatters and scans. The split build runs under `stasis launch --mpi`; at every phase of
the first step the job is checkpointed and runs on; at every phase of the second it is
checkpointed, checkpointed again with --kill, and restarted with `LAUNCHER -np RANKS stasis
restart --mpi-rank` (fresh lower halves), which the next phase checkpoints. No checkpoint may be
refused, and each rank must report the call it was found waiting in (the last rank: none).
Everything the runs printed, in order, must be the native build's uninterrupted output.

With `storm CHECKPOINTS` nothing is gated: the job runs collectives back to back (2 ms of computing
between them) and is checkpointed up to CHECKPOINTS times while it runs, every second one with
--kill and a restart; no checkpoint may be refused, at least two must be taken, the output must be
the native one, and the checkpoints that completed a collective some member had completed (the
drain's agreement) are counted.

With --restart-launcher L IMPL every restart runs under launcher L (another MPI's: checkpoint under
one library, restart under the other), and every restarted rank must say it started IMPL's lower
half."""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests"))
from e2e_common import Computation, fail, lines, wait_for  # noqa: E402

PHASE_CALLS = ["MPI_Recv", "MPI_Wait", "MPI_Barrier", "MPI_Allreduce", "MPI_Comm_dup", "MPI_Comm_split",
               "MPI_Comm_create", "MPI_Allgather", "MPI_Wait", "MPI_Probe"]
PHASES = len(PHASE_CALLS)
GATED_STEPS = 2
DRAINED_TO_0 = re.compile(r"drained (\d+) messages? in flight to this rank \(rank 0,")
REPORT = re.compile(r"drained \d+ messages? in flight to this rank \(rank (\d+), (?:waiting in (\w+)|not waiting in MPI)\)")


def program_lines(path):
    """The program's lines (not a launcher's banner about ranks a checkpoint killed)."""
    return [line for line in lines(path) if re.match(r"^(step \d+ |done ranks )", line)]


def phase_call(phase):
    """The call phase K's waiting ranks block in (after the gated steps: MPI_Finalize)."""
    return "MPI_Finalize" if phase == GATED_STEPS * PHASES else PHASE_CALLS[phase % PHASES]


def main():
    arguments = sys.argv[1:]
    restart_launcher = restart_implementation = None
    if "--restart-launcher" in arguments:
        at = arguments.index("--restart-launcher")
        restart_launcher, restart_implementation = arguments[at + 1:at + 3]
        del arguments[at:at + 3]
    stasis, mpi_run, launcher, ranks, native, split, steps = arguments[0:7]
    storm = int(arguments[8]) if len(arguments) > 8 and arguments[7] == "storm" else 0
    ranks_n = int(ranks)
    last = ranks_n - 1
    job = [mpi_run, launcher, "-np", ranks, "--"]
    restart_job = [mpi_run, restart_launcher or launcher, "-np", ranks, "--"]
    reference = subprocess.run([*job, native, steps, "0", "-"], capture_output=True, text=True, timeout=120)
    if reference.returncode != 0 or "done ranks" not in reference.stdout:
        fail(f"the native job failed ({reference.returncode}): {reference.stderr[-2000:]}")
    expected = reference.stdout.splitlines()
    with tempfile.TemporaryDirectory(prefix="stasis-split-blocking-") as tmp:
        tmp = Path(tmp)
        gate = tmp / "gate"
        gate.mkdir()
        c = Computation(stasis, tmp)
        runs = []  # (name, process, out)

        def start(name, command, through_stasis):
            out = tmp / f"{name}.out"
            with open(out, "w") as stdout, open(tmp / f"{name}.err", "w") as stderr:
                if through_stasis:
                    process = c.popen(command, stdout, stderr)
                else:
                    process = subprocess.Popen(command, env=c.env, stdout=stdout, stderr=stderr)
            runs.append((name, process, out))

        def ended(index):
            name, process, _ = runs[index]
            try:
                return process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                fail(f"{name} did not end: {(tmp / f'{name}.err').read_text()[-2000:]}")

        def checkpoint(phase, kill, job_may_end=False):
            """A checkpoint that must not be refused; returns its directory and each rank's report
            (None when the job ended first and job_may_end)."""
            done = c.run("checkpoint", *(["--kill"] if kill else []), timeout=120)
            if done.returncode != 0 and job_may_end and runs[-1][1].poll() is not None:
                return None, None
            if done.returncode != 0:
                fail(f"the checkpoint at phase {phase} ({phase_call(phase)}) exited {done.returncode}: "
                     f"{done.stderr.strip()[-2000:]}")
            reports = {int(r): call for r, call in REPORT.findall(done.stdout + done.stderr)}
            found_in.update(call for call in reports.values() if call)
            drained_to_0.append(sum(int(n) for n in DRAINED_TO_0.findall(done.stdout + done.stderr)))
            if sorted(reports) != list(range(ranks_n)):
                fail(f"phase {phase}: reports from ranks {sorted(reports)}:\n{done.stdout}{done.stderr}")
            seen_completed.append(len(re.findall(r"was completed first", done.stdout + done.stderr)))
            seen_made.append(len(re.findall(r"communicator was made at the safe point", done.stdout + done.stderr)))
            return Path(done.stdout.strip().splitlines()[-1]), reports

        def found_waiting(reports, waiting, call):
            return all(reports[r] == call for r in waiting) and reports[last] == ""

        seen, seen_completed, seen_made, found_in, drained_to_0 = [], [], [], set(), []
        try:
            start("launch", ["launch", "--mpi", "--", *job, split, steps, "0" if storm else str(GATED_STEPS),
                             str(gate)], True)
            for taken in range(storm):
                if taken == 0:
                    wait_for(lambda: lines(runs[-1][2]), "the job's first line", 90)
                generation, _ = checkpoint(taken, taken % 2 == 1, job_may_end=True)
                if generation is None:
                    break
                seen.append(generation.name)
                if taken % 2 == 1:
                    ended(len(runs) - 1)
                    start(f"restart{taken}", [*restart_job, stasis, "restart", "--mpi-rank", str(generation)], False)
                    # every rank is back once rank 0 prints again (each line follows a reduction)
                    wait_for(lambda: lines(runs[-1][2]), f"a line from {runs[-1][0]}", 90)
            if storm and len(seen) < 2:
                fail(f"the job ended after {len(seen)} checkpoints, fewer than 2")
            for phase in range(0 if storm else GATED_STEPS * PHASES + 1):
                call = phase_call(phase)
                waiting = [0] if call != "MPI_Finalize" and phase % PHASES in (0, 1, 9) else list(range(last))
                markers = [gate / f"at-{phase}"] + [gate / f"in-{phase}-{r}" for r in waiting]
                wait_for(lambda: all(m.exists() for m in markers), f"phase {phase}'s markers in {gate}", 90)
                # The ranks made their markers just before their calls: checkpoint until one finds
                # them inside (the gate keeps them there), at most 5 times.
                phase_first = len(drained_to_0)
                for _ in range(5):
                    generation, reports = checkpoint(phase, False)
                    if found_waiting(reports, waiting, call):
                        break
                else:
                    fail(f"phase {phase}: 5 checkpoints did not find ranks {waiting} waiting in {call}: {reports}")
                seen.append(f"{generation.name}: {call}")
                if call == "MPI_Probe" and not any(drained_to_0[phase_first:]):
                    # the last rank's MPI_Bsend is in flight to rank 0 during this phase: drained, it is
                    # what rank 0's MPI_Iprobe must find in the upper half after
                    fail(f"phase {phase}: no checkpoint drained the buffered message in flight to rank 0")
                if phase >= PHASES:
                    generation, reports = checkpoint(phase, True)
                    if not found_waiting(reports, waiting, call):
                        fail(f"phase {phase}: the --kill checkpoint found {reports}, not ranks {waiting} in {call}")
                    ended(len(runs) - 1)
                    start(f"restart{phase}", [*restart_job, stasis, "restart", "--mpi-rank", str(generation)], False)
                    seen.append(f"{generation.name} --kill, restarted: {call}")
                (gate / f"go-{phase}").touch()
            if ended(len(runs) - 1) != 0:
                name = runs[-1][0]
                fail(f"{name} exited {runs[-1][1].returncode}: {(tmp / f'{name}.err').read_text()[-2000:]}")
            printed = [line for _, _, out in runs for line in program_lines(out)]
            if printed != expected:
                fail("the launch and its restarts printed other lines than the native build:\n" + "\n".join(printed))
            if restart_implementation:
                log = (c.ckpt / "coordinator.log").read_text()
                started = re.findall(r"restarted over a fresh lower half \((\w+)\)", log)
                if len(started) != (len(runs) - 1) * ranks_n or set(started) != {restart_implementation}:
                    fail(f"the restarted ranks started lower halves of {started}, expected "
                         f"{(len(runs) - 1) * ranks_n} of {restart_implementation}")
        finally:
            for _, process, _ in runs:
                if process.poll() is None:
                    process.kill()
            c.cleanup()
    if storm:
        print(f"{len(seen)} checkpoints in a storm of collectives; {sum(seen_completed)} rank reports of a collective "
              f"completed at the checkpoint because a member had; {sum(seen_made)} of a communicator made at the safe "
              f"point; ranks found in: {', '.join(sorted(found_in)) or 'none'}")
    else:
        print("checkpoints with ranks waiting: " + "; ".join(seen))
    print(f"the launch and {len(runs) - 1} restarts printed the native output ({len(expected)} lines)")


if __name__ == "__main__":
    main()
