#!/usr/bin/python3
"""The split-mode MPI layer's cost (src/plugins/mpi_split/): virtual handles and the call into the
lower half, on an osu-style latency loop (8-byte ping-pong) and a bandwidth loop (1 MiB
messages, 16 in flight), two ranks on this host.

Builds bench/mpi_split_pingpong.c twice, with the library's own compiler wrapper (native) and
against abi/mpi.h linked with libstasis_mpi.so from --build, and runs three ways alternately
--runs times: native; split (the lower half loaded into the program); split-own (the program
started by the lower-half program stasis-mpi-lower-IMPL: two libcs, the FS base switched on
every call); and front: the native build, unchanged, through the Open MPI front (ompi_abi/:
Open MPI's handles translated to virtual ids, then the split-own path; --mpi openmpi only), all
alternately (so that load from elsewhere hits each alike). Prints the median and
the best of each and the split build's overhead against native, and the cost of one
MPI_Comm_rank call (no communication: the layer's own cost per call). No Stasis runtime, no checkpoint:
the layer alone.

With --thread-multiple, two more ways: native-mt and split-own-mt, the same programs initialised
with MPI_THREAD_MULTIPLE (one thread calling: the uncontended cost of the split layer's region
lock, against split-own).

usage: bench/mpi_split_overhead.py [--build build] [--mpi openmpi|mpich] [--runs 7]
                                   [--latency-iters 200000] [--bandwidth-iters 100] [--btl tcp]
                                   [--thread-multiple]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_job(launcher, options, program, args, extra_env=None):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
               **(extra_env or {}))
    out = subprocess.run([launcher, "-np", "2", *options, *program, *args], env=env, capture_output=True, text=True,
                         timeout=600, check=True).stdout
    latency = float(re.search(r"^latency_us (\S+)", out, re.M).group(1))
    bandwidth = float(re.search(r"^bandwidth_MBps (\S+)", out, re.M).group(1))
    call = float(re.search(r"^call_ns (\S+)", out, re.M).group(1))
    return latency, bandwidth, call


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--mpi", default="openmpi", choices=["openmpi", "mpich"])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--latency-iters", default="200000")
    parser.add_argument("--bandwidth-iters", default="100")
    parser.add_argument("--btl", help="Open MPI's --mca btl value (default: its own choice, shared memory)")
    parser.add_argument("--thread-multiple", action="store_true",
                        help="also native-mt and split-own-mt, initialised with MPI_THREAD_MULTIPLE")
    a = parser.parse_args()
    libdir = os.path.join(os.path.abspath(a.build), "lib", "stasis")
    if not os.path.exists(os.path.join(libdir, "libstasis_mpi.so")):
        sys.exit(f"no {libdir}/libstasis_mpi.so: build the project first")
    source = os.path.join(ROOT, "bench", "mpi_split_pingpong.c")
    with tempfile.TemporaryDirectory() as work:
        native = os.path.join(work, "native")
        split = os.path.join(work, "split")
        subprocess.run([f"mpicc.{a.mpi}", "-O2", "-o", native, source], check=True)
        subprocess.run(["cc", "-O2", "-I", os.path.join(ROOT, "src/plugins/mpi_split/abi"), "-o", split, source,
                        f"-L{libdir}", "-lstasis_mpi", f"-Wl,-rpath,{libdir}"], check=True)
        launcher = f"mpirun.{a.mpi}"
        options = ["--mca", "btl", f"{a.btl},self"] if a.btl and a.mpi == "openmpi" else []
        args = [a.latency_iters, a.bandwidth_iters]
        lower_program = os.path.join(libdir, f"stasis-mpi-lower-{a.mpi}")
        ways = [("native", [native], None), ("split", [split], None), ("split-own", [lower_program, split], None)]
        front = os.path.join(libdir, "ompi_abi")
        if a.mpi == "openmpi" and os.path.exists(os.path.join(front, "libmpi.so.40")):
            # What `stasis launch --mpi` sets for such a program (src/cli/cmd_launch.cc).
            ways.append(("front", [native], {"LD_LIBRARY_PATH": front, "STASIS_MPI_OMPI_ABI_DIR": front,
                                             "STASIS_MPI_LOWER_MODE": "program"}))
        if a.thread_multiple:
            ways += [("native-mt", [native], None), ("split-own-mt", [lower_program, split], None)]
        results = {name: [] for name, _, _ in ways}
        for _ in range(a.runs):
            for name, program, extra_env in ways:
                way_args = args + ["multiple"] if name.endswith("-mt") else args
                results[name].append(run_job(launcher, options, program, way_args, extra_env))
    print(f"{a.mpi} {'btl ' + a.btl if options else 'default transports'}, 2 ranks, {a.runs} runs each")
    summary = {}
    for name in results:
        latencies = [r[0] for r in results[name]]
        bandwidths = [r[1] for r in results[name]]
        calls = [r[2] for r in results[name]]
        summary[name] = (statistics.median(latencies), min(latencies), statistics.median(bandwidths), max(bandwidths),
                         min(calls))
        print(f"  {name:9s} latency median {summary[name][0]:.3f} us best {summary[name][1]:.3f} us;"
              f" bandwidth median {summary[name][2]:.0f} MB/s best {summary[name][3]:.0f} MB/s;"
              f" MPI_Comm_rank best {summary[name][4]:.2f} ns")
    n = summary["native"]
    for name in [name for name in summary if name != "native"]:
        s = summary[name]
        print(f"  {name} overhead: latency median {100 * (s[0] / n[0] - 1):+.1f}% best {100 * (s[1] / n[1] - 1):+.1f}%;"
              f" bandwidth median {100 * (1 - s[2] / n[2]):+.1f}% best {100 * (1 - s[3] / n[3]):+.1f}%;"
              f" per call {s[4] - n[4]:+.2f} ns")
    print(f"  load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus")


if __name__ == "__main__":
    main()
