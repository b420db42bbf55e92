#!/usr/bin/env python3
"""Two hosts (network namespaces) in one computation.

Host 1 runs a shell (bash, which defines its own getenv) under `stasis launch --coord
10.201.0.1:PORT` that starts a worker (the counter target) on host 2 through an ssh stand-in
passing no environment. Checks:
  - the worker joins the coordinator (its remote command was rewritten by the runtime), its lines
    come back through the launcher's pipe;
  - `stasis checkpoint` completes and MANIFEST.json lists the worker at host 2's address and
    host 1's processes at host 1's;
  - `stasis restart --hosts` with a host the checkpoint does not have refuses, naming it;
  - a connection from host 2 with a wrong secret is refused, and the coordinator logs it.
Exits 77 (skipped) when not root or without `ip netns`.
usage: multihost_test.py --stasis STASIS --counter COUNTER [--nsrsh NSRSH]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from e2e_common import wait_for  # noqa: E402
from multihost.hosts import NSRSH, TwoHosts, fail, remove_unless_kept, skip_reason, test_directory, test_environment  # noqa: E402
NAMESPACES = ("stasis_ssh1", "stasis_ssh2")
ADDRESSES = ("10.201.0.1", "10.201.0.2")
PORT = 7781  # the namespaces are this test's own: nothing else listens there


HOSTS = TwoHosts(NAMESPACES, ADDRESSES, "stasis_sv")
in_ns = HOSTS.in_ns


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stasis", required=True)
    parser.add_argument("--counter", required=True)
    parser.add_argument("--nsrsh", default=NSRSH)
    args = parser.parse_args()
    if skip_reason(args.nsrsh):
        print(f"SKIP: {skip_reason(args.nsrsh)}")
        return 77

    tmp = test_directory("stasis-multihost-")
    coord = f"{ADDRESSES[0]}:{PORT}"
    env = test_environment(tmp, args.nsrsh, HOSTS)
    ckpt_dir = os.path.join(tmp, "ckpt")
    out_path = os.path.join(tmp, "out.txt")
    log_path = os.path.join(ckpt_dir, "coordinator.log")
    program = None
    try:
        HOSTS.up()
        with open(out_path, "w") as out:
            program = subprocess.Popen(
                in_ns(0, args.stasis, "launch", "--coord", coord, "--ckpt-dir", ckpt_dir, "--",
                      "/bin/bash", os.path.join(HERE, "host1_program.sh"),
                      os.path.join(HERE, "bin", "ssh"), ADDRESSES[1], args.counter, "400", "100"),
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        lines = lambda: open(out_path).read().count("host1 got: step")
        wait_for(lambda: lines() >= 5 or program.poll() is not None, "the worker's first lines", 60)
        if lines() < 5:
            fail("the worker's lines did not come back through the launcher", out_path, log_path)

        def status():
            r = subprocess.run(in_ns(0, args.stasis, "status", "--coord", coord, "--json"),
                               capture_output=True, text=True, env=env, timeout=60)
            return r.stdout
        wait_for(lambda: "counter" in status(), "the worker (counter) in `stasis status` (it did not join)", 30)

        ckpt = subprocess.run(in_ns(0, args.stasis, "checkpoint", "--coord", coord),
                              capture_output=True, text=True, env=env, timeout=120)
        if ckpt.returncode != 0:
            fail(f"checkpoint failed: {ckpt.stdout}{ckpt.stderr}", out_path, log_path)
        generation = ckpt.stdout.strip().splitlines()[-1]
        manifest = json.load(open(os.path.join(generation, "MANIFEST.json")))
        where = {(p["program"], p.get("address", "")) for p in manifest["processes"]}
        print("MANIFEST processes:", sorted(where))
        if ("counter", ADDRESSES[1]) not in where:
            fail(f"the worker on {ADDRESSES[1]} is not in the MANIFEST: {sorted(where)}")
        if not any(a == ADDRESSES[0] for _, a in where):
            fail(f"no process of host 1 ({ADDRESSES[0]}) in the MANIFEST: {sorted(where)}")
        count_at_checkpoint = lines()
        wait_for(lambda: lines() > count_at_checkpoint + 3, "the worker's lines after the checkpoint", 60)

        # (tcp_swap_test.py restarts such a checkpoint; here only a host map naming no host of it.)
        restart = subprocess.run(in_ns(0, args.stasis, "restart", "--hosts", f"10.9.9.9={ADDRESSES[0]}",
                                       generation), capture_output=True, text=True, env=env, timeout=60)
        if restart.returncode == 0 or "10.9.9.9 is not a host of this checkpoint" not in restart.stderr:
            fail(f"restart with a host map naming no host of the checkpoint did not refuse: rc "
                 f"{restart.returncode}, {restart.stderr}")
        print("restart refused:", restart.stderr.strip())

        wrong = dict(env, STASIS_SECRET="00" * 32)
        refused = subprocess.run(in_ns(1, args.stasis, "status", "--coord", coord), capture_output=True,
                                 text=True, env=wrong, timeout=60)
        if refused.returncode == 0:
            fail(f"a command with a wrong secret from host 2 was accepted: {refused.stdout}")
        joined = subprocess.run(in_ns(1, args.stasis, "launch", "--join", "--coord", coord, "--",
                                      "/bin/sleep", "3"), capture_output=True, text=True, env=wrong,
                                timeout=60)
        if "refused this process" not in joined.stderr:
            fail(f"a process with a wrong secret from host 2 was not refused: {joined.stderr}", log_path)
        wait_for(lambda: open(log_path).read().count(f"refused connection from {ADDRESSES[1]}:") >= 2,
                 "the coordinator's log lines of both refused connections from host 2", 20)
        print("wrong secret from host 2 refused:", refused.stderr.strip())
        print("PASS")
        return 0
    finally:
        if program is not None and program.poll() is None:
            subprocess.run(in_ns(0, args.stasis, "kill", "--coord", coord), capture_output=True,
                           env=env, timeout=60)
            try:
                program.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(program.pid, 9)
                program.wait()
        HOSTS.down()
        remove_unless_kept(tmp)


if __name__ == "__main__":
    sys.exit(main())
