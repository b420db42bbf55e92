#!/usr/bin/env python3
"""A driver on host 1 reads workers on host 2 through real OpenSSH (sshd in each test host), is
checkpointed mid-way with `stasis checkpoint --kill` and restarted; its output must be that of an
uninterrupted run: every worker line, in order, and ssh's exit status (0, or the remote command's).

The driver (src/plugins/ssh/tests/ssh_driver.c) runs `ssh [OPTIONS] HOST2 COMMAND` with ssh's
standard output a pipe to itself. Under Stasis each ssh becomes an ssh relay
(src/plugins/ssh/README.md): the real ssh only starts the relay's remote half and ends, the relay
pair carries the streams, and `stasis restart` brings the remote half back through a new ssh
session like the original one (no --rsh is given). Modes:
  --same_hosts      each part on its own host again
  --swap            --hosts H1=H2,H2=H1: the driver comes back on host 2, the worker on host 1
                    (the driver's part through ssh, the worker's on the restarting host)
  --options_loop    ssh -n -T, the remote command a shell loop of two workers that then exits 7
                    (ssh's status must be 7, before and after); swapped
  --three_clients   three ssh clients at once, each to its own worker; same hosts
  --chain           the remote command on host 2 sshes back to host 1, where the worker runs (each
                    ssh a relay pair); same hosts
  --chain3          three hosts: the driver on host 1 sshes to host 2, whose remote command sshes to
                    host 3, where the worker runs; same hosts
  --chain3_rotated  the same, restarted with --hosts H1=H2,H2=H3,H3=H1: the driver on host 2, the
                    middle relay half on host 3, the last one and the worker on host 1
Where each process runs after the restart is checked through its network namespace; each host has
its own /tmp, /dev/shm and host name, checked through real ssh. Exits 77 (skipped) when not
root, without `ip netns` or without OpenSSH.
usage: ssh_session_test.py MODE --stasis STASIS --driver SSH_DRIVER --worker COUNTER
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from e2e_common import wait_for  # noqa: E402
from multihost.hosts import (NSRSH, BridgedHosts, RealSsh, TwoHosts, checkpoint_and_kill, fail,  # noqa: E402
                             launch_on_host1, real_ssh_unavailable, remove_unless_kept, skip_reason, test_run)

TWO_HOSTS = TwoHosts(("stasis_rs1", "stasis_rs2"), ("10.207.0.1", "10.207.0.2"), "stasis_rv", own_pids=True)
THREE_HOSTS = BridgedHosts(("stasis_rs1", "stasis_rs2", "stasis_rs3"), ("10.207.0.1", "10.207.0.2", "10.207.0.3"),
                           "stasis_rv", own_pids=True)
PORT, LINES, DELAY_MS = 7781, 400, 25


def by_client(text):
    """Each client's lines in order (several clients' lines interleave differently in every run)."""
    clients = {}
    for line in text.splitlines():
        client, _, rest = line.partition(": ")
        clients.setdefault(client if rest else "driver", []).append(rest or line)
    return clients


def main():
    parser = argparse.ArgumentParser()
    modes = parser.add_mutually_exclusive_group(required=True)
    for mode in ("same_hosts", "swap", "options_loop", "three_clients", "chain", "chain3", "chain3_rotated"):
        modes.add_argument(f"--{mode}", action="store_true")
    parser.add_argument("--stasis", required=True)
    parser.add_argument("--driver", required=True)
    parser.add_argument("--worker", required=True)
    args = parser.parse_args()
    reason = skip_reason(NSRSH) or real_ssh_unavailable()
    if reason:
        print(f"SKIP: {reason}")
        return 77
    three = args.chain3 or args.chain3_rotated
    hosts = THREE_HOSTS if three else TWO_HOSTS
    h1, h2 = hosts.addresses[:2]
    swap = args.swap or args.options_loop
    clients = 3 if args.three_clients else 1
    worker = f"{args.worker} {LINES} {DELAY_MS}"
    if args.options_loop:
        remote = ["-n", "-T", "--", h2, f"for half in 1 2; do {args.worker} {LINES // 2} {DELAY_MS}; done; exit 7"]
    else:
        remote = ["--", h2, worker]
    tmp, env, coord, ckpt_dir, log_path = test_run(hosts, NSRSH, "stasis-ssh-session-", PORT)
    env.pop("STASIS_SSH_RELAY", None)
    ssh = RealSsh(hosts, tmp)
    if args.chain:  # sshd's PATH on host 2 does not have the test's client: named by its path
        remote = ["--", h2, f"{ssh.client} {h1} {worker}"]
    if three:  # host 1 -> host 2 -> host 3
        remote = ["--", h2, f"{ssh.client} {hosts.addresses[2]} {worker}"]
    program = [args.driver, str(clients), *remote]
    try:
        hosts.up()
        ssh.start()
        names = ssh.check_nodes()
        env = ssh.environment(env)
        if args.same_hosts:  # what the relay cannot carry is refused, naming it, with ssh's status on failure
            refused = subprocess.run(hosts.in_ns(0, args.stasis, "launch", "--coord", f"{h1}:{PORT + 1}", "--ckpt-dir",
                                                 os.path.join(tmp, "refused"), "--", "ssh", "-t", h2, "true"),
                                     capture_output=True, text=True, env=env, timeout=60)
            if refused.returncode != 255 or "ssh -t (a pseudo-terminal) cannot run under Stasis" not in refused.stderr:
                fail(f"ssh -t under Stasis should be refused with status 255; got {refused.returncode}: {refused.stderr}")
        reference = subprocess.run(hosts.in_ns(0, *program), capture_output=True, text=True, env=env, timeout=120)
        expected = by_client(reference.stdout)
        status = 7 if args.options_loop else 0
        if reference.returncode != 0 or any(expected.get(str(k + 1), [""])[-1] != f"ssh exit {status}"
                                            for k in range(clients)):
            fail(f"the uninterrupted run failed: {reference.stdout[-500:]}{reference.stderr[-500:]}")

        first_out = os.path.join(tmp, "first.txt")
        launch = launch_on_host1(hosts, args.stasis, coord, ckpt_dir, program, first_out, env)
        lines_read = lambda: open(first_out).read().count(": step ")
        wait_for(lambda: lines_read() >= 100 * clients or launch.poll() is not None, "the workers' first lines", 60)
        generation = checkpoint_and_kill(hosts, args.stasis, coord, env, launch, first_out, log_path)
        before = lines_read()
        if before >= LINES * clients:
            fail(f"the checkpoint came after the last line ({before} lines)", first_out)

        second_out = os.path.join(tmp, "second.txt")
        host_map = ["--hosts", f"{h1}={h2},{h2}={h1}"] if swap else []
        if args.chain3_rotated:
            h3 = hosts.addresses[2]
            host_map = ["--hosts", f"{h1}={h2},{h2}={h3},{h3}={h1}"]
        started = time.time()
        with open(second_out, "w") as out:
            restart = subprocess.Popen(hosts.in_ns(0, args.stasis, "restart", "--coord", coord, *host_map, generation),
                                       stdout=out, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
        # The driver's output file is restored as its output (at its offset): new lines may land in
        # either file.
        lines_now = lambda: open(first_out).read().count(": step ") + open(second_out).read().count(": step ")
        wait_for(lambda: lines_now() > before or restart.poll() is not None, "the first line after restart", 120)
        first_line_s = time.time() - started

        def where(pattern):
            pids = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()
            return sorted({hosts.host_of(int(pid)) for pid in pids} - {None})
        placed = {"driver": where(f"^{args.driver} "), "worker": where(f"^{args.worker} "),
                  "remote relay": where("stasis-ssh-relay --serve")}
        try:
            _, restart_err = restart.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            restart.kill()
            fail("the restart did not finish", first_out, second_out, log_path, *ssh.logs())
        if restart.returncode != 0:
            fail(f"the restart failed (status {restart.returncode}): {restart_err}", first_out, second_out, log_path,
                 *ssh.logs())
        driver_host, worker_host = (1, 0) if swap else (0, 1)
        want = {"driver": [driver_host], "worker": [worker_host], "remote relay": [worker_host]}
        if args.chain:  # host 1 -> host 2 -> host 1: a remote half on each host, the worker on host 1
            want = {"driver": [0], "worker": [0], "remote relay": [0, 1]}
        if args.chain3:  # a remote half on hosts 2 and 3, the worker on host 3
            want = {"driver": [0], "worker": [2], "remote relay": [1, 2]}
        if args.chain3_rotated:  # each moved one host on: 1 -> 2, 2 -> 3, 3 -> 1
            want = {"driver": [1], "worker": [0], "remote relay": [0, 2]}
        if placed != want:
            fail(f"after the restart the processes should run on {want}; found {placed} (0: host 1, 1: host 2, ...)",
                 first_out, second_out, log_path)
        got = by_client(open(first_out).read() + open(second_out).read())
        if got != expected:
            for client in sorted(set(expected) | set(got)):
                if got.get(client) != expected.get(client):
                    fail(f"client {client}'s lines differ from an uninterrupted run: expected {len(expected.get(client, []))}"
                         f" lines ending {expected.get(client, [])[-2:]}, got {len(got.get(client, []))} ending "
                         f"{got.get(client, [])[-2:]}", first_out, second_out)
        print(f"PASS: {clients} client(s), {before} lines before the checkpoint, {sum(map(len, got.values()))} lines "
              f"as uninterrupted, ssh exit {status}; restarted "
              f"{'swapped' if swap else 'rotated' if args.chain3_rotated else 'on the same hosts'} "
              f"(hosts {names}); first line {first_line_s:.2f} s after `stasis restart` started; "
              f"restart stderr: {restart_err.strip()[-300:]}")
        return 0
    finally:
        ssh.stop()
        hosts.down()
        remove_unless_kept(tmp)


if __name__ == "__main__":
    sys.exit(main())
