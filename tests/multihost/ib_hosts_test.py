#!/usr/bin/env python3
"""A verbs pingpong between two hosts (network namespaces) over softib, checkpointed while the two
sides exchange messages, killed, and restarted on their hosts or with the hosts swapped.

Host 1 runs, under `stasis launch --ib=soft`, Debian's unmodified pingpong tool's server
(tests/softib/pingpong_pair.sh) and, through the ssh stand-in, its client on host 2 against
host 1's address; the launch's --ib reaches the joined client through STASIS_IB. `stasis
checkpoint --kill` mid-run (the images must hold both tools), then `stasis restart [--hosts
H1=H2,H2=H1] --rsh SSH` on host 1: each side must come back where asked (checked through its
network namespace), its queue pairs made again with the peer's new numbers and LIDs (softib gives
each namespace host its own LID, so a swap changes every one) exchanged through the coordinator's
name service, and both must finish with exit status 0 and all their iterations, as in an
uninterrupted run. Exits 77 (skipped) without root, `ip netns` or the tool.
usage: ib_hosts_test.py --stasis STASIS --softib-lib DIR [--nsrsh NSRSH] --tool TOOL [--same-hosts]
       [-- TOOL OPTIONS]
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from e2e_common import wait_for  # noqa: E402
from multihost.hosts import NSRSH, TwoHosts, checkpoint_and_kill, fail, remove_unless_kept, skip_reason, test_run  # noqa: E402

HOSTS = TwoHosts(("stasis_ib1", "stasis_ib2"), ("10.203.0.1", "10.203.0.2"), "stasis_iv")
PORT = 7781
PAIR = os.path.join(os.path.dirname(HERE), "softib", "pingpong_pair.sh")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stasis", required=True)
    parser.add_argument("--softib-lib", required=True)
    parser.add_argument("--nsrsh", default=NSRSH)
    parser.add_argument("--tool", required=True)
    parser.add_argument("--iters", default="100000")
    parser.add_argument("--same-hosts", action="store_true", help="restart each side on its own host")
    parser.add_argument("tool_options", nargs="*")
    args = parser.parse_args()
    reason = skip_reason(args.nsrsh) or (None if shutil.which(args.tool) else f"{args.tool} is not installed")
    if reason:
        print(f"SKIP: {reason}")
        return 77
    ssh = os.path.join(HERE, "bin", "ssh")
    h1, h2 = HOSTS.addresses
    tmp, env, coord, ckpt_dir, log_path = test_run(HOSTS, args.nsrsh, "stasis-ib-hosts-", PORT)
    env["IB_PINGPONG_REMOTE"] = f"{ssh} {h1} {h2}"

    iters = int(args.iters)

    def program(work):
        return [PAIR, args.tool, args.softib_lib, work, str(iters), *args.tool_options]

    try:
        HOSTS.up()
        # The run must last long enough to be checkpointed mid-way and to be seen running on its
        # new hosts afterwards; how fast softib goes between the namespaces varies tenfold with the
        # machine's load, so the iterations are scaled until an uninterrupted run takes 3 s, and
        # scaled again when the checkpointed run still ended before its checkpoint.
        def reference_run():
            started = time.time()
            reference = subprocess.run(HOSTS.in_ns(0, *program(os.path.join(tmp, "reference"))), capture_output=True,
                                       text=True, env=env, timeout=600)
            if reference.returncode != 0 or "client: exit 0" not in reference.stdout:
                fail(f"the reference run failed: {reference.stdout[-800:]}{reference.stderr[-800:]}")
            return reference, time.time() - started

        reference, took = reference_run()
        while took < 3 and iters < 4000000:
            iters = min(4000000, int(iters * max(2.0, 4 / took)))
            reference, took = reference_run()
        for attempt in range(3):
            work = os.path.join(tmp, f"run{attempt}")
            first_out = os.path.join(tmp, f"first{attempt}.txt")
            attempt_dir = f"{ckpt_dir}{attempt}"
            log_path = os.path.join(attempt_dir, "coordinator.log")
            with open(first_out, "w") as out:
                launch = subprocess.Popen(HOSTS.in_ns(0, args.stasis, "launch", "--ib=soft", "--coord", coord,
                                                      "--ckpt-dir", attempt_dir, "--", *program(work)),
                                          stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            wait_for(lambda: "pingpong running" in open(first_out).read() or launch.poll() is not None,
                     "the pingpong's start", 120)
            time.sleep(min(1.0, took / 4))  # well into the exchange of messages, far from its end
            generation = checkpoint_and_kill(HOSTS, args.stasis, coord, env, launch, first_out, log_path, timeout=180,
                                             ended_ok=True)
            tool_images = [f for f in os.listdir(generation) if f.startswith("ibv_") and f.endswith(".stasis")] \
                if generation else []
            if len(tool_images) == 2:
                break
            print(f"the pair ended before the checkpoint ({iters} iterations); again with more")
            iters = min(4000000, iters * 4)
            reference, took = reference_run()
        else:
            fail("the checkpoint should hold the server and the client, has "
                 f"{sorted(os.listdir(generation)) if generation else 'no processes'}", log_path)

        second_out = os.path.join(tmp, "second.txt")
        with open(second_out, "w") as out:
            hosts = [] if args.same_hosts else ["--hosts", f"{h1}={h2},{h2}={h1}"]
            restart = subprocess.Popen(HOSTS.in_ns(0, args.stasis, "restart", "--coord", coord, *hosts, "--rsh", ssh,
                                                   generation),
                                       stdout=out, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)

        def hosts_of_sides():
            found = {}
            for pid in subprocess.run(["pgrep", "-x", args.tool[:15]], capture_output=True, text=True).stdout.split():
                host = HOSTS.host_of(int(pid))  # the test's own namespaces: its own tools
                try:
                    cmdline = open(f"/proc/{pid}/cmdline").read().split("\0")
                except OSError:
                    continue
                if host is not None:
                    found["client" if h1 in cmdline else "server"] = host
            return found
        deadline = time.time() + 120
        where = {}
        while len(where) < 2 and restart.poll() is None and time.time() < deadline:
            where = hosts_of_sides()
            time.sleep(0.02)
        try:
            _, restart_err = restart.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            restart.kill()
            fail("the restart did not finish", second_out, log_path, os.path.join(work, "server1.out"),
                 os.path.join(work, "client1.out"))
        if restart.returncode != 0:
            fail(f"the restart failed (status {restart.returncode}): {restart_err}", second_out, log_path,
                 os.path.join(work, "server1.out"), os.path.join(work, "client1.out"))
        expected_where = {"server": 0, "client": 1} if args.same_hosts else {"server": 1, "client": 0}
        if where != expected_where:
            fail(f"expected the sides on {expected_where} (0: host 1, 1: host 2) while they ran; found {where}")
        got = open(first_out).read() + open(second_out).read()
        if got != reference.stdout:
            fail(f"the output differs from an uninterrupted run:\nexpected {reference.stdout!r}\ngot {got!r}\n"
                 f"restart stderr: {restart_err[-1000:]}", os.path.join(work, "server1.out"),
                 os.path.join(work, "client1.out"), log_path)
        print(f"PASS: {args.tool} server on host {expected_where['server'] + 1}, client on host "
              f"{expected_where['client'] + 1} after the restart; output as uninterrupted:\n{got}")
        return 0
    finally:
        HOSTS.down()
        remove_unless_kept(tmp)


if __name__ == "__main__":
    sys.exit(main())
