#!/usr/bin/python3
"""Runtime overhead of Stasis on fork/exec-heavy workloads that checkpoint nothing.

Workloads (--workloads, comma-separated):
  true    a bash loop starting --processes short processes (`/bin/true`, each a fork + exec)
  make    `make -j2` of a small C project (--files tiny .c files compiled and linked: gcc starts
          cc1, as, collect2 and ld for each)
  python  a Python pool of 4 threads running `subprocess.run(["/bin/true"])` --processes times

Each runs plain, under `stasis launch` and under `stasis launch --relay`; with --baseline, also
under another installation's `stasis` (e.g. a build of main), so before and after are measured in
the same invocation. --inactive adds each installation's runtime preloaded with no computation
(LD_PRELOAD alone: the library's load and constructors, no join, no checkpoint thread). The runs are interleaved (machine noise hits every variant alike); the
medians of --runs runs are printed: wall time, the CPU time of the whole process tree (rusage of
the waited-for children: the coordinator, a daemon, is not in it), the ratios to plain, and the
cost per process started (counted in the plain runs by /proc/stat's fork counter, so other work
on the machine can add to it).

usage: bench/fork_exec_overhead.py [--stasis build/bin/stasis] [--baseline OTHER/bin/stasis]
                                   [--processes 1000] [--files 40] [--runs 5] [--workloads true]
                                   [--inactive] [--no-relay]
"""
import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def forks_so_far():
    with open("/proc/stat") as stat:
        for line in stat:
            if line.startswith("processes "):
                return int(line.split()[1])
    return 0


def timed(command, env, cwd):
    """Wall seconds, CPU seconds of the process tree, processes created on the machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    forks = forks_so_far()
    start = time.monotonic()
    subprocess.run(command, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - start
    forks = forks_so_far() - forks
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, forks


def make_project(directory, files):
    """A small C project: `files` translation units and a program linking them."""
    directory.mkdir()
    names = []
    for i in range(files):
        (directory / f"unit{i}.c").write_text(f"int unit{i}(int x) {{ return x * {i + 1} + 1; }}\n")
        names.append(f"unit{i}")
    calls = " + ".join(f"unit{i}(argc)" for i in range(files))
    declarations = "".join(f"int unit{i}(int);\n" for i in range(files))
    (directory / "main.c").write_text(f"{declarations}int main(int argc, char** argv) {{ return ({calls}) == 0; }}\n")
    objects = " ".join(f"{n}.o" for n in names + ["main"])
    (directory / "Makefile").write_text(
        f"program: {objects}\n\tcc -o $@ $^\n%.o: %.c\n\tcc -O0 -c -o $@ $<\n"
        "clean:\n\trm -f *.o program\n")


def workload_commands(name, args, tmp):
    """(command to time, command to run before each timing or None)."""
    if name == "true":
        return ["bash", "-c", f"for i in $(seq {args.processes}); do /bin/true; done"], None
    if name == "make":
        project = Path(tmp) / "project"
        if not project.exists():
            make_project(project, args.files)
        return ["make", "-s", "-j2", "-C", str(project)], ["make", "-s", "-C", str(project), "clean"]
    if name == "python":
        script = ("import subprocess\nfrom concurrent.futures import ThreadPoolExecutor\n"
                  "with ThreadPoolExecutor(4) as pool:\n"
                  f"    list(pool.map(lambda _: subprocess.run(['/bin/true'], check=True), range({args.processes})))\n")
        return ["python3", "-c", script], None
    raise SystemExit(f"unknown workload {name!r} (true, make, python)")


def private_coordinator(stasis, env, tmp):
    """`env` with STASIS_COORD naming a new coordinator of this run's own, on a free port (never
    the default 7781, which another computation on this machine may be using); it exits once the
    run's processes have gone."""
    port_file = Path(tmp) / "coordinator.port"
    port_file.unlink(missing_ok=True)
    subprocess.run([stasis, "coordinator", "--port", "0", "--port-file", str(port_file), "--daemon",
                    "--exit-when-idle"], env=env, cwd=tmp, check=True)
    return dict(env, STASIS_COORD=f"127.0.0.1:{port_file.read_text().strip()}")


def runtime_library(stasis):
    """The runtime beside an installation's `stasis` (bin/stasis, lib/stasis/: command.cc)."""
    library = Path(stasis).resolve().parent.parent / "lib/stasis/libstasis_runtime.so"
    if not library.exists():
        raise SystemExit(f"no runtime at {library}")
    return str(library)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stasis", default=str(ROOT / "build/bin/stasis"))
    parser.add_argument("--baseline", help="another installation's stasis, measured beside --stasis")
    parser.add_argument("--processes", type=int, default=1000)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workloads", default="true")
    parser.add_argument("--no-relay", action="store_true", help="skip the `launch --relay` variant")
    parser.add_argument("--inactive", action="store_true",
                        help="add the runtime preloaded with no computation (LD_PRELOAD alone)")
    args = parser.parse_args()
    variants = [("plain", None)]
    if args.inactive and args.baseline:
        variants.append(("baseline idle", ["env", f"LD_PRELOAD={runtime_library(args.baseline)}"]))
    if args.inactive:
        variants.append(("stasis idle", ["env", f"LD_PRELOAD={runtime_library(args.stasis)}"]))
    if args.baseline:
        variants.append(("baseline", [os.path.abspath(args.baseline), "launch", "--"]))
    variants.append(("stasis", [os.path.abspath(args.stasis), "launch", "--"]))
    if not args.no_relay:
        variants.append(("stasis --relay", [os.path.abspath(args.stasis), "launch", "--relay", "--"]))
    with tempfile.TemporaryDirectory(prefix="stasis-bench-") as tmp:
        env = dict(os.environ, STASIS_CKPT_DIR=os.path.join(tmp, "ckpt"), STASIS_RUNTIME_DIR=tmp)
        os.chmod(tmp, 0o700)
        for workload in args.workloads.split(","):
            command, reset = workload_commands(workload, args, tmp)
            results = {name: [] for name, _ in variants}
            for _ in range(args.runs):  # interleaved, so machine noise hits every variant alike
                for name, prefix in variants:
                    if reset:
                        subprocess.run(reset, env=env, cwd=tmp, check=True)
                    run_env = env
                    if prefix and prefix[1:2] == ["launch"]:
                        run_env = private_coordinator(prefix[0], env, tmp)
                    results[name].append(timed((prefix or []) + command, run_env, tmp))
            plain_wall = statistics.median(r[0] for r in results["plain"])
            plain_cpu = statistics.median(r[1] for r in results["plain"])
            processes = statistics.median(r[2] for r in results["plain"])
            print(f"{workload}: {processes:.0f} processes started (plain run), median of {args.runs} runs")
            print(f"  {'variant':15s} {'wall s':>8s} {'ratio':>6s} {'+us/proc':>9s} {'CPU s':>8s} {'ratio':>6s} {'+us/proc':>9s}")
            for name, _ in variants:
                wall = statistics.median(r[0] for r in results[name])
                cpu = statistics.median(r[1] for r in results[name])
                print(f"  {name:15s} {wall:8.3f} {wall / plain_wall:6.2f} {(wall - plain_wall) / processes * 1e6:9.0f}"
                      f" {cpu:8.3f} {cpu / plain_cpu:6.2f} {(cpu - plain_cpu) / processes * 1e6:9.0f}")


if __name__ == "__main__":
    main()
