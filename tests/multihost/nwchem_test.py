#!/usr/bin/env python3
"""NWChem (Debian's nwchem, built with Open MPI) across two test hosts over real OpenSSH: mpirun on
host 1 starts its daemon on host 2 through `ssh` (plm_rsh_agent, a real sshd in each host), one
rank on each host, TCP BTL and `--mca osc pt2pt` (without it NWChem's Global Arrays stop with
`ARMCI assert fail in gmr_create()` across hosts, Stasis or not), ranks working in the test's
shared directory (-wdir: NWChem's permanent files; its scratch files in each host's /tmp). The job (tests/multihost/
nwchem_water.nw) is checkpointed with `checkpoint --kill` during its SCF iterations, then the same
checkpoint is restarted twice, with no --rsh: on its hosts, then swapped (--hosts H1=H2,H2=H1). After
each, the total energies NWChem prints must be those of an uninterrupted run to 1e-10 hartree
(uninterrupted runs themselves differ in the last printed digit, 1e-12, now and then: the order of
the ranks' sums over TCP).
Exits 77 (skipped) without nwchem, Open MPI, OpenSSH, root or `ip netns`.
usage: nwchem_test.py --stasis STASIS --mpirun MPIRUN [--nwchem NWCHEM]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from e2e_common import wait_for  # noqa: E402
from multihost.hosts import (NSRSH, RealSsh, TwoHosts, checkpoint_and_kill, fail, launch_on_host1,  # noqa: E402
                             real_ssh_unavailable, remove_unless_kept, skip_reason, test_run)

HOSTS = TwoHosts(("stasis_nw1", "stasis_nw2"), ("10.208.0.1", "10.208.0.2"), "stasis_nv", own_pids=True)
PORT = 7781
ENERGY = re.compile(r"Total (?:DFT|SCF) energy\s*=\s*(\S+)")
ITERATION = re.compile(r"^ d= ", re.M)  # one line per SCF iteration


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stasis", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--nwchem", default=shutil.which("nwchem") or "")
    args = parser.parse_args()
    reason = None if args.nwchem and os.access(args.nwchem, os.X_OK) else "no nwchem (Debian: nwchem)"
    reason = reason or skip_reason(NSRSH) or real_ssh_unavailable()
    if reason:
        print(f"SKIP: {reason}")
        return 77
    h1, h2 = HOSTS.addresses
    tmp, env, coord, ckpt_dir, log_path = test_run(HOSTS, NSRSH, "stasis-nwchem-", PORT)
    subnet = "10.208.0.0/24"
    mpi_run = os.path.join(os.path.dirname(HERE), "scripts", "mpi_run.sh")
    job = [mpi_run, args.mpirun, "--mca", "plm_rsh_agent", "ssh", "--host", f"{h1},{h2}", "--mca", "btl", "tcp,self",
           "--mca", "oob_tcp_if_include", subnet, "--mca", "btl_tcp_if_include", subnet, "--mca", "osc", "pt2pt",
           "-wdir", tmp, "-np", "2", "--", args.nwchem, os.path.join(HERE, "nwchem_water.nw")]
    ssh = RealSsh(HOSTS, tmp)
    try:
        HOSTS.up()
        ssh.start()
        ssh.check_nodes()
        env = ssh.environment(env)
        env.pop("STASIS_SSH_RELAY", None)
        started = time.time()
        reference = subprocess.run(HOSTS.in_ns(0, *job), capture_output=True, text=True, env=env, timeout=180)
        energies = ENERGY.findall(reference.stdout)
        if reference.returncode != 0 or not energies:
            fail(f"the reference run failed: {reference.stdout[-1500:]}{reference.stderr[-500:]}")
        print(f"reference: energies {energies} in {time.time() - started:.1f} s, "
              f"{len(ITERATION.findall(reference.stdout))} SCF iterations")
        out_path = os.path.join(tmp, "out.txt")
        # The runtime database the first restart goes on writing is the checkpoint's again for the
        # second: its bytes are saved with the checkpoint (launch --save-files).
        # A loaded machine may let NWChem finish before the checkpoint lands: then once more.
        for attempt in (1, 2):
            launch = launch_on_host1(HOSTS, args.stasis, coord, ckpt_dir, job, out_path,
                                     dict(env, STASIS_SAVE_FILES=os.path.join(tmp, "water.*")))
            wait_for(lambda: len(ITERATION.findall(open(out_path).read())) >= 3 or launch.poll() is not None,
                     "NWChem's third SCF iteration", 120)
            generation = checkpoint_and_kill(HOSTS, args.stasis, coord, env, launch, out_path, log_path,
                                             ended_ok=True)
            text = open(out_path).read()
            if generation is not None and not ENERGY.search(text):
                break
            if attempt == 2:
                fail("the checkpoint came after the first energy was printed, twice", out_path)
            print("the checkpoint came after the first energy was printed; launching again")
        print(f"checkpointed after {len(ITERATION.findall(text))} SCF iterations")
        for swap in (False, True):
            host_map = ["--hosts", f"{h1}={h2},{h2}={h1}"] if swap else []
            log_before = len(open(log_path).read())
            restart_started = time.time()
            restart = subprocess.run(HOSTS.in_ns(0, args.stasis, "restart", "--coord", coord, *host_map, generation),
                                     capture_output=True, text=True, env=env, timeout=240)
            where = "swapped" if swap else "on its hosts"
            if restart.returncode != 0:
                fail(f"the restart {where} failed (status {restart.returncode}): {restart.stdout[-500:]}"
                     f"{restart.stderr[-1500:]}", out_path, log_path, *ssh.logs())
            got = ENERGY.findall(open(out_path).read() + restart.stdout)
            if len(got) != len(energies) or any(abs(float(a) - float(b)) > 1e-10 for a, b in zip(got, energies)):
                fail(f"restarted {where}, NWChem printed the energies {got}, an uninterrupted run {energies}",
                     out_path, log_path)
            joins = re.findall(r"process joined: pid \d+ \((\S+)\) on \S+ from ([\d.]+):\d+, restarted",
                               open(log_path).read()[log_before:])
            ranks = sorted(address for program, address in joins if program == "nwchem")
            daemons = [address for program, address in joins if program == "orted"]
            if ranks != [h1, h2] or daemons != [h1 if swap else h2]:
                fail(f"restarted {where}, the ranks joined from {ranks} (want one per host), orted from {daemons}",
                     log_path)
            print(f"restarted {where} in {time.time() - restart_started:.1f} s (to the job's end; orted on "
                  f"{daemons[0]}): energies {got}, the uninterrupted run's to 1e-10")
        print("PASS")
        return 0
    finally:
        ssh.stop()
        HOSTS.down()  # ends every process of the test hosts (never a pkill by name: other tests' too)
        remove_unless_kept(tmp)


if __name__ == "__main__":
    sys.exit(main())
