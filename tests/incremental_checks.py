#!/usr/bin/python3
"""Incremental checkpoints end to end (src/plugins/memory/README.md, Incremental checkpoints).

  incremental_checks.py STASIS INCREMENTAL_MEMORY

1. Sizes, chains and --keep: a coordinator with --keep 2, a program launched with --incremental
   --full-every 3 --compress none changing 1% of 64 MiB per step. Generation 1 is full, 2 to 4 are increments (the
   second image is at most 10% of the first), 5 is full again, 6 an increment. After 4, --keep 2
   still holds 1 to 4 (4 and 3 need 2 and 1); after 6 only 5 and 6 are left. Killed, restarted
   from the newest: the same output as a run without Stasis.
2. Older generations and damaged chains: three checkpoints (1 full, 2 and 3 increments), killed;
   a restart from generation 2 (an increment of 1) gives the same output. Then generation 1's
   image is damaged: a restart from 3 is refused with a message naming that image, and so is one
   whose parent image is gone."""
import json
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e_common import Computation, fail, lines, wait_lines  # noqa: E402

# 64 MiB, 36 steps of 150 ms, 1% of the pages written per step; holes punched until the given
# step, which lies before the step restarted from (see incremental_memory.c)
def program_args(holes_until):
    return ["64", "36", "150", "1", str(holes_until)]


def checkpoint(comp, *options):
    done = comp.run("checkpoint", *options, timeout=120)
    if done.returncode:
        fail(f"checkpoint failed: {done.stderr.strip()}")
    return Path(done.stdout.strip())


def launch(comp, out, args, *options):
    with open(out, "w") as o:
        return comp.popen(["launch", *options, "--", PROGRAM, *args], o, None)


def generations(comp):
    return sorted(int(p.name) for p in comp.ckpt.iterdir() if p.name.isdigit())


def manifest(generation_dir):
    return json.loads((generation_dir / "MANIFEST.json").read_text())


def image_of(generation_dir):
    images = list(generation_dir.glob("*.stasis"))
    if len(images) != 1:
        fail(f"{generation_dir} holds {len(images)} images, expected 1")
    return images[0]


def kill(proc):
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def checkpoint_after(comp, out, more_lines, *options):
    wait_lines(out, len(lines(out)) + more_lines)
    return checkpoint(comp, *options)


def reference_run(args):
    return subprocess.run([PROGRAM, *args], capture_output=True, text=True, check=True)


def chains_and_keep(stasis):
    args = program_args(10)
    reference = reference_run(args)
    with tempfile.TemporaryDirectory() as tmp:
        comp = Computation(stasis, tmp, "--keep", "2")
        out = Path(tmp, "out")
        try:
            proc = launch(comp, out, args, "--incremental", "--full-every", "3", "--compress", "none")
            wait_lines(out, 2)
            dirs = [checkpoint(comp)] + [checkpoint_after(comp, out, 2) for _ in range(3)]
            parents = [manifest(d)["parents"] for d in dirs]
            if parents != [[], [1], [2], [3]]:
                fail(f"generations 1-4 build on {parents}, expected [], [1], [2], [3]")
            full, increment = image_of(dirs[0]).stat().st_size, image_of(dirs[1]).stat().st_size
            print(f"full image {full} bytes, first increment {increment} bytes "
                  f"({100 * increment / full:.1f}%)")
            if increment > full / 10:
                fail(f"the first increment is {increment} bytes, more than 10% of the full {full}")
            if generations(comp) != [1, 2, 3, 4]:
                fail(f"--keep 2 with 4 depending on 3, 2, 1 left {generations(comp)}")
            dirs += [checkpoint_after(comp, out, 2) for _ in range(2)]
            if [manifest(d)["parents"] for d in dirs[4:]] != [[], [5]]:
                fail("generation 5 (after 3 increments) is not full, or 6 does not build on it")
            if generations(comp) != [5, 6]:
                fail(f"--keep 2 after a new full generation left {generations(comp)}, expected [5, 6]")
            kill(proc)
            restarted = comp.run("restart", str(comp.ckpt), timeout=180)
            if restarted.returncode != reference.returncode:
                fail(f"restart from the newest increment exited {restarted.returncode}: {restarted.stderr}")
            if out.read_text() != reference.stdout:
                fail("output after a restart from an increment differs from an uninterrupted run")
        finally:
            comp.cleanup()


def older_generation_and_damage(stasis):
    args = program_args(2)
    reference = reference_run(args)
    with tempfile.TemporaryDirectory() as tmp:
        comp = Computation(stasis, tmp)
        out = Path(tmp, "out")
        try:
            proc = launch(comp, out, args, "--incremental")  # zstd, the default
            wait_lines(out, 2)
            dirs = [checkpoint(comp)] + [checkpoint_after(comp, out, 2) for _ in range(2)]
            if [manifest(d)["parents"] for d in dirs] != [[], [1], [2]]:
                fail("generations 1-3 are not a full image and two increments")
            kill(proc)
            restarted = comp.run("restart", str(dirs[1]), timeout=180)
            if restarted.returncode != reference.returncode or out.read_text() != reference.stdout:
                fail(f"a restart from generation 2 (an increment) differs: {restarted.stderr}")
            parent = image_of(dirs[0])
            data = bytearray(parent.read_bytes())
            data[len(data) // 2] ^= 0x40
            parent.write_bytes(bytes(data))
            refused = comp.run("restart", str(dirs[2]))
            if refused.returncode == 0 or str(parent) not in refused.stderr or "corrupt" not in refused.stderr:
                fail(f"a restart over a damaged parent image was not refused naming it: {refused.stderr!r}")
            print(f"refused: {refused.stderr.strip()}")
            parent.unlink()
            refused = comp.run("restart", str(dirs[1]))
            if refused.returncode == 0 or str(parent) not in refused.stderr:
                fail(f"a restart without its parent image was not refused naming it: {refused.stderr!r}")
        finally:
            comp.cleanup()


def main(stasis, program):
    global PROGRAM
    PROGRAM = program
    chains_and_keep(stasis)
    older_generation_and_damage(stasis)
    print("PASS incremental_checks")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
