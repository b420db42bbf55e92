#!/usr/bin/python3
"""Memory marked MADV_DONTFORK / MADV_WIPEONFORK is checkpointed by a forked writer, and keeps its
marks: `stasis checkpoint` of wipe_on_fork says nothing of writing in place, and afterwards the
program's /proc/PID/smaps still shows both marks ("dc", "wf" in VmFlags), so its own forks see
what they always saw. (ckpt.wipe_on_fork checks the memory comes back right after a restart.)

usage: fork_marks.py STASIS WIPE_ON_FORK
"""
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests"))
from e2e_common import Computation, fail, wait_lines  # noqa: E402


def marks(pid):
    found = set()
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        if line.startswith("VmFlags:"):
            flags = line.split()[1:]
            found |= {f for f in ("dc", "wf") if f in flags}
    return found


def main():
    stasis, program = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="stasis-forkmarks-") as tmp:
        c = Computation(stasis, tmp)
        out = Path(tmp) / "out"
        try:
            with open(out, "w") as o:
                p = c.popen(["launch", "--", program, "400", "20"], stdout=o, stderr=subprocess.PIPE)
            wait_lines(out, 5)
            pid = int(subprocess.run(["pgrep", "-n", "-f", program], capture_output=True, text=True).stdout)
            before = marks(pid)
            if before != {"dc", "wf"}:
                fail(f"wipe_on_fork shows marks {before} before the checkpoint")
            for n in (1, 2):
                r = c.run("checkpoint", timeout=60)
                if r.returncode != 0:
                    fail(f"checkpoint {n}: {r.stderr.strip()}")
                if "in place" in r.stderr:
                    fail(f"checkpoint {n} was written in place: {r.stderr.strip()}")
                after = marks(pid)
                if after != before:
                    fail(f"after checkpoint {n} the program's mappings show marks {after}, not {before}")
            log = (c.ckpt / "coordinator.log").read_text()
            if "in place" in log:
                fail("the coordinator's log says an image was written in place")
            paused = [l.split("paused ")[1].split(")")[0] for l in log.splitlines() if "paused" in l]
            p.kill()
            p.wait()
            print(f"PASS: two forked checkpoints (paused {', '.join(paused)}); marks {sorted(after)} kept")
        finally:
            c.cleanup()


if __name__ == "__main__":
    main()
