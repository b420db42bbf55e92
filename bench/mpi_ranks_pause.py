#!/usr/bin/python3
"""Pause and checkpoint time of an Open MPI job on one host as the number of ranks grows.

For each rank count R: `stasis launch --compress none -- mpirun -np R --oversubscribe mpi_ring`
(tests/mpi/mpi_ring.c, built as build/tests/targets/mpi_ring_openmpi; shared memory, ranks
yielding when idle), joined to its own coordinator. Once mpirun, its daemon and the R ranks have
joined, --runs live checkpoints are taken one after another; each reports, from the
coordinator's log:

  pause     how long the computation was stopped (suspend until resume done everywhere)
  total     from the request to the checkpoint being durable
  write     the slowest process's own time writing its image
  barriers  seconds per barrier (suspend, children, drain, ..., resume, commit)

and the medians are printed, one row per R, with the image bytes of the last checkpoint. Which
barrier grows with R says what serialises a checkpoint of many processes.

usage: bench/mpi_ranks_pause.py [--stasis build/bin/stasis] [--program build/tests/targets/mpi_ring_openmpi]
                                [--ranks 2,8,32] [--runs 5] [--words 4096]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from coordination_time import checkpoint_timings, end_computation, raise_limits, status, wait_until  # noqa: E402


def shared_files_of_job(cwd: Path) -> set[str]:
    """The /dev/shm files the job's processes (those working in `cwd`) map: Open MPI's vader
    segments, which its ranks cannot remove when `stasis kill` ends them."""
    files = set()
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or os.readlink(proc / "cwd") != str(cwd):
                continue
            for line in (proc / "maps").read_text().splitlines():
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and fields[5].startswith("/dev/shm/") and fields[5].count("/") == 3:
                    files.add(fields[5])
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return files


def measure(args, ranks: int) -> tuple[list[dict], int]:
    tmp = Path(tempfile.mkdtemp(prefix="stasis-bench-mpi-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STASIS_")}
    env.update(STASIS_RUNTIME_DIR=str(tmp / "runtime"), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_mpi_yield_when_idle="1", OMP_NUM_THREADS="1")
    (tmp / "runtime").mkdir(mode=0o700)
    ckpt, log_path = tmp / "ckpt", tmp / "coordinator.log"
    launch = None
    try:
        subprocess.run([args.stasis, "coordinator", "--port", "0", "--port-file", tmp / "port", "--ckpt-dir", ckpt,
                        "--log", log_path, "--daemon", "--exit-when-idle"],
                       env=env, check=True, timeout=30, stdout=subprocess.DEVNULL)
        port = wait_until(lambda: (tmp / "port").exists() and (tmp / "port").read_text().strip(), 10, "the port file")
        env["STASIS_COORD"] = f"127.0.0.1:{port}"
        env["STASIS_CKPT_DIR"] = str(ckpt)
        # Far more steps than the measurement lasts; 20 ms between steps.
        launch = subprocess.Popen([args.stasis, "launch", "--compress", "none", "--", "mpirun.openmpi", "-np", str(ranks),
                                   "--oversubscribe", "--bind-to", "none", args.program, "1000000", "20",
                                   str(args.words)],
                                  env=env, cwd=tmp, stdout=(tmp / "out").open("wb"), stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        # mpirun, its orted or prted daemon where it has one, and the ranks.
        wait_until(lambda: len(status(args.stasis, env).get("processes", [])) >= ranks + 1, 300,
                   f"{ranks} ranks to join")
        # Past MPI_Init everywhere: rank 0 prints a step once the ring went round (its stdout is a
        # pipe, so the first lines come in a block). A checkpoint during MPI_Init can meet
        # wire-up sockets in passing states, which it refuses.
        wait_until(lambda: b"step " in (tmp / "out").read_bytes(), 300, "the ring's first steps")
        generation = None
        for _ in range(args.runs):
            r = subprocess.run([args.stasis, "checkpoint"], env=env, capture_output=True, timeout=600)
            if r.returncode != 0:
                raise RuntimeError(f"checkpoint of {ranks} ranks failed: {r.stderr.decode().strip()}")
            if generation:
                shutil.rmtree(generation, ignore_errors=True)  # keep the disk quiet
            generation = r.stdout.decode().strip()
        image_bytes = sum(p.stat().st_size for p in Path(generation).glob("*.stasis"))
        results = checkpoint_timings(log_path.read_text(errors="replace"))
        return results, image_bytes
    finally:
        segments = shared_files_of_job(tmp)
        end_computation(args.stasis, env, launch)
        shutil.rmtree(tmp, ignore_errors=True)
        for path in segments:  # 4 MiB each (mostly holes); runs would leave hundreds behind
            Path(path).unlink(missing_ok=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stasis", default=str(ROOT / "build/bin/stasis"))
    parser.add_argument("--program", default=str(ROOT / "build/tests/targets/mpi_ring_openmpi"))
    parser.add_argument("--ranks", default="2,8,32", help="comma-separated rank counts")
    parser.add_argument("--runs", type=int, default=5, help="checkpoints per rank count (median)")
    parser.add_argument("--words", type=int, default=4096, help="64-bit words each rank keeps and passes on")
    args = parser.parse_args()
    args.stasis, args.program = os.path.abspath(args.stasis), os.path.abspath(args.program)
    if not shutil.which("mpirun") or not os.path.exists(args.program):
        sys.exit(f"needs Open MPI's mpirun and {args.program} (built with the tests)")
    counts = [int(n) for n in args.ranks.split(",")]
    raise_limits(max(counts) + 8)
    print(f"Open MPI, one host, {os.cpu_count()} CPUs; median of {args.runs} live checkpoints, --compress none;"
          " seconds")
    print(f"{'ranks':>5} {'procs':>5} {'pause':>7} {'total':>7} {'write':>7} {'MB':>6}  per barrier")
    for n in counts:
        runs, image_bytes = measure(args, n)
        med = lambda key: statistics.median(r[key] for r in runs)
        names = list(runs[0]["barriers"])
        per_barrier = ", ".join(f"{name} {statistics.median(r['barriers'].get(name, 0) for r in runs):.3f}"
                                for name in names)
        print(f"{n:>5} {runs[0]['processes']:>5} {med('pause'):7.3f} {med('total'):7.3f} {med('write'):7.3f} "
              f"{image_bytes / 1e6:6.1f}  {per_barrier}", flush=True)


if __name__ == "__main__":
    main()
