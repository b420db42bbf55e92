#!/usr/bin/python3
"""Long chains of checkpoints: every checkpoint reported complete can be restarted.

  checkpoint_chains.py STASIS INCREMENTAL_MEMORY

One program (launched with --incremental --full-every 3, so full images and increments mix) goes
through live checkpoints, `checkpoint --kill` followed by a restart from `latest`, and `--full`
ones, in the order CHAIN lists (a `--kill` right after a live checkpoint, and two `--kill`s in a
row after a restart, are the orders that once left a MANIFEST.json naming the image file of an
earlier generation). After every checkpoint each image its MANIFEST.json names must exist in the
generation with the recorded size, and every parent it names must be a complete generation.
The program then runs to its end: its output equals an uninterrupted run's."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e_common import Computation, fail, lines, wait_lines  # noqa: E402

# 16 MiB, 90 steps of 100 ms, 3% of the pages written per step, holes only at step 2 (before the
# first checkpoint: see incremental_memory.c on holes and mapped restarts)
ARGS = ["16", "90", "100", "3", "2"]
CHAIN = ["live", "kill", "kill", "live", "live", "kill", "live --full", "kill --full", "live",
         "live", "live", "kill", "kill", "live", "kill"]


def check_manifest(generation_dir):
    """Every file the manifest names exists with its recorded size; every parent is complete."""
    manifest = json.loads((generation_dir / "MANIFEST.json").read_text())
    if not manifest.get("processes"):
        fail(f"{generation_dir}/MANIFEST.json names no process")
    for process in manifest["processes"]:
        image = generation_dir / process["image"]
        if not image.is_file():
            fail(f"{generation_dir}/MANIFEST.json names {process['image']}, which is not there "
                 f"(the generation holds {sorted(p.name for p in generation_dir.iterdir())})")
        if image.stat().st_size != process["image_bytes"]:
            fail(f"{image} holds {image.stat().st_size} bytes; its MANIFEST.json says "
                 f"{process['image_bytes']}")
    for parent in manifest.get("parents", []):
        parent_dir = generation_dir.parent / f"{parent:06}"
        if not (parent_dir / "MANIFEST.json").is_file():
            fail(f"{generation_dir.name} builds on generation {parent}, which is not complete")
    return manifest


def main(stasis, program):
    reference = subprocess.run([program, *ARGS], capture_output=True, text=True, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        comp = Computation(stasis, tmp)
        out = Path(tmp, "out")
        running = []
        try:
            with open(out, "w") as o:
                running.append(comp.popen(["launch", "--incremental", "--full-every", "3", "--",
                                           program, *ARGS], o, None))
            wait_lines(out, 3)
            kinds = []
            for step, what in enumerate(CHAIN, 1):
                wait_lines(out, len(lines(out)) + 2)
                options = what.split()[1:] + (["--kill"] if what.startswith("kill") else [])
                done = comp.run("checkpoint", *options, timeout=120)
                if done.returncode:
                    fail(f"checkpoint {step} ({what}) failed: {done.stderr.strip()}")
                generation = Path(done.stdout.strip().splitlines()[-1])
                manifest = check_manifest(generation)
                kinds.append(f"{what}:{'increment' if manifest['parents'] else 'full'}")
                if what.startswith("kill"):
                    running.pop().wait(timeout=60)
                    running.append(comp.popen(["restart", str(comp.ckpt / "latest")],
                                              subprocess.DEVNULL, subprocess.PIPE))
            print("chain: " + ", ".join(kinds))
            if not any(k.endswith("increment") for k in kinds) or not any(
                    k.endswith("full") for k in kinds[1:]):
                fail("the chain did not mix full images and increments")
            last = running.pop()
            rc = last.wait(timeout=120)
            if rc != reference.returncode:
                stderr = last.stderr.read().decode() if last.stderr else ""
                fail(f"the last restart exited {rc}, an uninterrupted run {reference.returncode}: "
                     f"{stderr.strip()}")
            if out.read_text() != reference.stdout:
                fail("the output after the chain differs from an uninterrupted run")
        finally:
            for proc in running:
                proc.kill()
            comp.cleanup()
    print("PASS checkpoint_chains")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
