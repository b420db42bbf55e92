#!/usr/bin/env python3
"""split_checkpoint.py STASIS MPI_RUN LAUNCHER RANKS NATIVE SPLIT STEPS DELAY_MS IN_FLIGHT LAUNCH

A split build's job under Stasis (the program starts its lower half itself) is checkpointed twice
while it runs: LAUNCH=job launches it as today's whole jobs (STASIS_MPI_LOWER_MODE=program,
mpirun inside the computation, its image beside the ranks'), LAUNCH=mpi with `stasis launch
--mpi` (mpirun outside: the checkpoint holds the ranks' images and nothing else). The job and must print what the native build prints uninterrupted.
Each rank's image must hold the upper half only: no thread but the program's and the checkpoint
thread (the lower half's progress threads are not in it), no mapping of the MPI library, its
components, the lower-half program or shared memory, one libc, and no socket or /dev/shm
descriptor (the lower half's). A checkpoint refused at the safe point (a rank inside a blocking
call) is asked for again, up to 10 times. Each checkpoint drains the messages in flight (the
ranks say how many on stderr): with IN_FLIGHT=1 (a program that sleeps with a message in
flight to every rank), some checkpoint must have drained at least one on every rank. Not yet: a
restart of such a checkpoint."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests"))
from e2e_common import Computation, fail, lines, wait_lines  # noqa: E402

LOWER_ONLY = re.compile(r"libmpi|libopen-(pal|rte)|/mca_|libpmix|libhwloc|libevent|libuc[pstm]|libfabric|"
                        r"stasis-mpi-lower-|^/dev/shm/|^/SYSV")


def check_rank_image(stasis_run, image, program):
    shown = stasis_run("inspect", "--json", str(image), timeout=60)
    if shown.returncode != 0:
        fail(f"`stasis inspect --json {image.name}` exited {shown.returncode}: {shown.stderr.strip()}")
    record = json.loads(shown.stdout)
    threads = record["threads"]
    others = [t for t in threads if not t["leader"] and not t["checkpoint_thread"]]
    if others:
        fail(f"{image.name}: threads other than the program's and the checkpoint thread: {others}")
    paths = [r["path"] for r in record["regions"]]
    lower = sorted({p for p in paths if LOWER_ONLY.search(p)})
    if lower:
        fail(f"{image.name}: the lower half's mappings are in the image: {lower}")
    libc = [r for r in record["regions"] if r["path"].endswith("/libc.so.6")]
    starts = [int(r["start"], 16) for r in libc]
    if not libc or max(starts) - min(starts) > 4 << 20:
        fail(f"{image.name}: not one libc in the image: {[(r['start'], r['path']) for r in libc]}")
    if not any(p == program for p in paths) or not any(p.endswith("/libstasis_mpi.so") for p in paths):
        fail(f"{image.name}: the upper half (the program, libstasis_mpi.so) is not in the image")
    sockets = [f for f in record["fds"] if "socket" in f["kind"] or f["path"].startswith("/dev/shm/")]
    if sockets:
        fail(f"{image.name}: the lower half's descriptors are in the image: {sockets}")
    return len(record["regions"]), record["memory_bytes"]


def checkpoint(computation):
    """The generation directory of a checkpoint and what the command printed; asked again when
    refused at the safe point."""
    for attempt in range(10):
        done = computation.run("checkpoint", timeout=120)
        if done.returncode == 0:
            return Path(done.stdout.strip().splitlines()[-1]), attempt, done.stdout + done.stderr
        if "stayed inside the MPI library" not in done.stderr:
            fail(f"`stasis checkpoint` exited {done.returncode}: {done.stderr.strip()}")
        time.sleep(0.3)
    fail("10 checkpoints in a row were refused at the safe point")


def main():
    stasis, mpi_run, launcher, ranks, native, split, steps, delay, in_flight, launch = sys.argv[1:11]
    job = [mpi_run, launcher, "-np", ranks, "--"]
    reference = subprocess.run([*job, native, steps, delay], capture_output=True, text=True, timeout=120)
    if reference.returncode != 0 or "done ranks" not in reference.stdout:
        fail(f"the native job failed ({reference.returncode}): {reference.stderr[-2000:]}")
    with tempfile.TemporaryDirectory(prefix="stasis-split-ckpt-") as tmp:
        c = Computation(stasis, tmp)
        launch_options = ["--mpi"] if launch == "mpi" else []
        if launch == "job":
            c.env["STASIS_MPI_LOWER_MODE"] = "program"
        out, err = Path(tmp) / "out", Path(tmp) / "err"
        try:
            with open(out, "w") as stdout, open(err, "w") as stderr:
                launched = c.popen(["launch", *launch_options, "--", *job, split, steps, delay], stdout, stderr)
            reports = ""  # the ranks' lines come back with the command's answer (and the coordinator's log)
            for wanted in (4, 12):
                wait_lines(out, wanted, timeout=90)
                generation, refused, said = checkpoint(c)
                reports += said
                images = sorted(generation.glob(Path(split).name[:15] + "-*.stasis"))
                if len(images) != int(ranks):
                    fail(f"{generation}: {len(images)} rank images, expected {ranks}")
                others = sorted(p.name for p in generation.glob("*.stasis") if p not in images)
                if launch == "mpi" and others:
                    fail(f"{generation}: images of processes other than the ranks under launch --mpi: {others}")
                for image in images:
                    regions, saved = check_rank_image(c.run, image, split)
                    print(f"{generation.name}/{image.name}: upper half only, {regions} regions, {saved} bytes of memory"
                          f" ({refused} refusals at the safe point first)")
            if launched.wait(timeout=180) != 0:
                fail(f"the job under Stasis exited {launched.returncode}: {err.read_text()[-2000:]}")
        finally:
            c.cleanup()
        drained = [int(n) for n in re.findall(r"split MPI: checkpoint \d+ drained (\d+) message", reports)]
        if len(drained) != 2 * int(ranks):
            fail(f"{len(drained)} ranks said what their drain took, expected {2 * int(ranks)}:\n{reports[-2000:]}")
        if in_flight == "1" and sum(drained) < int(ranks):
            fail(f"the drains took {drained} messages: fewer than one per rank, though each slept with one in flight")
        print(f"drained at the checkpoints, per rank: {drained}")
        if lines(out) != reference.stdout.splitlines():
            fail("the checkpointed job printed other lines than the native build:\n" + out.read_text()[-3000:])
    print(f"split checkpoints: upper half only; the job ran on and printed the native output ({steps} steps)")


if __name__ == "__main__":
    main()
