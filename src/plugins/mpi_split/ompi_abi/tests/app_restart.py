#!/usr/bin/env python3
"""app_restart.py STASIS MPI_RUN LAUNCHER APP INPUT [RESTART_LAUNCHER IMPL]

A real application built against Open MPI, unmodified, as a split process through the Open MPI
front (README.md), checkpointed mid-run and restarted. APP is `hpcc` (Debian's hpcc; INPUT its
hpccinf.txt), `lammps` (Debian's lmp; INPUT an LJ melt, lammps_melt.in), `jacobi` (the mpi4py
Jacobi solver, INPUT tests/scripts/jacobi.py, under Debian's /usr/bin/python3 and python3-mpi4py,
built against Open MPI) or `nwchem` (Debian's nwchem, Fortran and C over both fronts, Global
Arrays over MPI one-sided communication; INPUT an SCF of water, nwchem_water.nw), on 2 ranks.

First the native reference: `LAUNCHER -np 2 APP` without Stasis, to its end. Then `stasis launch
--mpi -- LAUNCHER -np 2 APP`, checkpointed and killed once the application is under way (hpcc:
MPIRandomAccess has begun: its user operations and struct datatype live, updates in flight from
any source; LAMMPS: 4 thermo lines; jacobi: its first checksum, rank 0 held at its gate, rank 1's
halo in flight, mpi4py's attribute on MPI_COMM_WORLD holding the duplicate its reductions use;
the gate opened after the checkpoint; NWChem: 2 SCF iterations printed, its global arrays and
their windows live), and `RESTART_LAUNCHER -np 2 stasis
restart --mpi-rank GENERATION` (LAUNCHER when not given): fresh lower halves (of IMPL, every
restarted rank must say so) make every object again from the replay log (hpcc's user operations
and struct datatype, LAMMPS's Cartesian processor grid), and the
application runs to its end. Its verdict must be the native run's: hpcc's verification lines
(passed/PASSED/FAILED, error counts, residuals; timings left out), LAMMPS's thermo lines (12
digits) of launch and restart together, jacobi's checksum lines, NWChem's energies (the SCF
iterations' and the total, one-electron, two-electron and nuclear repulsion energies) to 1e-10
hartree (uninterrupted runs differ by 1e-12 now and then: the order of the ranks' sums). Skipped
(77) without the application."""
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[5] / "tests"))
from e2e_common import Computation, fail, wait_for  # noqa: E402

HPCC_VERDICT = re.compile(r"passed|PASSED|FAILED|failed|Node\(s\) with error|Solution Validates|errors in|_Errors|"
                          r"_ErrorsFraction|Failure")
THERMO = re.compile(r"^\s*\d+( -?[0-9.e+-]+){4}\s*$")
# NWChem's SCF iterations ("  3  -76.0103773807  4.09D-02 ...") and its energies' lines.
NWCHEM_ITERATION = re.compile(r"^\s+\d+\s+(-\d+\.\d+)\s+\S+D[+-]\d\d\s", re.M)
NWCHEM_ENERGY = re.compile(r"^\s*((?:Total SCF|One-electron|Two-electron|Nuclear repulsion) energy)\s*=\s*(\S+)", re.M)


def text(path):
    return path.read_text(errors="replace") if path.exists() else ""


def hpcc_verdict(work, outputs):
    """hpcc's verdicts: the lines that say passed or failed, without the timings on a PTRANS row (and
    without its CPU rows, which it prints or not by the CPU time measured)."""
    found = []
    for line in text(work / "hpccoutf.txt").splitlines():
        if HPCC_VERDICT.search(line) and not line.startswith("CPU "):
            row = re.match(r"^WALL .* (PASSED|FAILED) ", line)
            found.append(f"WALL {row.group(1)}" if row else line.strip())
    return found


def lammps_verdict(work, outputs):
    """LAMMPS's thermo lines, from the standard outputs of the runs in order."""
    return [line for output in outputs for line in text(output).splitlines() if THERMO.match(line)]


JACOBI_STEPS = 1000


def jacobi_verdict(work, outputs):
    """The solver's checksum lines, from the standard outputs of the runs in order."""
    return [line for output in outputs for line in text(output).splitlines() if line.startswith("iter ")]


def nwchem_verdict(work, outputs):
    """NWChem's energies: each SCF iteration's, then the final ones, from the outputs in order."""
    found = []
    for output in outputs:
        found += [f"iteration {value}" for value in NWCHEM_ITERATION.findall(text(output))]
        found += [f"{name} {value}" for name, value in NWCHEM_ENERGY.findall(text(output))]
    return found


def same_energies(expected, got):
    """Two verdicts of NWChem: the same lines, their numbers within 1e-10."""
    return len(expected) == len(got) and all(
        a.rsplit(" ", 1)[0] == b.rsplit(" ", 1)[0] and abs(float(a.rsplit(" ", 1)[1]) - float(b.rsplit(" ", 1)[1])) <= 1e-10
        for a, b in zip(expected, got))


APPS = {
    # command, input's name in the work folder, verdict, under way, ended[, gate: a file the program
    # waits for once under way, made before the native run and after the checkpoint]
    "hpcc": (["hpcc"], "hpccinf.txt", hpcc_verdict,
             lambda work, out: "Begin of MPIRandomAccess section." in text(work / "hpccoutf.txt"),
             lambda work, outs: "End of HPC Challenge tests" in text(work / "hpccoutf.txt")),
    "lammps": (["lmp", "-in", "in.melt", "-log", "none", "-nocite", "-echo", "none"], "in.melt", lammps_verdict,
               lambda work, out: len(lammps_verdict(work, [out])) >= 4,
               lambda work, outs: any("Total wall time" in text(out) for out in outs)),
    "jacobi": (["/usr/bin/python3", "jacobi.py", "2000", str(JACOBI_STEPS), "100", "gate"], "jacobi.py",
               jacobi_verdict, lambda work, out: len(jacobi_verdict(work, [out])) >= 1,
               lambda work, outs: any(f"iter {JACOBI_STEPS} " in text(out) for out in outs), "gate"),
    "nwchem": (["nwchem", "water.nw"], "water.nw", nwchem_verdict,
               lambda work, out: len(NWCHEM_ITERATION.findall(text(out))) >= 2,
               lambda work, outs: any("Total times" in text(out) for out in outs)),
}


def checkpoint_and_kill(c):
    """checkpoint --kill, asked again while refused at the safe point; the generation's folder."""
    for _ in range(10):
        done = c.run("checkpoint", "--kill", timeout=120)
        if done.returncode == 0:
            return Path(done.stdout.strip().splitlines()[-1])
        if "stayed inside the MPI library" not in done.stderr:
            fail(f"`stasis checkpoint --kill` exited {done.returncode}: {done.stderr.strip()}")
        time.sleep(0.3)
    fail("10 checkpoints in a row were refused at the safe point")


def main():
    stasis, mpi_run, launcher, app, app_input = sys.argv[1:6]
    restart_launcher, implementation = (sys.argv[6], sys.argv[7]) if len(sys.argv) > 7 else (launcher, "openmpi")
    command, input_name, verdict, under_way, ended, *gate = APPS[app]
    if not shutil.which(command[0]):
        print(f"SKIP: no {command[0]} (Debian: {dict(lammps='lammps', jacobi='python3').get(app, app)})")
        sys.exit(77)
    if app == "jacobi" and subprocess.run([command[0], "-c", "import mpi4py.MPI, numpy"]).returncode != 0:
        print(f"SKIP: {command[0]} cannot import mpi4py and numpy (Debian: python3-mpi4py python3-numpy)")
        sys.exit(77)
    job = [mpi_run, launcher, "-np", "2", "--"]
    with tempfile.TemporaryDirectory(prefix=f"stasis-{app}-restart-") as tmp:
        tmp = Path(tmp)
        native, split = tmp / "native", tmp / "split"
        for work in (native, split):
            work.mkdir()
            shutil.copy(app_input, work / input_name)
        if gate:
            (native / gate[0]).touch()
        reference = subprocess.run([*job, *command], cwd=native, capture_output=True, text=True, timeout=240)
        (native / "stdout").write_text(reference.stdout)
        expected = verdict(native, [native / "stdout"])
        if reference.returncode != 0 or not expected or not ended(native, [native / "stdout"]):
            fail(f"the native {app} failed ({reference.returncode}): {reference.stderr[-2000:]}")
        c = Computation(stasis, tmp)
        launched, restarted = tmp / "launch.out", tmp / "restart.out"
        processes = []
        try:
            with open(launched, "w") as out, open(tmp / "launch.err", "w") as err:
                processes.append(subprocess.Popen([stasis, "launch", "--mpi", "--", *job, *command], cwd=split,
                                                  env=c.env, stdout=out, stderr=err))
            wait_for(lambda: under_way(split, launched) or processes[0].poll() is not None, f"{app} under way", 120)
            if not under_way(split, launched):
                fail(f"the launched {app} ended ({processes[0].returncode}) before it was under way: "
                     f"{text(tmp / 'launch.err')[-2000:]}")
            generation = checkpoint_and_kill(c)
            processes[0].wait(timeout=60)
            if gate:
                (split / gate[0]).touch()
            before = verdict(split, [launched])
            if ended(split, [launched]):
                fail(f"{app} had ended before the checkpoint: nothing was restarted mid-run")
            with open(restarted, "w") as out, open(tmp / "restart.err", "w") as err:
                processes.append(subprocess.Popen([mpi_run, restart_launcher, "-np", "2", "--", stasis, "restart",
                                                   "--mpi-rank", str(generation)], cwd=split, env=c.env, stdout=out,
                                                  stderr=err))
            try:
                status = processes[1].wait(timeout=240)
            except subprocess.TimeoutExpired:
                fail(f"the restarted {app} did not end: {text(tmp / 'restart.err')[-2000:]}")
            got = verdict(split, [launched, restarted])
            if status != 0 or not ended(split, [launched, restarted]):
                begun = re.findall(r"^Begin of (\w+) section", text(split / "hpccoutf.txt"), re.M)
                fail(f"the restarted {app} (checkpointed after {len(before)} verdict lines"
                     f"{', in section ' + begun[-1] if begun else ''}) exited {status} before its end: "
                     f"{text(tmp / 'restart.err')[-2000:]}")
            if not (same_energies(expected, got) if app == "nwchem" else got == expected):
                fail(f"the restarted {app}'s verdict differs from the native run's:\n" +
                     "\n".join(f"native: {a}" for a in expected) + "\n" + "\n".join(f"split:  {b}" for b in got))
            fresh = re.findall(r"restarted over a fresh lower half \((\w+)\)", text(c.ckpt / "coordinator.log"))
            if fresh != [implementation] * 2:
                fail(f"expected 2 ranks restarted over a fresh {implementation} lower half, the log says {fresh}")
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
            c.cleanup()
    print(f"{app} checkpointed mid-run ({len(before)} of its {len(expected)} verdict lines before it), killed, "
          f"restarted over fresh {implementation} lower halves: the native run's {len(got)} verdict lines")


if __name__ == "__main__":
    main()
