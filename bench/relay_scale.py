#!/usr/bin/python3
"""Coordination of tens of thousands of processes through host relays, with stand-ins.

For each configuration PROCESSES/RELAYS: a coordinator (--daemon, log to a file), RELAYS
`stasis relay` processes each standing for a host (their own abstract socket names), and
bench/relay_standins.cc (built here) holding PROCESSES stand-in processes, PROCESSES/RELAYS per
relay: each joins its relay with the HMAC handshake and answers every barrier at once (a small
image file at "checkpoint"). RELAYS = 0: every stand-in joins the coordinator over TCP, as before
relays. Then --runs checkpoints; from the coordinator's "checkpoint G timing" line, medians of:

  total       from the request to the checkpoint being durable
  rounds      the four barriers that only coordinate (suspend, children, drain, resume)
  checkpoint  the "checkpoint" barrier (every stand-in writes its image file)
  commit      "commit": the coordinator checks every image, writes MANIFEST.json and `latest`
  coord cpu   the coordinator's own CPU time (user + system) over the checkpoint
  relay cpu   the relays' CPU time over the checkpoint, per relay (what one host's relay costs)
  messages    at the coordinator's sockets (a relay's batch counts once), and as the processes
              see them (13 per process: six barriers each way and a CHILDREN list)

usage: bench/relay_scale.py [--stasis build/bin/stasis] [--configs 1024/0,1024/16,8192/16,...]
                            [--runs 3] [--hold 0.02] [--dir /dev/shm] [--baseline OTHER/stasis]
                            [--perf PREFIX]
--baseline: each configuration is measured with that binary too, just before this one ("before"
and "after" rows), so a change is compared under the same load.
The stand-ins and relays share this machine's cores with the coordinator: every figure includes
their work, which on real hosts runs in parallel.
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMING_RE = re.compile(r"checkpoint (\d+) timing: (\d+) process(?:es)?, (\d+) messages; barriers \(s\): (.*); "
                       r"slowest image write ([0-9.]+) s; coordination ([0-9.]+) s; (\d+) messages at the "
                       r"coordinator's sockets")
COMPLETE_RE = re.compile(r"checkpoint (\d+) complete in ([0-9.]+) s")
MAX_PER_STANDIN_PROGRAM = 16000  # descriptors: the hard limit is often 20,000 a process


def build_standins(tmp: Path) -> Path:
    out = tmp / "relay_standins"
    subprocess.run(["g++", "-O2", "-std=gnu++20", f"-I{ROOT / 'src'}", str(ROOT / "bench/relay_standins.cc"),
                    str(ROOT / "build/src/common/libstasis_common.a"), "-o", str(out)], check=True)
    return out


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def relay_listening(name: str) -> bool:
    return f"@{name}" in Path("/proc/net/unix").read_text()


def measure(args, stasis: str, standins: Path, processes: int, relays: int, label: str = "") -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="stasis-bench-relay-", dir=args.dir))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STASIS_")}
    env["STASIS_RUNTIME_DIR"] = str(tmp / "runtime")
    (tmp / "runtime").mkdir(mode=0o700)
    ckpt, log_path = tmp / "ckpt", tmp / "coordinator.log"
    children = []
    try:
        subprocess.run([stasis, "coordinator", "--port", "0", "--port-file", tmp / "port", "--ckpt-dir", ckpt,
                        "--log", log_path, "--daemon", "--exit-when-idle"], env=env, check=True, timeout=30, stdout=subprocess.DEVNULL)
        port = (tmp / "port").read_text().strip()
        env["STASIS_COORD"] = f"127.0.0.1:{port}"
        secret = (tmp / "runtime" / f"coordinator-127.0.0.1-{port}.secret").read_text().strip()
        prefix = f"stasis-bench-{os.getpid()}-{port}"
        for r in range(relays):
            children.append(subprocess.Popen([stasis, "relay", "--socket", f"{prefix}-{r}", "--hold",
                                              str(args.hold), "--log", tmp / f"relay-{r}.log"],
                                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 30
        while relays and not all(relay_listening(f"{prefix}-{r}") for r in range(relays)):
            if time.monotonic() > deadline:
                raise RuntimeError("the relays did not start listening")
            time.sleep(0.05)
        # Stand-in programs: whole relays each, under the descriptor limit.
        groups = max(1, relays)
        per_group = processes // groups
        groups_per_program = max(1, min(groups, MAX_PER_STANDIN_PROGRAM // per_group))
        programs = []
        for first in range(0, groups, groups_per_program):
            count = min(groups_per_program, groups - first)
            programs.append(subprocess.Popen([standins, port, secret, prefix, str(first), str(count if relays else 0),
                                              str(per_group if relays else processes)],
                                             env=env, stdout=subprocess.PIPE, text=True))
        children.extend(programs)
        started = time.monotonic()
        for program in programs:
            line = program.stdout.readline()
            if not line.startswith("ready"):
                raise RuntimeError(f"stand-ins failed: {line!r}")
        # A stand-in is "ready" once its relay took it; the relay's batch of joins may still be on
        # its way to the coordinator (a loaded machine): wait for the coordinator to count them all.
        deadline = time.monotonic() + 120
        while True:
            status = subprocess.run([stasis, "status", "--json"], env=env, capture_output=True, timeout=120)
            if status.returncode != 0:
                raise RuntimeError(f"stasis status failed: {status.stderr.decode().strip()}")
            status = json.loads(status.stdout)
            if status["process_count"] == processes:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{status['process_count']} processes joined, not {processes}")
            time.sleep(0.2)
        joined = time.monotonic() - started
        coordinator_pid = status["coordinator"]["pid"]
        relay_pids = [child.pid for child in children[:relays]]
        cpu = []
        perf = None
        if args.perf:  # the coordinator's profile over the checkpoints, joining left out
            perf = subprocess.Popen(["perf", "record", "-g", "-o", f"{args.perf}.{processes}-{relays}{label and '.' + label}.data", "-p",
                                     str(coordinator_pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
        for _ in range(args.runs):
            before = cpu_seconds(coordinator_pid), sum(cpu_seconds(p) for p in relay_pids)
            r = subprocess.run([stasis, "checkpoint", "--compress", "none"], env=env, capture_output=True,
                               timeout=600)
            if r.returncode != 0:
                raise RuntimeError(f"checkpoint failed: {r.stderr.decode().strip()}\n"
                                   + log_path.read_text(errors="replace")[-3000:])
            after = cpu_seconds(coordinator_pid), sum(cpu_seconds(p) for p in relay_pids)
            cpu.append((after[0] - before[0], (after[1] - before[1]) / max(1, relays)))
            shutil.rmtree(r.stdout.decode().strip(), ignore_errors=True)
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait(120)
        text = log_path.read_text(errors="replace")
        totals = {int(g): float(t) for g, t in COMPLETE_RE.findall(text)}
        results = []
        for (g, n, messages, barriers, _write, coordination, wire), (coord_cpu, relay_cpu) in zip(
                TIMING_RE.findall(text), cpu):
            per = {name: float(s) for name, s in (item.rsplit(" ", 1) for item in barriers.split(", "))}
            results.append({"processes": int(n), "total": totals[int(g)], "joined": joined,
                            "rounds": sum(per.get(b, 0) for b in ("suspend", "children", "drain", "resume")),
                            "checkpoint": per.get("checkpoint", 0), "commit": per.get("commit", 0),
                            "coordination": float(coordination), "messages": int(messages), "wire": int(wire),
                            "coord_cpu": coord_cpu, "relay_cpu": relay_cpu})
        if len(results) != args.runs:
            raise RuntimeError(f"expected {args.runs} timing lines in {log_path}, found {len(results)}")
        return results
    finally:
        subprocess.run([stasis, "kill"], env=env, capture_output=True, timeout=120)
        for child in children:
            try:
                child.wait(30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stasis", default=str(ROOT / "build/bin/stasis"))
    parser.add_argument("--baseline", help="another stasis binary, measured before --stasis for each configuration")
    parser.add_argument("--configs", default="1024/0,1024/16,8192/0,8192/16,8192/128,32768/16,32768/128,32768/512",
                        help="PROCESSES/RELAYS, comma-separated (RELAYS 0: no relay)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hold", type=float, default=0.02, help="the relays' --hold")
    parser.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                        help="where the checkpoints go (default /dev/shm: the stand-ins' image files are "
                             "not what is measured)")
    parser.add_argument("--perf", help="profile the coordinator over the checkpoints with `perf record -g` into "
                                       "PERF.PROCESSES-RELAYS[.before|.after].data")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    tmp = Path(tempfile.mkdtemp(prefix="stasis-bench-relay-build-"))
    standins = build_standins(tmp)
    binaries = [("before", args.baseline), ("after", args.stasis)] if args.baseline else [("", args.stasis)]
    print(f"{'processes':>9} {'relays':>6} {'binary':>6} {'joined s':>8} {'total s':>8} {'rounds s':>8} {'ckpt s':>7} "
          f"{'commit s':>8} {'coord cpu':>9} {'relay cpu':>9} {'msgs@coord':>10} {'msgs@procs':>10}")
    for config in args.configs.split(","):
        processes, relays = (int(x) for x in config.split("/"))
        for label, stasis in binaries:
            try:
                results = measure(args, stasis, standins, processes, relays, label)
            except RuntimeError as e:
                print(f"{processes:>9} {relays:>6} {label:>6}  failed: {e}")
                continue
            med = {k: statistics.median(r[k] for r in results) for k in results[0]}
            print(f"{processes:>9} {relays:>6} {label:>6} {med['joined']:>8.2f} {med['total']:>8.3f} {med['rounds']:>8.3f} "
                  f"{med['checkpoint']:>7.3f} {med['commit']:>8.3f} {med['coord_cpu']:>9.3f} {med['relay_cpu']:>9.4f} "
                  f"{int(med['wire']):>10} {int(med['messages']):>10}", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
