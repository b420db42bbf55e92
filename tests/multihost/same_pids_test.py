#!/usr/bin/env python3
"""Two hosts whose processes have the same virtual pids, as real cluster nodes' may (issue 16):
each test host has a pid namespace of its own, and a shell on each sets ns_last_pid before it
starts its child, so the driver on host 1 and the worker on host 2 are both process 5000. The
driver reads the worker through real OpenSSH (sshd in each host). Checkpointed with --kill, the
checkpoint is restarted three times: on the same hosts, swapped, and with both hosts' processes
onto host 1 (--hosts H2=H1), where two restored processes are process 5000, each in its own pid
space. Each shell waits for its child by the pid it got from fork ("wait $!") and prints it with
the child's status after the restart: with a pid table shared between the two spaces, one of them
would wait for the other's process. The restart onto host 1 is checkpointed again there (each
process 5000 must keep its old pid space in MANIFEST.json) and that checkpoint restarted. Each
restart's output must equal an uninterrupted run's.
Before pid spaces, restart refused: "two images of this checkpoint are process 5000".
Exits 77 (skipped) when not root, without `ip netns` or without OpenSSH.
usage: same_pids_test.py --stasis STASIS --driver SSH_DRIVER --worker COUNTER
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from e2e_common import wait_for  # noqa: E402
from multihost.hosts import (NSRSH, RealSsh, TwoHosts, checkpoint_and_kill, fail, launch_on_host1,  # noqa: E402
                             real_ssh_unavailable, remove_unless_kept, skip_reason, test_run)

HOSTS = TwoHosts(("stasis_sp1", "stasis_sp2"), ("10.209.0.1", "10.209.0.2"), "stasis_pv", own_pids=True)
PORT, LINES, DELAY_MS, SAME_PID = 7781, 240, 20, 5000


def start_as(pid, command, name):
    """A shell line: `command` started as process `pid` of this host's pid namespace (the next pid
    the kernel gives), waited for by the pid fork returned, which it prints with the status."""
    return (f"echo {pid - 1} > /proc/sys/kernel/ns_last_pid; {command} & child=$!; wait $child; "
            f"echo \"{name} $child exited $?\"")


def same_pid_processes(generation):
    """(address, pid space) of each process SAME_PID of the checkpoint, and a description of all."""
    with open(os.path.join(generation, "MANIFEST.json")) as f:
        processes = json.load(f)["processes"]
    same = sorted((p["address"], p.get("pid_space", "")) for p in processes if p["original_pid"] == SAME_PID)
    return same, [(p["original_pid"], p["address"], p.get("pid_space")) for p in processes]


def settled_output(paths, expected, timeout=30):
    """The outputs joined, once they equal `expected` or `timeout` passed. `stasis restart` ends
    when the root of its own part ends; a part of another pid space (here the other host's
    processes, of the same size, so either may be the command's) may still be writing its last
    lines then."""
    deadline = time.time() + timeout
    while True:
        got = "".join(open(p).read() for p in paths)
        if got == expected or time.time() > deadline:
            return got
        time.sleep(0.1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stasis", required=True)
    parser.add_argument("--driver", required=True)
    parser.add_argument("--worker", required=True)
    args = parser.parse_args()
    reason = skip_reason(NSRSH) or real_ssh_unavailable()
    if reason:
        print(f"SKIP: {reason}")
        return 77
    h1, h2 = HOSTS.addresses
    tmp, env, coord, ckpt_dir, log_path = test_run(HOSTS, NSRSH, "stasis-same-pids-", PORT)
    env.pop("STASIS_SSH_RELAY", None)
    ssh = RealSsh(HOSTS, tmp)
    worker = start_as(SAME_PID, f"{args.worker} {LINES} {DELAY_MS}", "worker")
    driver = start_as(SAME_PID, f"{args.driver} 1 -- {h2} '{worker}'", "driver")
    program = ["sh", "-c", driver]
    try:
        HOSTS.up()
        ssh.start()
        ssh.check_nodes()
        env = ssh.environment(env)
        reference = subprocess.run(HOSTS.in_ns(0, *program), capture_output=True, text=True, env=env, timeout=120)
        expected = reference.stdout
        for line in (f"1: worker {SAME_PID} exited 0", "1: ssh exit 0", f"driver {SAME_PID} exited 0"):
            if line not in expected.splitlines():
                fail(f"the uninterrupted run did not print '{line}' (are the pids not as set?): "
                     f"{expected[-400:]}{reference.stderr[-400:]}")

        first_out = os.path.join(tmp, "first.txt")
        launch = launch_on_host1(HOSTS, args.stasis, coord, ckpt_dir, program, first_out, env)
        wait_for(lambda: open(first_out).read().count(": step ") >= 60 or launch.poll() is not None,
                 "the worker's first lines", 60)
        generation = checkpoint_and_kill(HOSTS, args.stasis, coord, env, launch, first_out, log_path)
        at_checkpoint = open(first_out).read()
        if at_checkpoint.count(": step ") >= LINES:
            fail("the checkpoint came after the last line", first_out)
        same, listed = same_pid_processes(generation)
        if len({address for address, _ in same}) != 2 or len({space for _, space in same}) != 2:
            fail(f"the checkpoint should hold a process {SAME_PID} on each host, each of its own pid space; "
                 f"MANIFEST.json lists {listed}")

        timings = []
        for label, host_map in (("same hosts", []), ("swapped", ["--hosts", f"{h1}={h2},{h2}={h1}"]),
                                ("both on host 1", ["--hosts", f"{h2}={h1}"])):
            second_out = os.path.join(tmp, f"restart-{len(timings)}.txt")
            started = time.time()
            with open(second_out, "w") as out:
                restart = subprocess.run(HOSTS.in_ns(0, args.stasis, "restart", "--coord", coord, *host_map, generation),
                                         stdout=out, stderr=subprocess.PIPE, text=True, env=env, timeout=180)
            timings.append(time.time() - started)
            if restart.returncode != 0:
                fail(f"the restart {label} failed (status {restart.returncode}): {restart.stderr}", first_out,
                     second_out, log_path, *ssh.logs())
            # The driver's output file is restored at its offset: new lines may land in either file.
            got = settled_output([first_out, second_out], expected)
            if got != expected:
                fail(f"restarted {label}, the output differs from an uninterrupted run's: expected "
                     f"{expected.count(chr(10))} lines ending {expected.splitlines()[-3:]}, got {got.count(chr(10))} "
                     f"ending {got.splitlines()[-3:]}; restart stderr: {restart.stderr[-500:]}", log_path)

        # Both hosts' processes on host 1, checkpointed there: each process 5000 keeps its old pid
        # space (its pid table's), and that checkpoint comes back (on host 1) as an uninterrupted run.
        outs = [os.path.join(tmp, "on-one-host.txt"), os.path.join(tmp, "again.txt")]
        with open(first_out, "r+") as f:  # as the restart leaves it, so that only new lines are counted
            f.truncate(len(at_checkpoint.encode()))
        # (its stderr apart: it warns that first.txt was modified, by the truncation above)
        with open(outs[0], "w") as out, open(os.path.join(tmp, "on-one-host.err"), "w") as err:
            on_one = subprocess.Popen(HOSTS.in_ns(0, args.stasis, "restart", "--coord", coord, "--hosts", f"{h2}={h1}",
                                                  generation), stdout=out, stderr=err, env=env)
        steps = lambda: open(first_out).read().count(": step ") + open(outs[0]).read().count(": step ")
        wait_for(lambda: steps() >= at_checkpoint.count(": step ") + 60 or on_one.poll() is not None, "lines after the restart on host 1", 60)
        again = checkpoint_and_kill(HOSTS, args.stasis, coord, env, on_one, first_out, outs[0], log_path)
        if open(first_out).read().count(": step ") >= LINES:
            fail("the second checkpoint came after the last line", first_out)
        same_again, listed = same_pid_processes(again)
        if same_again != sorted((h1, space) for _, space in same):
            fail(f"checkpointed on host 1, the two processes {SAME_PID} should keep their pid spaces {same}; "
                 f"MANIFEST.json lists {listed}")
        with open(outs[1], "w") as out:
            restart = subprocess.run(HOSTS.in_ns(0, args.stasis, "restart", "--coord", coord, again),
                                     stdout=out, stderr=subprocess.PIPE, text=True, env=env, timeout=180)
        got = settled_output([first_out, *outs], expected)
        if restart.returncode != 0 or got != expected:
            fail(f"restarted from the checkpoint taken on host 1 (status {restart.returncode}), the output should be an "
                 f"uninterrupted run's: expected {expected.splitlines()[-3:]}, got {got.splitlines()[-3:]}; "
                 f"restart stderr: {restart.stderr[-500:]}", log_path)
        print(f"PASS: process {SAME_PID} on both hosts (pid spaces {sorted(s for _, s in same)}); restarted on the same "
              f"hosts, swapped, both on host 1 (checkpointed there and restarted again), each as an uninterrupted run ({expected.count(chr(10))} lines), in "
              f"{', '.join(f'{t:.1f}' for t in timings)} s")
        return 0
    finally:
        ssh.stop()
        HOSTS.down()
        remove_unless_kept(tmp)


if __name__ == "__main__":
    sys.exit(main())
