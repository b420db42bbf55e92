#!/usr/bin/python3
"""Nothing of Stasis's reaches the program's own stdout or stderr.

A program's output streams are its output: a VM's serial console (QEMU's -serial stdio), a pipe
another program parses. The runtime's notices go to the coordinator's log and to the command
that caused them. This runs a program whose checkpoints always produce NOTICE (signal_flood: a
warning about queued signals left out) with its stdout and stderr in files of its own,
checkpoints it (forked), checkpoints and kills it, restarts it, checkpoints the restarted one,
and lets it finish. Then:
  - its stdout and stderr equal an uninterrupted run's, byte for byte (nothing added);
  - `stasis checkpoint` printed the notice on its own stderr, and the coordinator's log has it.

usage: quiet_streams.py STASIS NOTICE PROGRAM [ARGS...]
"""
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from e2e_common import Computation, fail, lines, wait_lines  # noqa: E402


def in_files(program, out, err):
    """The program with its streams in files of its own (not the launching command's)."""
    return ["/bin/sh", "-c", 'err=$1; shift; exec "$@" >"$0" 2>"$err"', str(out), str(err), *program]


def main():
    stasis, notice = sys.argv[1], sys.argv[2]
    program = [str(Path(sys.argv[3]).resolve()), *sys.argv[4:]]
    with tempfile.TemporaryDirectory(prefix="stasis-quiet-") as tmp:
        tmp = Path(tmp)
        ref_out, ref_err = tmp / "ref.out", tmp / "ref.err"
        subprocess.run(in_files(program, ref_out, ref_err), check=True, timeout=120)
        out, err = tmp / "prog.out", tmp / "prog.err"
        c = Computation(stasis, tmp)
        try:
            launch = c.popen(["launch", "--", *in_files(program, out, err)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_lines(out, 5)
            forked = c.run("checkpoint", timeout=60)
            if forked.returncode != 0:
                fail(f"checkpoint: {forked.stderr.strip()}")
            wait_lines(out, len(lines(out)) + 3)
            killed = c.run("checkpoint", "--kill", timeout=60)
            if killed.returncode != 0:
                fail(f"checkpoint --kill: {killed.stderr.strip()}")
            launch.wait(timeout=30)
            restart_err = tmp / "restart.err"
            with open(restart_err, "w") as restart_stderr:
                restart = c.popen(["restart", str(c.ckpt)], stdout=subprocess.DEVNULL,
                                  stderr=restart_stderr)
                seen = len(lines(out))
                wait_lines(out, seen + 3)
                again = c.run("checkpoint", timeout=60)
                if again.returncode != 0 and "done" not in lines(out):
                    fail(f"checkpoint of the restarted program: {again.stderr.strip()}")
                if restart.wait(timeout=120) != 0:
                    fail(f"the restarted program ended with status {restart.returncode}")
            for name, ran in (("checkpoint", forked), ("checkpoint --kill", killed)):
                if notice not in ran.stderr:
                    fail(f"`stasis {name}` did not pass the runtime's notice on: {ran.stderr!r}")
            log = (c.ckpt / "coordinator.log").read_text()
            if log.count(notice) < 2:
                fail("the coordinator's log lacks the runtime's notice")
            for got, want, stream in ((out, ref_out, "stdout"), (err, ref_err, "stderr")):
                if got.read_bytes() != want.read_bytes():
                    extra = [l for l in lines(got) if l not in lines(want)]
                    fail(f"the program's {stream} differs from an uninterrupted run's; lines not "
                         f"in it: {extra[:5]}")
            print(f"PASS: the program's stdout ({len(lines(out))} lines) and stderr "
                  f"({err.stat().st_size} bytes) equal an uninterrupted run's; the notice went to "
                  f"`stasis checkpoint` and the coordinator's log")
        finally:
            c.cleanup()
            time.sleep(0.2)


if __name__ == "__main__":
    main()
