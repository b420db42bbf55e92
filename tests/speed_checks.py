#!/usr/bin/python3
"""Checkpoint-speed features end to end (issue 6; src/restart/README.md, Progress; docs/performance.md, Checkpoint
directories elsewhere, Incremental checkpoints).

  speed_checks.py STASIS TARGETS_DIR CHECK

progress          `stasis checkpoint` and `stasis restart` of a 192 MiB program draw progress lines
                  (bytes, rate) on a terminal (a pty), and print none when stderr is a pipe; the
                  restarted program's output is unharmed either way.
other_filesystem  the checkpoint root is on another file system than the program's files and
                  working directory (a tmpfs mounted for the test, else /dev/shm; skipped when
                  neither differs): two checkpoints, a kill, a restart: same output as without
                  Stasis.
lazy_restart      `stasis restart --lazy` of an uncompressed image: the program's memory is mapped
                  from the image (it says so), and its output is that of a run without Stasis.
corrupt_index     the record index at the end of a real image (docs/image-format.md, The image
                  format): damaged, `stasis restart`, `restart --lazy` and `inspect` refuse the
                  image naming the index; a record header in the file that differs from the
                  index's copy is refused by a verified restart; the undamaged copy restarts.
zstd_lanes        a zstd checkpoint of mixed_memory stores its arrays of doubles in zstd's lanes
                  form (STASIS_COMPRESS_ZSTD_LANES, `inspect --json` counts the records) and its
                  text records as plain zstd; restarted (every checksum verified) its output is
                  that of a run without Stasis, memory checksums included.
inspect_chain     `stasis inspect` of the third image of an incremental chain shows its parent,
                  the chain (verified), and per region how many bytes come from which
                  generation; with a damaged or missing older image it fails naming it."""
import contextlib
import json
import os
import struct
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e_common import Computation, fail, lines, wait_lines  # noqa: E402


@contextlib.contextmanager
def computation(stasis):
    """A computation of its own in a temporary directory and the path for its program's output;
    ended (`stasis kill`) and removed afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        comp = Computation(stasis, tmp)
        try:
            yield comp, Path(tmp, "out")
        finally:
            comp.cleanup()

SKIP = 77


def checkpoint(comp, *options):
    done = comp.run("checkpoint", *options, timeout=180)
    if done.returncode:
        fail(f"checkpoint failed: {done.stderr.strip()}")
    return Path(done.stdout.strip())


def launch(comp, out, program, *options, cwd=None, stderr=subprocess.DEVNULL):
    with open(out, "w") as o:
        return subprocess.Popen([comp.stasis, "launch", *options, "--", *program], env=comp.env,
                                stdout=o, stderr=stderr, cwd=cwd)


def kill(proc):
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def checkpointed_once(comp, out, program, after_lines, *options, stderr=subprocess.DEVNULL):
    """Launches program, checkpoints it once it printed after_lines lines, kills it; the generation."""
    proc = launch(comp, out, program, *options, stderr=stderr)
    wait_lines(out, after_lines)
    generation = checkpoint(comp)
    kill(proc)
    return generation


def in_pty(argv, env, timeout=240):
    """Runs argv with stdin/stdout/stderr on a new pseudo-terminal; returns (status, text)."""
    pid, master = pty.fork()
    if pid == 0:
        try:
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    text = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every slave end is closed
                break
            if not chunk:
                break
            text += chunk
    else:
        os.kill(pid, signal.SIGKILL)
        fail(f"{argv} did not end within {timeout} s; output so far: {text[-2000:]!r}")
    _, status = os.waitpid(pid, 0)
    os.close(master)
    return status, text.decode(errors="replace")


# "stasis checkpoint: written: 12.3 MiB, 450.1 MiB/s, 0.2 s" redrawn; the last one ends in ", done"
PROGRESS = r"{}: [0-9.]+ (MiB|GiB)[^\r\n]*, [0-9.]+ (MiB|GiB)/s, [0-9.]+ s"


def check_drawn(text, what, at_least_mib):
    """Progress lines for `what` were drawn, and the final one counts at least at_least_mib."""
    if not re.search(PROGRESS.format(what), text):
        fail(f"no '{what}' progress on a terminal: {text!r}")
    final = re.search(r"{}: ([0-9.]+) (MiB|GiB)[^\r\n]*, done".format(what), text)
    if not final:
        fail(f"no final '{what}' progress line: {text!r}")
    mib = float(final.group(1)) * (1024 if final.group(2) == "GiB" else 1)
    if mib < at_least_mib:
        fail(f"'{what}' ends at {mib} MiB, expected at least {at_least_mib}: {text!r}")


def check_progress(stasis, targets):
    # 192 MiB of random bytes, zstd: restart decompresses and streams it (no mapping).
    program = [str(targets / "big_memory"), "192", "60", "100", "0"]
    reference = subprocess.run(program, capture_output=True, text=True, check=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        comp = Computation(stasis, tmp)
        comp.env["STASIS_PROGRESS_DELAY_MS"] = "0"  # draw from the first sample: never too fast to show
        out = Path(tmp, "out")
        try:
            proc = launch(comp, out, program, "--compress", "zstd")
            wait_lines(out, 3, timeout=120)
            status, text = in_pty([stasis, "checkpoint"], comp.env)
            if status != 0:
                fail(f"checkpoint in a pty failed ({status}): {text}")
            check_drawn(text, "stasis checkpoint: written", 150)
            wait_lines(out, len(lines(out)) + 2)
            piped = comp.run("checkpoint", timeout=180)
            if piped.returncode or "written" in piped.stderr or "\r" in piped.stderr:
                fail(f"progress (or a failure) with stderr on a pipe: {piped.stderr!r}")
            generation = Path(piped.stdout.strip())
            kill(proc)

            restart = [stasis, "restart", str(generation)]
            status, text = in_pty(restart, comp.env)
            if status != 0:
                fail(f"restart in a pty failed ({status}): {text}")
            check_drawn(text, "stasis restart: verifying images", 150)
            check_drawn(text, r"stasis restart: process \d+: memory", 150)
            if out.read_text() != reference:
                fail("the output after the restart in a pty differs from a run without Stasis")
            piped = subprocess.run(restart, env=comp.env, capture_output=True, text=True, timeout=240)
            if piped.returncode or "stasis restart:" in piped.stderr or "\r" in piped.stderr:
                fail(f"progress (or a failure) from restart with stderr on a pipe: {piped.stderr!r}")
            if out.read_text() != reference:
                fail("the output after the second restart differs from a run without Stasis")
        finally:
            comp.cleanup()
    print("progress: drawn on a terminal, absent on a pipe")


def file_system(path):
    return os.stat(path).st_dev


def check_other_filesystem(stasis, targets):
    program = [str(targets / "counter"), "60", "50"]
    reference = subprocess.run(program, capture_output=True, text=True, check=True).stdout
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory(dir="/tmp") as work:
        elsewhere = Path(tmp, "tmpfs")
        elsewhere.mkdir()
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m,mode=0700", "stasis-test",
                                  str(elsewhere)], capture_output=True).returncode == 0
        try:
            if not mounted:
                elsewhere = Path(tempfile.mkdtemp(dir="/dev/shm")) if os.path.isdir("/dev/shm") else None
            if elsewhere is None or file_system(elsewhere) == file_system(work):
                print("SKIP: no second file system for the checkpoint root")
                sys.exit(SKIP)
            comp = Computation(stasis, elsewhere)
            out = Path(work, "out")
            try:
                proc = launch(comp, out, program, "--compress", "none", cwd=work)
                wait_lines(out, 10)
                checkpoint(comp)
                wait_lines(out, len(lines(out)) + 5)
                second = checkpoint(comp)
                if file_system(second) == file_system(work):
                    fail(f"{second} is on the program's file system")
                kill(proc)
                if os.readlink(comp.ckpt / "latest") != second.name:
                    fail(f"latest does not name {second.name}")
                done = subprocess.run([stasis, "restart"], env=dict(comp.env, STASIS_CKPT_DIR=str(comp.ckpt)),
                                      cwd=work, capture_output=True, text=True, timeout=120)
                if done.returncode:
                    fail(f"restart failed: {done.stderr}")
                if out.read_text() != reference:
                    fail("the output after the restart differs from a run without Stasis")
            finally:
                comp.cleanup()
        finally:
            if mounted:
                subprocess.run(["umount", "-l", str(Path(tmp, "tmpfs"))])
            elif elsewhere is not None and str(elsewhere).startswith("/dev/shm/"):
                shutil.rmtree(elsewhere, ignore_errors=True)
    print("other_filesystem: checkpoints on another file system restart")


def restarted_to_the_end(comp, generation, out, reference, *options):
    """Restarts generation in the foreground; fails unless the program's output (out) is then
    reference. Returns the finished `stasis restart`."""
    done = subprocess.run([comp.stasis, "restart", *options, str(generation)], env=comp.env,
                          capture_output=True, text=True, timeout=120)
    if done.returncode:
        fail(f"restart {' '.join(options)} failed: {done.stderr}")
    if out.read_text() != reference:
        fail(f"the output after restart {' '.join(options)} differs from a run without Stasis")
    return done


def check_lazy_restart(stasis, targets):
    program = [str(targets / "mapped_madvise"), "30", "100", "16"]
    reference = subprocess.run(program, capture_output=True, text=True, check=True).stdout
    with computation(stasis) as (comp, out):
        # stderr a pipe: inherited from outside, so the restarted program's is restart's own
        generation = checkpointed_once(comp, out, program, 5, "--compress", "none", stderr=subprocess.PIPE)
        done = restarted_to_the_end(comp, generation, out, reference, "--lazy")
        if "buffer mapped from a checkpoint image" not in done.stderr:
            fail(f"restart --lazy did not map the program's memory: {done.stderr}")
    print("lazy_restart: mapped, same output")


def check_zstd_lanes(stasis, targets):
    program = [str(targets / "mixed_memory"), "32", "12", "100"]
    reference = subprocess.run(program, capture_output=True, text=True, check=True).stdout
    with computation(stasis) as (comp, out):
        generation = checkpointed_once(comp, out, program, 3, "--compress", "zstd")
        shown = inspect(stasis, only_image(generation), "--json")
        if shown.returncode:
            fail(f"inspect failed: {shown.stderr}")
        counts = {}
        for region in json.loads(shown.stdout)["regions"]:
            for name, records in region.get("stored_as", {}).items():
                counts[name] = counts.get(name, 0) + records
        if counts.get("zstd-lanes", 0) == 0 or counts.get("zstd", 0) == 0:
            fail(f"expected PAGES records in zstd's lanes form and plain zstd, found {counts}")
        restarted_to_the_end(comp, generation, out, reference)
    print(f"zstd_lanes: PAGES records {counts}, same output after restart")


def index_entries(image_bytes):
    """(offset of the INDEX record, [(record offset, record type)]) from a version 3 image's END."""
    end_payload = image_bytes[-32:]  # StasisEndRecord
    index_offset = struct.unpack_from("<Q", end_payload, 24)[0]
    if index_offset == 0:
        fail("the image has no record index")
    stored = struct.unpack_from("<Q", image_bytes, index_offset + 8)[0]
    entries = []
    for at in range(index_offset + 48, index_offset + 48 + stored, 56):  # StasisIndexEntry
        offset, record_type = struct.unpack_from("<QI", image_bytes, at)
        entries.append((offset, record_type))
    return index_offset, entries


def check_corrupt_index(stasis, targets):
    program = [str(targets / "big_memory"), "32", "200", "100", "0"]
    with computation(stasis) as (comp, out):
        generation = checkpointed_once(comp, out, program, 3, "--compress", "none")
        image = only_image(generation)
        original = image.read_bytes()
        index_offset, entries = index_entries(original)
        pages = [offset for offset, record_type in entries if record_type == 5]  # STASIS_REC_PAGES
        if len(pages) < 8:
            fail(f"the index lists {len(pages)} memory records, expected at least 8 for 32 MiB")

        def refused(damaged, options, expect):
            image.write_bytes(bytes(damaged))
            lines_before = len(lines(out))
            done = subprocess.run([stasis, "restart", *options, str(generation)], env=comp.env,
                                  capture_output=True, text=True, timeout=120)
            if done.returncode == 0 or not re.search(expect, done.stderr):
                fail(f"restart {' '.join(options)} of a damaged image: exit {done.returncode}, "
                     f"stderr {done.stderr!r} (expected /{expect}/)")
            if len(lines(out)) != lines_before:
                fail("the program ran again from a damaged image")

        damaged = bytearray(original)
        damaged[index_offset + 48 + 56 * (len(entries) // 2) + 30] ^= 0x5A  # an entry's header
        for options in ([], ["--lazy"]):
            refused(damaged, options, r"is corrupt: its record index")
        shown = inspect(stasis, image)
        if shown.returncode == 0 or "record index" not in shown.stderr:
            fail(f"inspect accepted an image with a damaged index: {shown.stdout}{shown.stderr}")
        damaged = bytearray(original)
        damaged[pages[len(pages) // 2] + 24] ^= 0x01  # the address in a memory record's header
        refused(damaged, [], r"differs from its copy in the record index")

        image.write_bytes(original)
        wait_for = len(lines(out)) + 2
        restarted = subprocess.Popen([stasis, "restart", "--lazy", str(generation)], env=comp.env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_lines(out, wait_for)
        restarted.kill()
        restarted.wait()
    print("corrupt_index: damaged index and headers refused, the sound image restarts")


def inspect(stasis, image, *options):
    return subprocess.run([stasis, "inspect", str(image), *options], capture_output=True, text=True)


def only_image(generation):
    images = list(generation.glob("*.stasis"))
    if len(images) != 1:
        fail(f"{generation} holds {len(images)} images, expected 1")
    return images[0]


def check_inspect_chain(stasis, targets):
    # 16 MiB, 3% of the pages written per step
    program = [str(targets / "incremental_memory"), "16", "200", "100", "3"]
    with computation(stasis) as (comp, out):
        proc = launch(comp, out, program, "--incremental", "--compress", "none")
        generations = []
        for _ in range(3):
            wait_lines(out, len(lines(out)) + 3)
            generations.append(checkpoint(comp))
        kill(proc)
        newest = only_image(generations[2])
        shown = inspect(stasis, newest)
        if shown.returncode:
            fail(f"inspect of the increment failed: {shown.stderr}")
        expected = [r"parent\s+generation 2 \(\S+\.stasis\), increment depth 2",
                    r"chain\s+gen 3 \(increment\) <- gen 2 \(increment\) <- gen 1 \(full\): every image verified",
                    r"inherited: gen 3: \d+ bytes, (gen 2: \d+ bytes, )?gen 1: \d+ bytes"]
        for pattern in expected:
            if not re.search(pattern, shown.stdout):
                fail(f"inspect does not show /{pattern}/:\n{shown.stdout}")
        described = json.loads(inspect(stasis, newest, "--json").stdout)
        if described.get("parent", {}).get("generation") != 2:
            fail(f"--json has no parent generation 2: {described.get('parent')}")
        if [m["generation"] for m in described.get("chain", [])] != [3, 2, 1]:
            fail(f"--json chain is not 3, 2, 1: {described.get('chain')}")
        inherited = [r for r in described["regions"] if r.get("inherited")]
        if not inherited:
            fail("no region of the increment is inherited")
        for region in inherited:
            total = sum(s["bytes"] for s in region["sources"]) + region["hole_bytes"]
            if total > region["size"] or not region["sources"]:
                fail(f"the sources of {region['start']} do not fit it: {region}")
        if not any({s["generation"] for s in r["sources"]} >= {1, 3} for r in inherited):
            fail("no inherited region takes pages from both generation 3 and generation 1")

        # A damaged oldest image: the chain no longer verifies, and inspect names that image.
        oldest = only_image(generations[0])
        original = oldest.read_bytes()
        damaged = bytearray(original)
        damaged[len(damaged) // 2] ^= 0xFF
        oldest.write_bytes(bytes(damaged))
        refused = inspect(stasis, newest)
        if refused.returncode == 0 or oldest.name not in refused.stderr:
            fail(f"inspect accepted a chain with a damaged {oldest}: {refused.stdout}{refused.stderr}")
        oldest.write_bytes(original)
        middle = only_image(generations[1])
        middle.rename(middle.with_suffix(".away"))
        refused = inspect(stasis, newest)
        if refused.returncode == 0 or middle.name not in refused.stderr:
            fail(f"inspect accepted a chain without {middle}: {refused.stdout}{refused.stderr}")
    print("inspect_chain: parent, chain and sources shown; broken chains refused")


def main():
    stasis, targets, check = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    {"progress": check_progress, "other_filesystem": check_other_filesystem,
     "inspect_chain": check_inspect_chain, "lazy_restart": check_lazy_restart,
     "corrupt_index": check_corrupt_index, "zstd_lanes": check_zstd_lanes}[check](stasis, targets)


if __name__ == "__main__":
    main()
