#!/usr/bin/python3
"""A process whose pid looks like the upper half of a pointer: with ASLR off, libraries and the
main thread's TCB sit at 0x7ffff7..., so pid 0x7fff (32767) also appears in the TCB's pointers.
The runtime must still find the field where glibc caches the thread id (else pthread_kill and
pthread_sigqueue fail after a restart, as a CI run once saw with pid 32621 = 0x7f6d). Checkpoint,
kill, restart, and compare with an uninterrupted run. Needs a pid namespace of its own (the
kernel is asked for pid 32767 through ns_last_pid).

  tid_in_pointer_range.py STASIS SIGNALS_TIMER"""
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from e2e_common import Computation, fail  # noqa: E402

POINTER_HALF_PID = 0x7fff


def main(stasis, program):
    args = [program, "60", "30"]
    reference = subprocess.run(args, capture_output=True, text=True, check=True).stdout.splitlines()
    with tempfile.TemporaryDirectory() as tmp:
        comp = Computation(stasis, tmp)
        try:
            Path("/proc/sys/kernel/ns_last_pid").write_text(str(POINTER_HALF_PID - 1))
            launch = subprocess.Popen(["setarch", "-R", stasis, "launch", "--", *args], env=comp.env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if launch.pid != POINTER_HALF_PID:
                fail(f"the launch got pid {launch.pid}, not {POINTER_HALF_PID}: is this a pid namespace of its own?")
            before = [launch.stdout.readline().rstrip("\n") for _ in range(8)]
            if comp.run("checkpoint").returncode:
                fail("the checkpoint failed")
            launch.send_signal(signal.SIGKILL)
            launch.wait()
            launch_stderr = launch.stderr.read()
            if "cannot locate glibc's cached thread id" in launch_stderr:
                fail(f"the runtime lost glibc's cached tid at pid {POINTER_HALF_PID}: {launch_stderr.strip()}")
            restart = comp.run("restart", str(comp.ckpt / "000001"), timeout=120)
            got = before + restart.stdout.splitlines()
            if restart.returncode != 0 or got[:len(before)] != reference[:len(before)]:
                fail(f"the restart failed (status {restart.returncode}): {restart.stdout[-400:]} {restart.stderr[-400:]}")
            # The restart goes on from the checkpoint, which may be a line or two behind what was read.
            rest = restart.stdout.splitlines()
            if not rest or rest[-1] != reference[-1] or rest[0] not in reference[:len(before) + 1]:
                fail(f"the restart's output is not the rest of the run:\n{restart.stdout[-600:]}")
            start = reference.index(rest[0])
            if reference[start:] != rest:
                fail(f"the restart's output differs from an uninterrupted run:\n{restart.stdout[-600:]}")
            print(f"pid {POINTER_HALF_PID} with ASLR off: restarted and finished like an uninterrupted run")
        finally:
            comp.cleanup()


if __name__ == "__main__":
    main(*sys.argv[1:])
