#!/usr/bin/python3
"""--keep removes the generations a coordinator killed mid-checkpoint leaves, and never one that
a live coordinator is writing.

  keep_incomplete.py STASIS COUNTER

Three coordinators share one checkpoint directory, each with a program of its own:
A (--keep 1) checkpoints (1), then is killed while checkpoint 2 waits for its stopped program:
000002 stays without MANIFEST.json, holding a copy of an image as a half-written one would.
C (no --keep) begins checkpoint 3 for a stopped program and stays alive: it holds 000003's lock.
B (--keep 1) checkpoints (4): 000001 goes (--keep 1), 000002 goes (abandoned), 000003 stays
(being written). C is killed; B checkpoints (5): 000003 goes, and 000004; only 000005 is left,
and a restart from it runs to the end with the output of an uninterrupted run."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e_common import fail, lines, wait_for, wait_lines  # noqa: E402

ARGS = ["120", "50"]  # counter: 120 steps of 50 ms


class Coordinator:
    def __init__(self, stasis, tmp, name, ckpt, *options):
        self.stasis = stasis
        self.env = dict(os.environ, STASIS_RUNTIME_DIR=str(Path(tmp) / "run"))
        port_file = Path(tmp) / f"port-{name}"
        subprocess.run([stasis, "coordinator", "--port", "0", "--port-file", str(port_file),
                        "--ckpt-dir", str(ckpt), "--daemon", "--exit-when-idle",
                        "--barrier-timeout", "120", *options], env=self.env, check=True)
        self.env["STASIS_COORD"] = f"127.0.0.1:{port_file.read_text().strip()}"
        status = json.loads(self.run("status", "--json").stdout)
        self.pid = status["coordinator"]["pid"]

    def run(self, *args, **kw):
        return subprocess.run([self.stasis, *args], env=self.env, capture_output=True, text=True,
                              **kw)

    def popen(self, args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE):
        return subprocess.Popen([self.stasis, *args], env=self.env, stdout=stdout, stderr=stderr)

    def checkpoint(self):
        done = self.run("checkpoint", timeout=60)
        if done.returncode:
            fail(f"checkpoint failed: {done.stderr.strip()}")
        return Path(done.stdout.strip().splitlines()[-1])


def generations(ckpt):
    return sorted(p.name for p in ckpt.iterdir() if p.name.isdigit())


def stop_mid_checkpoint(coordinator, program, generation_dir):
    """Stops the program and begins a checkpoint: it waits at "suspend" with its directory made."""
    os.kill(program.pid, signal.SIGSTOP)
    command = coordinator.popen(["checkpoint"])
    wait_for(generation_dir.exists, f"{generation_dir} to be made")
    return command


def main(stasis, counter):
    reference = subprocess.run([counter, *ARGS], capture_output=True, text=True, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = Path(tmp, "ckpt")
        programs, coordinators = [], []
        try:
            a = Coordinator(stasis, tmp, "a", ckpt, "--keep", "1")
            coordinators.append(a)
            programs.append(a.popen(["launch", "--", counter, *ARGS]))
            time.sleep(0.5)
            first = a.checkpoint()
            stuck = stop_mid_checkpoint(a, programs[-1], ckpt / "000002")
            image = next(first.glob("*.stasis"))
            shutil.copy(image, ckpt / "000002" / (image.name + ".tmp"))  # a half-written image
            os.kill(a.pid, signal.SIGKILL)
            stuck.wait(timeout=30)
            os.kill(programs[-1].pid, signal.SIGKILL)

            c = Coordinator(stasis, tmp, "c", ckpt)
            coordinators.append(c)
            programs.append(c.popen(["launch", "--", counter, *ARGS]))
            time.sleep(0.5)
            writing = stop_mid_checkpoint(c, programs[-1], ckpt / "000003")

            b = Coordinator(stasis, tmp, "b", ckpt, "--keep", "1")
            coordinators.append(b)
            out = Path(tmp, "out")
            with open(out, "w") as o:
                programs.append(b.popen(["launch", "--", counter, *ARGS], o, None))
            wait_lines(out, 5)
            b.checkpoint()
            if generations(ckpt) != ["000003", "000004"]:
                fail(f"after checkpoint 4 with --keep 1 the directory holds {generations(ckpt)}, "
                     "expected 000003 (being written by a live coordinator) and 000004")
            os.kill(c.pid, signal.SIGKILL)
            writing.wait(timeout=30)
            wait_lines(out, len(lines(out)) + 3)
            last = b.checkpoint()
            if generations(ckpt) != ["000005"]:
                fail(f"after checkpoint 5 with --keep 1 the directory holds {generations(ckpt)}, "
                     "expected 000005 only (000003's coordinator is dead)")
            print(f"--keep 1 left {generations(ckpt)}; log: " + " | ".join(
                l for l in (ckpt / "coordinator.log").read_text().splitlines() if "removed" in l))
            os.kill(programs[-1].pid, signal.SIGKILL)
            programs[-1].wait()
            restarted = b.run("restart", str(last), timeout=120)
            if restarted.returncode != 0 or out.read_text() != reference.stdout:
                fail(f"the restart from {last} differs from an uninterrupted run: "
                     f"{restarted.stderr.strip()}")
        finally:
            for program in programs:
                try:
                    os.kill(program.pid, signal.SIGCONT)
                    program.kill()
                except ProcessLookupError:
                    pass
            for coordinator in coordinators:
                try:
                    os.kill(coordinator.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    print("PASS keep_incomplete")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
