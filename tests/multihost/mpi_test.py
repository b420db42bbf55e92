#!/usr/bin/env python3
"""An Open MPI job on two hosts (network namespaces): mpirun on host 1 starts its daemon on host 2
through an ssh stand-in (plm_rsh_agent), one rank on each host, over TCP. Checkpointed mid-run
with `stasis checkpoint --kill`, then `stasis restart --rsh SSH` on host 1 brings each process
back on its host (or, with --swap, each on the other host), the daemon again through the remote
launcher. Rank 0's output (a file, through mpirun) must equal an uninterrupted run's, and the
coordinator's log must show the restarted ranks joining from the hosts they were meant for.
Exits 77 (skipped) when not root or without `ip netns`.
With --again-same-hosts, the same generation is then restarted a second time, on its own hosts.
With --real-ssh, each host runs a real sshd (hosts.RealSsh) and mpirun's agent is OpenSSH's
client, found as "ssh" in PATH: under Stasis it becomes an ssh relay (src/plugins/ssh), and the
restart is given no --rsh (the daemon's part comes back through a new ssh session like mpirun's).
With --relay, the job runs under `launch --relay` (STASIS_RELAY=1, forwarded to the other host):
each host's first process starts that host's relay, and the coordinator's log must show a relay
joining from each host.
With --mpich, the job is MPICH's (MPIRUN is mpirun.mpich, Hydra with `-launcher ssh`, UCX over
TCP; MPI_RING is then mpi_shm built with MPICH, run without MPI_Finalize, in which MPICH over UCX's
TCP hangs one run in ten without Stasis too): its process manager's proxy runs on both hosts, the
one on host 2 started through ssh.
usage: mpi_test.py --stasis STASIS --mpirun MPIRUN --program MPI_RING [--nsrsh NSRSH] [--swap] [--again-same-hosts]
                   [--mode same_hosts|swap|swap_then_same_hosts] [--real-ssh] [--mpich] [--relay]
"""
import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from e2e_common import wait_for  # noqa: E402
from multihost.hosts import (NSRSH, RealSsh, TwoHosts, checkpoint_and_kill, fail, launch_on_host1,  # noqa: E402
                             real_ssh_unavailable, remove_unless_kept, skip_reason, test_run)

HOSTS = TwoHosts(("stasis_mpi1", "stasis_mpi2"), ("10.203.0.1", "10.203.0.2"), "stasis_mv")
PORT = 7781


def restart_once(args, env, coord, ssh, generation, swap, reference, out_path, log_path, steps_before):
    """Restarts `generation` (each process on the other host with `swap`), runs it to its end and
    checks its output and where its processes joined from."""
    h1, h2 = HOSTS.addresses
    hosts = ["--hosts", f"{h1}={h2},{h2}={h1}"] if swap else []
    log_before = len(open(log_path).read())
    # The output is a file: the restarted mpirun goes on writing it where it was.
    restart_started = time.time()
    rsh = [] if args.real_ssh else ["--rsh", ssh]
    restart = subprocess.run(HOSTS.in_ns(0, args.stasis, "restart", "--coord", coord, *hosts, *rsh, generation),
                             capture_output=True, text=True, env=env, timeout=240)
    if restart.returncode != 0:
        fail(f"the restart failed (status {restart.returncode}): {restart.stdout[-500:]}{restart.stderr[-1500:]}",
             out_path, log_path)
    # A part restarted through mpirun's launcher reports on mpirun's stderr, which is this file.
    got = [line for line in (open(out_path).read() + restart.stdout).splitlines()
           if not line.startswith("stasis restart: ")]
    if got != reference.stdout.splitlines():
        fail("the output differs from an uninterrupted run", out_path, log_path)
    log = open(log_path).read()[log_before:]
    joins = re.findall(r"process joined: pid \d+ \((\S+)\) on \S+ from ([\d.]+):\d+, restarted", log)
    ranks = sorted(address for program, address in joins if program == os.path.basename(args.program)[:15])
    # Hydra has a proxy on each host (mpiexec forks the local one); Open MPI a daemon on host 2 only.
    daemon_name = "hydra_pmi_proxy" if args.mpich else "orted"
    daemons = sorted(address for program, address in joins if program == daemon_name)
    want_daemons = [h1, h2] if args.mpich else [h1 if swap else h2]
    if ranks != [h1, h2] or daemons != want_daemons:
        fail(f"restarted ranks joined from {ranks} (want one per host), {daemon_name} from {daemons} "
             f"(want {want_daemons})", log_path)
    print(f"PASS: checkpointed after {steps_before} steps, {'swapped' if swap else 'same hosts'}: ranks restarted "
          f"on {ranks}, {daemon_name} on {daemons}; output identical to an uninterrupted run; restart took "
          f"{time.time() - restart_started:.1f} s; its stderr: {restart.stderr.strip()[-600:]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stasis", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--program", required=True)
    parser.add_argument("--nsrsh", default=NSRSH)
    parser.add_argument("--swap", action="store_true")
    parser.add_argument("--again-same-hosts", action="store_true",
                        help="then restart the same generation again, each process on its own host")
    parser.add_argument("--mode", choices=("same_hosts", "swap", "swap_then_same_hosts"),
                        help="the same as none, --swap, or --swap --again-same-hosts")
    parser.add_argument("--real-ssh", action="store_true", help="a real sshd on each host, OpenSSH as mpirun's agent")
    parser.add_argument("--mpich", action="store_true", help="MPICH's mpirun (Hydra) instead of Open MPI's")
    parser.add_argument("--relay", action="store_true", help="under launch --relay: a relay per host")
    args = parser.parse_args()
    args.swap = args.swap or args.mode in ("swap", "swap_then_same_hosts")
    args.again_same_hosts = args.again_same_hosts or args.mode == "swap_then_same_hosts"
    reason = skip_reason(args.nsrsh) or (real_ssh_unavailable() if args.real_ssh else None)
    if reason:
        print(f"SKIP: {reason}")
        return 77
    ssh = "ssh" if args.real_ssh else os.path.join(HERE, "bin", "ssh")
    HOSTS.own_pids = args.real_ssh  # the stand-in execs across hosts: one pid namespace for both
    h1, h2 = HOSTS.addresses
    tmp, env, coord, ckpt_dir, log_path = test_run(HOSTS, args.nsrsh, "stasis-mpi-hosts-", PORT)
    subnet = "10.203.0.0/24"
    mpi_run = os.path.join(os.path.dirname(HERE), "scripts", "mpi_run.sh")
    if args.mpich:
        job = [mpi_run, args.mpirun, "-launcher", "ssh", "-launcher-exec", ssh, "-hosts", f"{h1},{h2}",
               "-genv", "UCX_TLS", "tcp,self", "-np", "2", "--", args.program, "60", "100", "12", "0"]
    else:
        job = [mpi_run, args.mpirun, "--mca", "plm_rsh_agent", ssh, "--host", f"{h1},{h2}", "--mca", "btl", "tcp,self",
               "--mca", "oob_tcp_if_include", subnet, "--mca", "btl_tcp_if_include", subnet, "-np", "2", "--",
               args.program, "60", "100"]
    real_ssh = RealSsh(HOSTS, tmp) if args.real_ssh else None
    try:
        HOSTS.up()
        if real_ssh:
            real_ssh.start()
            real_ssh.check_nodes()
            env = real_ssh.environment(env)
            env.pop("STASIS_SSH_RELAY", None)
        reference = subprocess.run(HOSTS.in_ns(0, *job), capture_output=True, text=True, env=env, timeout=180)
        if reference.returncode != 0 or "done ranks 2" not in reference.stdout:
            fail(f"the reference run failed: {reference.stdout[-500:]}{reference.stderr[-500:]}")
        out_path = os.path.join(tmp, "out.txt")
        if args.relay:
            env = dict(env, STASIS_RELAY="1")
        launch = launch_on_host1(HOSTS, args.stasis, coord, ckpt_dir, job, out_path, env)
        wait_for(lambda: open(out_path).read().count("step ") >= 10 or launch.poll() is not None, "10 steps", 90)
        generation = checkpoint_and_kill(HOSTS, args.stasis, coord, env, launch, out_path, log_path)
        steps_before = open(out_path).read().count("step ")
        if args.relay:
            log = open(log_path, errors="replace").read()
            for host in (h1, h2):
                if f"relay joined from {host}:" not in log:
                    fail(f"no relay joined from host {host} under launch --relay", log_path)
        # Each host has its own /tmp and /dev/shm: a process restarted on the other host finds none
        # of its session files there, and each restarted mpirun removes its session directory when
        # it ends. With --again-same-hosts the same generation is restarted a second time, on the
        # hosts it ran on, after the swapped restart ran to its end.
        for swap in [args.swap] + ([False] if args.again_same_hosts else []):
            restart_once(args, env, coord, ssh, generation, swap, reference, out_path, log_path, steps_before)
        return 0
    finally:
        # HOSTS.down() ends every process of the test hosts; a pkill by name would end other
        # tests' ranks and daemons on this machine too.
        if real_ssh:
            real_ssh.stop()
        time.sleep(0.2)
        HOSTS.down()
        remove_unless_kept(tmp)


if __name__ == "__main__":
    sys.exit(main())
