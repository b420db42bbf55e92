#!/usr/bin/env python3
"""transport_switch.py STASIS MPI_RUN LAUNCHER RANKS NATIVE SPLIT STEPS DELAY_MS SOFTIB_LIBDIR [FROM TO]

A split job checkpointed over one network and restarted over another (README.md, Another network
at restart; issue 17: "checkpointed over softib (verbs), restarted over TCP"). SPLIT
(ring_in_flight: a message in flight to every rank at the checkpoint) is launched with
`stasis launch --mpi -- LAUNCHER -np RANKS` and Open MPI's BTL FROM (default openib: verbs, over
softib, the software InfiniBand adapter in SOFTIB_LIBDIR), checkpointed and killed mid-run, and
restarted by `LAUNCHER -np RANKS` with the BTL TO (default tcp) alone: each restarted rank's
fresh lower half runs MPI_Init over TO. Both runs together must print the native build's
uninterrupted output.

Which transport carried each run is read from what its ranks printed, never assumed: Open MPI's
BML names the BTL it picked for every peer (`btl_base_verbose 1`: "Using openib btl for send to
..."), every rank must name TO's (or FROM's) for each of its RANKS - 1 peers and no other; and
softib's trace (SOFTIB_TRACE=1, set for both runs: the restored ranks keep the launch's
environment) must show the verbs run's connections through softib and no verbs object at all
after the restart."""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests"))
from e2e_common import Computation, fail, lines, wait_for  # noqa: E402
from split_restart import checkpoint_and_kill, native_output, program_lines, stop  # noqa: E402

# Open MPI's options for a job over one BTL (and `self`, a rank to itself), ob1 its only PML (UCX's
# would pick its own transports). openib refuses InfiniBand ports unless allowed (UCX is Open MPI
# 4's choice there), and warns of a device missing from its parameter table (softib is).
BTL_OPTIONS = {
    "openib": ["--mca", "btl_openib_allow_ib", "1", "--mca", "btl_openib_warn_no_device_params_found", "0"],
    "tcp": [],
}


def job_options(btl):
    return ["--mca", "pml", "ob1", "--mca", "btl", f"{btl},self", "--mca", "btl_base_verbose", "1",
            *BTL_OPTIONS[btl]]


def check_transport(name, stderr, btl, ranks):
    """Every rank of run `name` sent to each of its peers over `btl`, and over no other network;
    softib carried the verbs run and was never opened otherwise."""
    chosen = re.findall(r"mca: bml: Using (\w+) btl for send to \S+ on node", stderr)
    peers = [used for used in chosen if used != "self"]
    if len(peers) != ranks * (ranks - 1) or set(peers) != {btl}:
        fail(f"{name}: the ranks sent to their peers over {peers or 'nothing Open MPI named'}, expected "
             f"{ranks * (ranks - 1)} times {btl}:\n{stderr[-3000:]}")
    connections = re.findall(r"softib\[\d+\]: connected to \S+ over (\w+)", stderr)
    published = re.findall(r"softib\[\d+\]: publish ", stderr)
    if btl == "openib" and (not connections or not published):
        fail(f"{name}: softib's trace shows no queue pair ({len(published)}) or connection ({connections}): "
             f"the verbs traffic did not go through softib:\n{stderr[-3000:]}")
    if btl != "openib" and (connections or published):
        fail(f"{name}: softib made {len(published)} queue pairs and connections {connections} in a run over "
             f"{btl}:\n{stderr[-3000:]}")
    return len(connections)


def main():
    stasis, mpi_run, launcher, ranks, native, split, steps, delay, softib = sys.argv[1:10]
    before, after = (sys.argv[10], sys.argv[11]) if len(sys.argv) > 11 else ("openib", "tcp")
    ompi_info = Path(launcher).parent / "ompi_info"  # beside Open MPI's mpirun
    info = subprocess.run([ompi_info], capture_output=True, text=True, timeout=60).stdout if ompi_info.exists() else ""
    for btl in (before, after):
        if not re.search(rf"MCA btl: {btl} ", info):
            print(f"SKIP: this Open MPI has no {btl} BTL (ompi_info names no 'MCA btl: {btl}')")
            sys.exit(77)
    expected = native_output([mpi_run, launcher, "-np", ranks, "--"], native, steps)
    with tempfile.TemporaryDirectory(prefix="stasis-split-transport-") as tmp:
        tmp = Path(tmp)
        c = Computation(stasis, tmp)
        # softib's fabric (its subnet manager's files) of this test alone: the killed ranks leave
        # their queue pairs' entries in it.
        c.env.update(SOFTIB_FABRIC_DIR=str(tmp / "fabric"), SOFTIB_TRACE="1",
                     LD_LIBRARY_PATH=":".join(filter(None, [softib, c.env.get("LD_LIBRARY_PATH")])))
        runs = []
        try:
            out, err = tmp / "launch.out", tmp / "launch.err"
            with open(out, "w") as stdout, open(err, "w") as stderr:
                runs.append(c.popen(["launch", "--mpi", "--", mpi_run, launcher, "-np", ranks, *job_options(before),
                                     "--", split, steps, delay], stdout, stderr))
            wait_for(lambda: len(lines(out)) >= 4 or runs[0].poll() is not None, f"4 lines in {out}", 90)
            if runs[0].poll() is not None:
                fail(f"the launch over {before} ended ({runs[0].returncode}) before its checkpoint:\n"
                     f"{err.read_text()[-3000:]}")
            generation, drained = checkpoint_and_kill(c, out, 4)
            runs[0].wait(timeout=120)
            connections = check_transport(f"the launch over {before}", err.read_text(), before, int(ranks))
            printed = program_lines(out)
            restart_out, restart_err = tmp / "restart.out", tmp / "restart.err"
            with open(restart_out, "w") as stdout, open(restart_err, "w") as stderr:
                runs.append(subprocess.Popen([mpi_run, launcher, "-np", ranks, *job_options(after), "--", stasis,
                                              "restart", "--mpi-rank", str(generation)],
                                             env=c.env, stdout=stdout, stderr=stderr))
            try:
                runs[1].wait(timeout=120)
            except subprocess.TimeoutExpired:
                fail(f"the restart over {after} did not end: {restart_err.read_text()[-2000:]}")
            if runs[1].returncode != 0:
                fail(f"the restart over {after} exited {runs[1].returncode}: {restart_err.read_text()[-3000:]}")
            check_transport(f"the restart over {after}", restart_err.read_text(), after, int(ranks))
            if printed + program_lines(restart_out) != expected:
                fail(f"the launch over {before} and its restart over {after} printed other lines than the native "
                     f"build:\n" + "\n".join(printed + lines(restart_out)))
            log = (c.ckpt / "coordinator.log").read_text()
            fresh = re.findall(r"restarted over a fresh lower half \((\w+)\)", log)
            if len(fresh) != int(ranks):
                fail(f"{len(fresh)} ranks said they restarted over a fresh lower half, expected {ranks}")
        finally:
            stop(runs, c)
    print(f"transport switch: checkpointed over {before} ({connections} softib connections; {len(printed)} lines "
          f"before it, drained {drained}), {generation.name} restarted over {after}: the native output "
          f"({len(expected)} lines)")


if __name__ == "__main__":
    main()
