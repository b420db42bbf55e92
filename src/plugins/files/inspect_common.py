"""Shared by the kinds' `stasis inspect --json` checks (events/, sockets/): launch a test program
under a private coordinator, checkpoint it once it has printed enough, and return every
descriptor of every image as `stasis inspect --json` shows it."""
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))
from e2e_common import Computation, fail, wait_lines  # noqa: E402


def inspected_descriptors(stasis, program, lines_first=10):
    """[(image name, fd entry)] for a checkpoint of `program` (argv) taken after it printed
    `lines_first` lines."""
    with tempfile.TemporaryDirectory(prefix="stasis-inspect-") as tmp:
        c = Computation(stasis, tmp)
        out = Path(tmp) / "out"
        try:
            with open(out, "w") as stdout, open(Path(tmp) / "err", "w") as stderr:
                c.popen(["launch", "--", *program], stdout, stderr)
            wait_lines(out, lines_first)
            done = c.run("checkpoint", timeout=120)
            if done.returncode != 0:
                fail(f"`stasis checkpoint` exited {done.returncode}: {done.stderr.strip()}")
            generation = Path(done.stdout.strip().splitlines()[-1])
            found = []
            for image in sorted(generation.glob("*.stasis")):
                shown = c.run("inspect", "--json", str(image), timeout=60)
                if shown.returncode != 0:
                    fail(f"`stasis inspect --json {image.name}` exited {shown.returncode}: {shown.stderr.strip()}")
                found += [(image.name, fd) for fd in json.loads(shown.stdout)["fds"]]
            return found
        finally:
            c.cleanup()
            time.sleep(0.2)


def require(found, what, predicate):
    """Fails unless some (image, fd) of `found` satisfies predicate(fd); returns the first."""
    for image, fd in found:
        try:
            if predicate(fd):
                return fd
        except (KeyError, TypeError, IndexError):
            continue
    shown = "\n".join(f"  {image}: {json.dumps(fd)}" for image, fd in found)
    fail(f"no descriptor shows {what}; inspect --json showed:\n{shown}")
