#!/usr/bin/env python3
"""A TCP connection between two hosts (network namespaces), checkpointed with data in flight both
ways and restarted with the two processes' hosts swapped.

Host 1 runs, under `stasis launch`, a shell with a TCP server (tcp_peer) and, through an ssh
stand-in, its client on host 2; each end checks every byte it reads and prints a running
checksum. `stasis checkpoint --kill` mid-stream, then `stasis restart --hosts H1=H2,H2=H1 --rsh
SSH` on host 1: the server must come back on host 2 and the client on host 1 (checked through
their network namespaces), the connection between them made again through the coordinator's
name service, and each end's lines must be those of an uninterrupted run. With --same-hosts,
no host map: each process comes back on its own host. With --new-addresses, the two processes
swap hosts that are known by addresses the computation never ran at (a second address of each
namespace, as other machines of a new allocation), and once the stream is done the client
connects again and sends a datagram to the server's old address, as learnt at start: both must
reach the server where it runs now and show each end the old addresses (in a plain swap an old
address is also a new one, so such new connections are not translated).
Exits 77 (skipped) when not root or without `ip netns`.
usage: tcp_swap_test.py --stasis STASIS --peer TCP_PEER [--nsrsh NSRSH]
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from e2e_common import wait_for  # noqa: E402
from multihost.hosts import NSRSH, TwoHosts, checkpoint_and_kill, fail, remove_unless_kept, skip_reason, test_run  # noqa: E402

HOSTS = TwoHosts(("stasis_tcp1", "stasis_tcp2"), ("10.202.0.1", "10.202.0.2"), "stasis_tv",
                 ("10.202.0.11", "10.202.0.12"))
PORT, SERVER_PORT, STEPS, DELAY_MS = 7781, 7790, "60", "60"


def by_end(text):
    """Each end's lines, in order (the two ends' lines interleave differently in every run)."""
    ends = {"server": [], "client": [], "shell": []}
    for line in text.splitlines():
        if line.startswith("server "):
            ends["server"].append(line)
        elif line.startswith("host2: client "):
            ends["client"].append(line)
        else:
            ends["shell"].append(line)
    return ends


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stasis", required=True)
    parser.add_argument("--peer", required=True)
    parser.add_argument("--nsrsh", default=NSRSH)
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--same-hosts", action="store_true", help="restart each process on its own host")
    modes.add_argument("--new-addresses", action="store_true", help="swap the hosts, at their spare addresses")
    args = parser.parse_args()
    if skip_reason(args.nsrsh):
        print(f"SKIP: {skip_reason(args.nsrsh)}")
        return 77
    ssh = os.path.join(HERE, "bin", "ssh")
    h1, h2 = HOSTS.addresses
    tmp, env, coord, ckpt_dir, log_path = test_run(HOSTS, args.nsrsh, "stasis-tcp-swap-", PORT)
    program = [os.path.join(HERE, "tcp_pair.sh"), ssh, h1, h2, args.peer, str(SERVER_PORT), STEPS, DELAY_MS]
    if not args.new_addresses:
        hosts = [] if args.same_hosts else ["--hosts", f"{h1}={h2},{h2}={h1}"]
    else:
        program.append("again")
        spare1, spare2 = HOSTS.spare_addresses
        hosts = ["--hosts", f"{h1}={spare2},{h2}={spare1}"]
    try:
        HOSTS.up()
        reference = subprocess.run(HOSTS.in_ns(0, *program), capture_output=True, text=True, env=env, timeout=120)
        if reference.returncode != 0 or "both done" not in reference.stdout:
            fail(f"the reference run failed: {reference.stdout[-500:]}{reference.stderr[-500:]}")
        expected = by_end(reference.stdout)

        first_out = os.path.join(tmp, "first.txt")
        with open(first_out, "w") as out:
            launch = subprocess.Popen(HOSTS.in_ns(0, args.stasis, "launch", "--coord", coord, "--ckpt-dir", ckpt_dir,
                                                  "--", *program),
                                      stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        client_lines = lambda: open(first_out).read().count("host2: client step")
        wait_for(lambda: client_lines() >= 12 or launch.poll() is not None, "the client's first lines", 60)
        generation = checkpoint_and_kill(HOSTS, args.stasis, coord, env, launch, first_out, log_path)
        if args.new_addresses:
            HOSTS.prefer_spare_addresses()

        second_out = os.path.join(tmp, "second.txt")
        with open(second_out, "w") as out:
            restart = subprocess.Popen(HOSTS.in_ns(0, args.stasis, "restart", "--coord", coord, *hosts, "--rsh", ssh,
                                                   generation),
                                       stdout=out, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
        # Where each end runs now.
        def hosts_of_ends():
            found = {}
            for end in ("server", "client"):
                pids = subprocess.run(["pgrep", "-f", f"{os.path.basename(args.peer)} {end}"], capture_output=True,
                                      text=True).stdout.split()
                if pids:
                    found[end] = HOSTS.host_of(int(pids[0]))
            return found
        deadline = time.time() + 60
        while len(hosts_of_ends()) < 2 and restart.poll() is None and time.time() < deadline:
            time.sleep(0.1)
        where = hosts_of_ends()
        if len(where) < 2 and restart.poll() is None:
            restart.kill()
            fail(f"the two ends did not both restart within 60 s: {restart.communicate()[1]}", second_out, log_path)
        try:
            _, restart_err = restart.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            restart.kill()
            fail("the restart did not finish", second_out, log_path)
        if restart.returncode != 0:
            fail(f"the restart failed (status {restart.returncode}): {restart_err}", second_out, log_path)
        if where != ({"server": 0, "client": 1} if args.same_hosts else {"server": 1, "client": 0}):
            fail(f"the server should run on host {1 if args.same_hosts else 2} and the client on host "
                 f"{2 if args.same_hosts else 1}; found {where} (0: host 1, 1: host 2)")
        got = by_end(open(first_out).read() + open(second_out).read())
        for end in ("server", "client"):
            if got[end] != expected[end]:
                fail(f"the {end}'s lines differ from an uninterrupted run:\nexpected tail {expected[end][-3:]}\n"
                     f"got {len(got[end])} lines, tail {got[end][-3:]}", first_out, second_out)
        if got["shell"] != ["both done"]:
            fail(f"unexpected other lines: {got['shell']}", first_out, second_out)
        print(f"PASS: server on host {1 if args.same_hosts else 2}, client on host {2 if args.same_hosts else 1}, "
              f"{len(got['server'])} + {len(got['client'])} "
              f"lines as uninterrupted; restart stderr: {restart_err.strip()[-300:]}")
        return 0
    finally:
        time.sleep(0.2)  # HOSTS.down() ends every process of the test hosts
        HOSTS.down()
        remove_unless_kept(tmp)


if __name__ == "__main__":
    sys.exit(main())
