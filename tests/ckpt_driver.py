#!/usr/bin/python3
"""Checkpoint-kill-restart driver for Stasis end-to-end tests.

One invocation runs one test case:

  1. makes a temporary directory (STASIS_RUNTIME_DIR lives in it, so secrets never touch $HOME),
  2. runs the program once WITHOUT Stasis (the reference) to learn its exact output and status,
  3. starts `stasis coordinator --port 0 --port-file F --ckpt-dir D --daemon --exit-when-idle`,
  4. `stasis launch -- PROG ARGS` with stdout a regular file (--mode file) or a pipe (--mode pipe),
  5. waits for N progress lines (or a regex), runs `stasis checkpoint` (checking the directory it
     prints), optionally more checkpoints, then kills the program (SIGKILL or `checkpoint --kill`),
  6. `stasis restart` (a generation, the root, $STASIS_CKPT_DIR or ./stasis-ckpt; same or other
     cwd), optionally checkpointing and killing the restarted program again (a chain),
  7. compares: file mode: the final stdout file equals the reference byte for byte; pipe mode:
     launch output up to the first line the restart printed + the restart's output equals the
     reference (and the restart did not repeat lines printed before the checkpoint began). The
     final exit status must equal the reference's. Extra files are compared too.

On failure it prints a diff, the tails of every output, the stderr of every process and the
coordinator's log. It always cleans up: processes carrying this test's marker in their
environment are killed by pid, `stasis kill` is sent, the temporary directory is removed
(kept when STASIS_TEST_KEEP=1).

`--plain` runs the reference twice and compares (checks the target's determinism and this
driver without Stasis); `--selftest` checks the comparison logic on synthetic data.
Exit status: 0 pass, 1 fail, 77 skipped (ctest SKIP_RETURN_CODE).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

# The driver's parts (driver_output.py, driver_processes.py), also used through this module by
# soak_driver.py and cli_checks.py.
from driver_output import (Segment, TestFailure, check_append_file, log, merge_segments, split_lines, status_text,
                           tail_text, unified_diff)
from driver_processes import Env, Proc, count_matching, free_port, run_cmd

__all__ = ["Env", "Proc", "Scenario", "Segment", "TestFailure", "count_matching", "free_port", "log", "run_cmd",
           "status_text", "tail_text"]

GEN_RE = re.compile(r"^\d{6}$")


def selftest() -> int:
    ref = b"".join(b"step %d\n" % i for i in range(1, 11)) + b"done\n"
    L = split_lines(ref)
    j = lambda ls: b"".join(ls)
    cases = [
        # (segments, expect_ok)
        ([Segment("launch", ref)], True),
        ([Segment("launch", j(L[:6]), 4), Segment("restart", j(L[4:]))], True),  # re-prints 5,6
        ([Segment("launch", j(L[:6]), 6), Segment("restart", j(L[6:]))], True),
        ([Segment("launch", j(L[:6]), 5), Segment("restart", j(L[3:]))], False),  # repeats pre-ckpt
        ([Segment("launch", j(L[:6]), 4), Segment("restart", j(L[5:-1]))], False),  # truncated
        ([Segment("launch", j(L[:6]), 4), Segment("restart", j(L[6:7] + L[8:]))], False),  # gap
        ([Segment("launch", j(L[:6]), 4), Segment("restart", j(L[3:]))], False),
        ([Segment("l", j(L[:4]), 2), Segment("r1", j(L[3:7]), 2), Segment("r2", j(L[5:]))], True),
        ([Segment("l", j(L[:4]), 2), Segment("r1", j(L[3:7]), 3), Segment("r2", j(L[5:]))], False),
        ([Segment("l", j(L[:4]), 2), Segment("r1", j(L[3:7]), 2), Segment("r2", b"")], False),
        ([Segment("launch", j(L[:6]), 4), Segment("restart", j(L[6:]).replace(b"step 9", b"step 8"))], False),
        ([Segment("launch", j(L[:6]), None), Segment("restart", j(L[2:]))], True),
        # a cut inside a line: "step 5" was out before the checkpoint, its newline after it
        ([Segment("launch", j(L[:4]) + b"step 5", 4), Segment("restart", b"\n" + j(L[5:]))], True),
        ([Segment("launch", j(L[:6]), 4), Segment("restart", j(L[4:])[3:])], True),
        ([Segment("launch", j(L[:6]), 4), Segment("restart", j(L[4:])[3:].replace(b"step 7\n", b""))], False),  # gap
        ([Segment("launch", j(L[:6]), 4), Segment("restart", j(L[3:])[3:])], False),  # before lo
        ([Segment("l", j(L[:4]), 2), Segment("r1", j(L[2:7]) + b"st", 5), Segment("r2", j(L[7:])[2:])], True),
    ]
    failures = 0
    for n, (segs, want) in enumerate(cases):
        ok, _, why = merge_segments(ref, segs)
        if ok != want:
            failures += 1
            print(f"selftest merge case {n}: got {ok} want {want} ({why})")
    app_cases = [
        (ref, True), (j(L[:7] + L[5:]), True), (j(L[:7] + L[6:]), True), (j(L[:7] + L[8:]), False),
        (j(L[:7]), False), (j(L[:3] + L[5:]), False), (j(L + L[-2:]), True),
    ]
    for n, (data, want) in enumerate(app_cases):
        ok, why = check_append_file(ref, data)
        if ok != want:
            failures += 1
            print(f"selftest append case {n}: got {ok} want {want} ({why})")
    # the process helper: pipe capture, stdin feeding and exit status
    with tempfile.TemporaryDirectory() as td:
        p = Proc("sh", ["/bin/sh", "-c", "echo ready; read x; echo got $x; exit 3"], cwd=td,
                 env=dict(os.environ), stdout_file=None, stdin_feed=(re.compile(rb"ready"), b"hi\n"))
        rc = p.wait(10)
        if rc != 3 or p.stdout_bytes() != b"ready\ngot hi\n":
            failures += 1
            print(f"selftest proc: rc {rc} out {p.stdout_bytes()!r}")
    print(f"selftest: {len(cases) + len(app_cases) + 1 - failures} passed, {failures} failed")
    return 1 if failures else 0


# ----------------------------------------------------------------------------------------------
# The checkpoint-restart scenario
# ----------------------------------------------------------------------------------------------

class Scenario:
    def __init__(self, args):
        self.a = args
        self.progress = re.compile(args.progress_regex.encode())
        self.wait_regex = re.compile(args.wait_regex.encode()) if args.wait_regex else None
        self.stdin_feed = (re.compile(args.stdin_after.encode()), args.stdin_data.encode().decode("unicode_escape").encode()) \
            if args.stdin_after else None
        self.env = Env(args.stasis, args.name)
        self.reference: bytes = b""
        self.reference_rc: int | None = None
        self.segments: list[Segment] = []
        self.seg_procs: list[Proc] = []
        self.generations: list[Path] = []
        self.notes: list[str] = []
        self.actual_final: bytes | None = None
        self.final_rc: int | None = None

    def prog_argv(self, workdir: Path) -> list[str]:
        return [s.replace("{dir}", str(workdir)) for s in self.a.program]

    def stdout_path(self, workdir: Path, label: str) -> Path | None:
        return workdir / f"{label}.stdout" if self.a.mode == "file" else None

    # -- waiting ---------------------------------------------------------------------------
    def wait_until(self, proc: Proc, cond, what: str, timeout: float | None = None) -> None:
        timeout = timeout or self.a.step_timeout
        deadline = time.monotonic() + timeout
        while True:
            proc.pump()
            if cond():
                return
            rc = proc.poll()
            if rc is not None:
                proc.join_output()
                if cond():
                    return
                raise TestFailure(f"{proc.name} (pid {proc.pid}) exited with status {status_text(rc)} before {what}")
            if time.monotonic() > deadline:
                raise TestFailure(f"timed out after {timeout:.0f} s waiting for {what} from {proc.name}")
            time.sleep(0.02)

    def lines_of(self, proc: Proc) -> int:
        return count_matching(proc.program_output(), self.progress)

    def wait_progress(self, proc: Proc, n: int) -> None:
        if self.wait_regex is not None and proc is self.seg_procs[0]:
            self.wait_until(proc, lambda: self.wait_regex.search(proc.program_output()) is not None,
                            f"output matching /{self.a.wait_regex}/")
            return
        self.wait_until(proc, lambda: self.lines_of(proc) >= n,
                        f"{n} progress lines matching /{self.a.progress_regex}/")

    # -- steps -----------------------------------------------------------------------------
    def run_reference(self) -> None:
        p = self.env.start("reference", self.prog_argv(self.env.ref_dir), self.env.ref_dir,
                           self.env.env(), self.stdout_path(self.env.ref_dir, "reference"), self.stdin_feed,
                           tty=self.a.mode == "tty")
        # The reference is not what is tested: twice the limit, so that a loaded machine slowing
        # the program down does not fail a test that a hang of Stasis's would.
        rc = p.wait(2 * self.a.timeout, "reference run without stasis")
        self.reference = p.stdout_bytes()
        self.reference_rc = rc
        log(f"reference: exit status {rc}, {len(self.reference)} bytes, "
            f"{count_matching(self.reference, self.progress)} progress lines, {p.ended - p.started:.1f} s")
        if not self.reference:
            raise TestFailure("the reference run printed nothing: check the program and its arguments")
        if p.stderr_bytes():
            log("reference stderr:\n" + tail_text(p.stderr_bytes()))

    def checkpoint(self, proc: Proc, kill: bool = False) -> tuple[Path, int]:
        # Complete lines that exist before the checkpoint begins: a correct restart never prints
        # them again (pipe mode checks that).
        before = proc.program_output().count(b"\n")
        argv = [self.a.stasis, "checkpoint"]
        if kill:
            argv.append("--kill")
        if self.a.checkpoint_compress:
            argv += ["--compress", self.a.checkpoint_compress]
        rc, out, err, secs = run_cmd(argv, self.env.env(), self.env.tmp, self.a.ckpt_timeout)
        if rc != 0:
            raise TestFailure(f"`{' '.join(argv[1:])}` exited {rc}: {(err or out).strip()}")
        printed = [l.strip() for l in out.splitlines() if l.strip()]
        if not printed:
            raise TestFailure(f"`stasis checkpoint` printed nothing on stdout (stderr: {err.strip()!r})")
        gen = Path(printed[-1])
        if not gen.is_absolute():
            gen = self.env.tmp / gen
        problems = []
        if not gen.is_dir():
            problems.append(f"{gen} is not a directory")
        else:
            if not (gen / "MANIFEST.json").is_file():
                problems.append("no MANIFEST.json in it")
            if not list(gen.glob("*.stasis")):
                problems.append("no *.stasis image in it")
            if not GEN_RE.match(gen.name):
                problems.append(f"name {gen.name!r} is not a 6-digit generation")
            if gen.resolve().parent != self.env.ckpt_dir.resolve():
                problems.append(f"not directly under the checkpoint root {self.env.ckpt_dir}")
            latest = self.env.ckpt_dir / "latest"
            if not latest.is_symlink():
                problems.append(f"{latest} is not a symlink")
            elif Path(os.readlink(latest)).name != gen.name:
                problems.append(f"latest -> {os.readlink(latest)}, not {gen.name}")
            if self.generations and gen.name <= self.generations[-1].name:
                problems.append(f"generation {gen.name} does not follow {self.generations[-1].name}")
        if problems:
            raise TestFailure(f"`stasis checkpoint` printed {printed[-1]!r}: " + "; ".join(problems))
        self.generations.append(gen)
        size = sum(f.stat().st_size for f in gen.glob("*.stasis"))
        log(f"checkpoint {gen.name} of {proc.name} in {secs:.2f} s ({size} image bytes; "
            f"{before} lines before it)")
        return gen, before

    def kill_segment(self, proc: Proc, use_ckpt_kill: bool) -> tuple[Path, int]:
        """Takes the checkpoint(s) for this segment and ends the process; returns the generation
        to restart from and the number of lines printed before that checkpoint began."""
        if self.a.interval or self.a.coordinator_interval:
            return self.interval_wait_and_kill(proc)
        gen = before = None
        for i in range(self.a.checkpoints):
            if i > 0:
                target = self.lines_of(proc) + self.a.between_lines
                self.wait_progress(proc, target)
            last = i == self.a.checkpoints - 1
            gen, before = self.checkpoint(proc, kill=use_ckpt_kill and last)
        if use_ckpt_kill:
            rc = proc.wait(self.a.step_timeout, "after `stasis checkpoint --kill`")
            self.notes.append(f"{proc.name} ended with status {rc} after checkpoint --kill")
            log(f"{proc.name} ended with status {rc} after checkpoint --kill")
        else:
            proc.kill()
            log(f"killed {proc.name} (pid {proc.pid}) with SIGKILL")
        return gen, before

    def complete_generations(self) -> list[Path]:
        if not self.env.ckpt_dir.is_dir():
            return []
        return sorted(p for p in self.env.ckpt_dir.iterdir()
                      if GEN_RE.match(p.name) and p.is_dir() and not p.is_symlink()
                      and (p / "MANIFEST.json").is_file())

    def interval_wait_and_kill(self, proc: Proc) -> tuple[Path, int | None]:
        how = (f"`launch --interval {self.a.interval}`" if self.a.interval
               else f"`coordinator --interval {self.a.coordinator_interval}`")
        self.wait_until(proc, lambda: len(self.complete_generations()) >= 2, f"two complete generations from {how}")
        proc.kill()
        gens = self.complete_generations()
        newest = gens[-1]
        latest = self.env.ckpt_dir / "latest"
        if not latest.is_symlink() or Path(os.readlink(latest)).name != newest.name:
            target = os.readlink(latest) if latest.is_symlink() else "(missing)"
            raise TestFailure(f"after interval checkpoints {', '.join(g.name for g in gens)}, "
                              f"latest -> {target}, expected {newest.name}")
        log(f"interval checkpoints: {', '.join(g.name for g in gens)}; killed {proc.name}")
        self.generations.append(newest)
        return newest, None

    def restart(self, gen: Path, index: int) -> Proc:
        how = self.a.restart_from
        argv = [self.a.stasis, "restart", *self.a.restart_arg]
        ckpt_env = True
        cwd = self.env.other_dir if self.a.restart_cwd == "other" else self.env.run_dir
        if how == "gen":
            argv.append(gen)
        elif how == "root":
            argv.append(self.env.ckpt_dir)
        elif how == "env":
            pass  # STASIS_CKPT_DIR
        elif how == "default":
            ckpt_env = False  # ./stasis-ckpt relative to cwd
            cwd = self.env.tmp
        if how in ("root", "env", "default"):
            latest = self.env.ckpt_dir / "latest"
            if not latest.is_symlink() or Path(os.readlink(latest)).name != gen.name:
                raise TestFailure(f"restart from the root would not pick {gen.name}: latest -> "
                                  f"{os.readlink(latest) if latest.is_symlink() else '(missing)'}")
        name = f"restart{index}"
        p = self.env.start(name, argv, cwd, self.env.env(ckpt_env=ckpt_env),
                           self.stdout_path(self.env.tmp, name), self.stdin_feed, tty=self.a.mode == "tty")
        if self.a.mode == "file":
            p.watch_file = self.env.run_dir / "launch.stdout"
        log(f"started `{' '.join(str(w) for w in ['stasis', *argv[1:]])}` in {cwd} as pid {p.pid}")
        return p

    def bad_image_checks(self, gen: Path) -> None:
        images = sorted(gen.glob("*.stasis"), key=lambda f: f.stat().st_size)
        image = images[-1]
        rc, out, err, _ = run_cmd([self.a.stasis, "inspect", image], self.env.env(), self.env.tmp, 60)
        if rc != 0:
            raise TestFailure(f"`stasis inspect` on the good image {image} exited {rc}: {(err or out).strip()}")
        for case in self.a.bad_image:
            bad_root = self.env.tmp / f"bad-{case}"
            bad_gen = bad_root / gen.name
            shutil.copytree(gen, bad_gen, symlinks=True)
            bad_img = bad_gen / image.name
            data = bytearray(image.read_bytes())
            if case == "corrupt":
                where = self.memory_record_offset(image, len(data))
                for i in range(where, min(where + 64, len(data))):
                    data[i] ^= 0xA5
                how = f"flipped 64 bytes at offset {where} of {len(data)}"
                expect = r"checksum|corrupt"
            elif case == "truncated":
                data = data[: len(data) // 2]
                how = f"cut at {len(data)} bytes"
                expect = r"truncat"
            elif case == "foreign":
                data = bytearray(Path("/bin/ls").read_bytes())
                how = "replaced by /bin/ls"
                expect = r"not a stasis image"
            elif case == "empty":
                data = bytearray()
                how = "emptied"
                expect = r"not a stasis image|truncat|empty"
            else:
                raise TestFailure(f"unknown bad-image case {case}")
            bad_img.write_bytes(bytes(data))
            log(f"bad image '{case}': {image.name} {how}")
            rx = re.compile(expect, re.I)
            for what, argv in (("inspect", [self.a.stasis, "inspect", bad_img]),
                               ("restart", [self.a.stasis, "restart", bad_gen])):
                rc, out, err, _ = run_cmd(argv, self.env.env(), self.env.other_dir, 60)
                msg = (err + out).strip()
                if rc == 0:
                    raise TestFailure(f"`stasis {what}` on the {case} image exited 0 ({how}); output: {msg!r}")
                if not rx.search(msg):
                    raise TestFailure(f"`stasis {what}` on the {case} image exited {rc} but its message does "
                                      f"not match /{expect}/i: {msg!r}")
                if count_matching(out.encode(), self.progress):
                    raise TestFailure(f"`stasis restart` of the {case} image ran the program: {out!r}")
                log(f"  {what}: exit {rc}: {msg.splitlines()[-1] if msg else ''}")

    def memory_record_offset(self, image: Path, size: int) -> int:
        """Middle of the largest memory record per `inspect --json` if it tells file offsets,
        else the middle of the file."""
        try:
            rc, out, _, _ = run_cmd([self.a.stasis, "inspect", "--json", image], self.env.env(), self.env.tmp, 60)
            doc = json.loads(out) if rc == 0 else None
        except (TestFailure, ValueError):
            doc = None
        best = None

        def walk(node):
            nonlocal best
            if isinstance(node, dict):
                off = next((node[k] for k in ("file_offset", "data_offset", "offset") if isinstance(node.get(k), int)), None)
                ln = next((node[k] for k in ("stored_size", "data_size", "stored_bytes", "compressed_size", "size", "length", "bytes")
                           if isinstance(node.get(k), int)), None)
                if off is not None and ln and 0 < off < size and off + ln <= size and (best is None or ln > best[1]):
                    best = (off, ln)
                for v in node.values():
                    walk(v)
            elif isinstance(node, list):
                for v in node:
                    walk(v)
        walk(doc)
        if best:
            return best[0] + best[1] // 2
        return size // 2

    def run(self) -> None:
        a = self.a
        self.run_reference()
        self.env.start_coordinator(["--interval", str(a.coordinator_interval)] if a.coordinator_interval else [])
        launch_argv = [a.stasis, "launch"]
        if a.compress:
            launch_argv += ["--compress", a.compress]
        if a.interval:
            launch_argv += ["--interval", str(a.interval)]
        launch_argv += a.launch_arg
        launch_argv += ["--", *self.prog_argv(self.env.run_dir)]
        proc = self.env.start("launch", launch_argv, self.env.run_dir, self.env.env(),
                              self.stdout_path(self.env.run_dir, "launch"), self.stdin_feed, tty=self.a.mode == "tty")
        self.seg_procs.append(proc)
        log(f"launched pid {proc.pid}: {' '.join(launch_argv[1:])}")
        self.wait_progress(proc, a.wait_lines)
        if a.expect_refusal:
            return self.refusal(proc)
        use_ckpt_kill = a.kill == "ckpt-kill"
        gen, before = self.kill_segment(proc, use_ckpt_kill)
        self.segments.append(Segment("launch", proc.stdout_bytes(), before))

        if a.max_image_mb is not None:
            size = sum(f.stat().st_size for f in gen.glob("*.stasis")) / 2**20
            if size > a.max_image_mb:
                raise TestFailure(f"generation {gen.name} holds {size:.1f} MiB of images, more than {a.max_image_mb} MiB")
            log(f"images of {gen.name}: {size:.1f} MiB (limit {a.max_image_mb} MiB)")
        if a.bad_image:
            self.bad_image_checks(gen)

        for i in range(1, a.chain + 1):
            if a.before_restart:
                self.before_restart()
            p = self.restart(gen, i)
            self.seg_procs.append(p)
            if i < a.chain:
                # checkpoint the restarted program again, then kill it and restart from there
                target = self.lines_of(p) + a.between_lines
                self.wait_progress(p, target)
                gen, before = self.kill_segment(p, use_ckpt_kill)
                self.segments.append(Segment(p.name, p.stdout_bytes(), before))
            else:
                rc = p.wait(a.timeout, "restarted program running to completion")
                self.segments.append(Segment(p.name, p.stdout_bytes()))
                self.final_rc = rc
        self.compare()
        if a.restart_stderr:
            self.check_restart_stderr()
        if a.after_check:
            self.after_check()
        if a.restart_twice:
            self.restart_again(gen)

    def run_shell_option(self, option: str, cmd: str) -> None:
        """Runs the shell command given with `option` in the run dir; a failure fails the test."""
        cmd = cmd.replace("{dir}", str(self.env.run_dir))
        rc, out, err, _ = run_cmd(["/bin/sh", "-c", cmd], self.env.env(), self.env.run_dir, self.a.step_timeout)
        if rc != 0:
            raise TestFailure(f"{option} `{cmd}` exited {rc}: {(err + out).strip()}")
        log(f"{option}: ran `{cmd}`")

    def before_restart(self) -> None:
        self.run_shell_option("--before-restart", self.a.before_restart)

    def after_check(self) -> None:
        self.run_shell_option("--after-check", self.a.after_check)

    def check_restart_stderr(self) -> None:
        err = b"".join(p.stderr_bytes() for p in self.seg_procs[1:]).decode("utf-8", "replace")
        if not re.search(self.a.restart_stderr, err, re.M):
            raise TestFailure(f"the restarts' stderr does not match /{self.a.restart_stderr}/:\n" + tail_text(err))
        log(f"restart stderr matches /{self.a.restart_stderr}/")

    def restart_again(self, gen: Path) -> None:
        """Restarting a second time from the same generation gives the same continuation."""
        # (file mode: the second run rewrites the same bytes from the saved offset, so the whole
        # file must still equal the reference)
        first_segment = self.segments[-1]
        p = self.restart(gen, len(self.seg_procs))
        self.seg_procs.append(p)
        rc = p.wait(self.a.timeout, "second restart from the same generation")
        self.segments[-1] = Segment(p.name, p.stdout_bytes())
        self.final_rc = rc
        if self.a.mode != "file" and self.segments[-1].lines != first_segment.lines:
            self.actual_final = None
            raise TestFailure(f"restarting generation {gen.name} a second time printed something else:\n"
                              + unified_diff(first_segment.lines, self.segments[-1].lines))
        self.compare()
        log("second restart from the same generation: same output")

    def refusal(self, proc: Proc) -> None:
        """The program uses something unsupported: `stasis checkpoint` must fail with one line that
        says so, write no complete generation, and leave the program running undisturbed."""
        argv = [self.a.stasis, "checkpoint"]
        rc, out, err, secs = run_cmd(argv, self.env.env(), self.env.tmp, self.a.ckpt_timeout)
        msg_lines = [l for l in (err + out).splitlines() if l.strip()]
        problems = []
        if rc == 0:
            problems.append(f"`stasis checkpoint` exited 0 (printed {out.strip()!r}); expected a refusal")
        elif len(msg_lines) != 1:
            problems.append(f"`stasis checkpoint` exited {rc} with {len(msg_lines)} lines of message, expected one: {msg_lines!r}")
        elif not re.search(self.a.expect_refusal, msg_lines[0], re.I):
            problems.append(f"refusal message does not match /{self.a.expect_refusal}/i: {msg_lines[0]!r}")
        if self.complete_generations():
            problems.append(f"a complete generation was written: {[g.name for g in self.complete_generations()]}")
        if problems:
            raise TestFailure("; ".join(problems))
        log(f"checkpoint refused in {secs:.2f} s: exit {rc}: {msg_lines[0]}")
        self.final_rc = proc.wait(self.a.timeout, "program running on after the refused checkpoint")
        self.segments.append(Segment("launch", proc.stdout_bytes()))
        self.compare()

    def compare(self) -> None:
        a = self.a
        problems = []
        if a.mode in ("pipe", "tty"):
            ok, combined, why = merge_segments(self.reference, self.segments)
            self.actual_final = b"".join(combined)
        else:
            self.actual_final = (self.env.run_dir / "launch.stdout").read_bytes()
            ok = self.actual_final == self.reference
            why = "stdout file equals the reference" if ok else "stdout file differs from the reference"
        if not ok:
            problems.append(why)
        if self.final_rc != self.reference_rc:
            problems.append(f"restarted program exited with status {status_text(self.final_rc)}, "
                            f"reference exited {status_text(self.reference_rc)}")
        for rel in a.compare_file:
            ref_f, run_f = self.env.ref_dir / rel, self.env.run_dir / rel
            rb = ref_f.read_bytes() if ref_f.exists() else None
            ab = run_f.read_bytes() if run_f.exists() else None
            if rb != ab:
                problems.append(f"file {rel} differs from the reference run's "
                                f"({'missing' if ab is None else len(ab)} vs {'missing' if rb is None else len(rb)} bytes)"
                                + ("\n" + unified_diff(split_lines(rb), split_lines(ab), 30) if rb is not None and ab is not None else ""))
        for rel in a.append_file:
            ref_f, run_f = self.env.ref_dir / rel, self.env.run_dir / rel
            if not run_f.exists():
                problems.append(f"append file {rel} missing")
                continue
            aok, awhy = check_append_file(ref_f.read_bytes(), run_f.read_bytes())
            if not aok:
                problems.append(f"{rel}: {awhy}\n" + unified_diff(split_lines(ref_f.read_bytes()),
                                                                  split_lines(run_f.read_bytes()), 30))
        # Every process of the computation proves it belongs to it: none may be refused (a
        # process started after a restart that still used the old coordinator's secret was).
        log_file = self.env.ckpt_dir / "coordinator.log"
        refused = [line for line in (log_file.read_text(errors="replace").splitlines() if log_file.exists() else [])
                   if "refused connection" in line]
        if refused:
            problems.append(f"the coordinator refused {len(refused)} connection(s), e.g. {refused[0].strip()}")
        if problems:
            raise TestFailure("; ".join(problems))
        log(f"PASS: {why}; exit status {self.final_rc} as the reference; "
            f"generations {', '.join(g.name for g in self.generations)}")

    def report(self, failure: str) -> None:
        print("=" * 100)
        print(f"FAIL {self.a.name}: {failure}")
        print(f"command: {' '.join(self.a.program)}   mode: {self.a.mode}")
        if self.reference and self.actual_final is not None:
            print("--- diff (reference vs actual combined output):")
            print(unified_diff(split_lines(self.reference), split_lines(self.actual_final)))
        print("--- reference output (tail):")
        print(tail_text(self.reference))
        for p in self.env.procs:
            if p.name == "reference":
                continue
            print(f"--- {p.name} (pid {p.pid}, status {status_text(p.poll())}) stdout tail:")
            print(tail_text(p.stdout_bytes()))
            err = p.stderr_bytes()
            if err:
                print(f"--- {p.name} stderr tail:")
                print(tail_text(err, 25))
        print("--- checkpoint directory:")
        print(self.env.listing())
        print("--- coordinator:")
        print(self.env.coordinator_log())
        print("=" * 100)


def plain(args) -> int:
    """Runs the program twice without Stasis and checks the output is deterministic."""
    env = Env(None, args.name)
    s = Scenario.__new__(Scenario)
    s.a, s.env = args, env
    s.progress = re.compile(args.progress_regex.encode())
    s.stdin_feed = (re.compile(args.stdin_after.encode()), args.stdin_data.encode().decode("unicode_escape").encode()) \
        if args.stdin_after else None
    try:
        s.run_reference()
        first, first_rc = s.reference, s.reference_rc
        p = env.start("second", s.prog_argv(env.run_dir), env.run_dir, env.env(),
                      s.stdout_path(env.run_dir, "second"), s.stdin_feed, tty=args.mode == "tty")
        rc = p.wait(args.timeout)
        second = p.stdout_bytes()
        problems = []
        if second != first:
            problems.append("output differs between two plain runs:\n" + unified_diff(split_lines(first), split_lines(second)))
        if rc != first_rc:
            problems.append(f"exit status {rc} vs {first_rc}")
        for rel in args.compare_file + args.append_file:
            if (env.ref_dir / rel).read_bytes() != (env.run_dir / rel).read_bytes():
                problems.append(f"file {rel} differs between two plain runs")
        if count_matching(first, s.progress) < args.wait_lines + args.between_lines * max(args.chain, args.checkpoints):
            problems.append(f"only {count_matching(first, s.progress)} progress lines: too few for the scenario")
        if problems:
            print(f"FAIL {args.name} (plain): " + "\n".join(problems))
            return 1
        print(f"PASS {args.name} (plain): deterministic, exit status {rc}, {len(first)} bytes")
        return 0
    except TestFailure as e:
        print(f"FAIL {args.name} (plain): {e}")
        return 1
    finally:
        env.cleanup(keep=False)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stasis", help="path of the stasis binary")
    ap.add_argument("--name", default="ckpt", help="test name (for messages and temp dir)")
    ap.add_argument("--mode", choices=["file", "pipe", "tty"], default="pipe",
                    help="program stdout: a regular file, a pipe, or a pseudo-terminal (compared like a pipe)")
    ap.add_argument("--restart-twice", action="store_true",
                    help="after the final restart, restart from the same generation again: same result (images are not consumed)")
    ap.add_argument("--max-image-mb", type=float, help="the generation restarted from holds at most this many MiB of images")
    ap.add_argument("--progress-regex", default=r"^step ", help="what a progress line looks like")
    ap.add_argument("--wait-lines", type=int, default=10, help="progress lines before the first checkpoint")
    ap.add_argument("--wait-regex", help="instead of --wait-lines: output that must appear before the first checkpoint")
    ap.add_argument("--between-lines", type=int, default=5, help="new progress lines before each further checkpoint")
    ap.add_argument("--checkpoints", type=int, default=1, help="checkpoints per process; restart from the last")
    ap.add_argument("--chain", type=int, default=1, help="number of restarts (each restarted process but the last is checkpointed and killed again)")
    ap.add_argument("--kill", choices=["sigkill", "ckpt-kill"], default="sigkill", help="how the program ends after the checkpoint")
    ap.add_argument("--restart-from", choices=["gen", "root", "env", "default"], default="gen",
                    help="restart PATH: the generation dir, the root, no PATH with $STASIS_CKPT_DIR, no PATH in the root's parent")
    ap.add_argument("--restart-cwd", choices=["same", "other"], default="same", help="cwd of `stasis restart`")
    ap.add_argument("--interval", type=float, default=0, help="launch --interval S; wait for 2 generations instead of checkpointing")
    ap.add_argument("--coordinator-interval", type=float, default=0,
                    help="coordinator --interval S; like --interval, wait for 2 generations instead of checkpointing")
    ap.add_argument("--compress", choices=["zstd", "lz4", "none"], help="launch --compress")
    ap.add_argument("--launch-arg", action="append", default=[], help="one more `stasis launch` option (e.g. --ib=soft); repeatable")
    ap.add_argument("--restart-arg", action="append", default=[], help="one more `stasis restart` option (e.g. --setenv=NAME=VALUE); repeatable")
    ap.add_argument("--checkpoint-compress", choices=["zstd", "lz4", "none"], help="checkpoint --compress")
    ap.add_argument("--stdin-after", help="regex: once output matches, write --stdin-data to the program's stdin and close it")
    ap.add_argument("--stdin-data", default="hello stasis\\n", help="data for --stdin-after (backslash escapes allowed)")
    ap.add_argument("--compare-file", action="append", default=[], help="file (relative to the run dir) that must equal the reference run's")
    ap.add_argument("--append-file", action="append", default=[], help="O_APPEND file: reference with at most one repeated run of lines")
    ap.add_argument("--bad-image", action="append", default=[], choices=["corrupt", "truncated", "foreign", "empty"],
                    help="before restarting, check inspect/restart refuse a damaged copy of the image")
    ap.add_argument("--expect-refusal", metavar="REGEX",
                    help="the checkpoint must be refused (non-zero, one line matching REGEX) and the program run on unharmed")
    ap.add_argument("--before-restart", metavar="CMD", help="shell command run in the run dir after the kill, before each restart ({dir} = the run dir)")
    ap.add_argument("--restart-stderr", metavar="REGEX", help="what the restarts' stderr must contain")
    ap.add_argument("--after-check", metavar="CMD", help="shell command run in the run dir once the outputs compared equal; must exit 0 ({dir} = the run dir)")
    ap.add_argument("--timeout", type=float, default=40, help="limit for a whole program run")
    ap.add_argument("--step-timeout", type=float, default=30, help="limit for each wait")
    ap.add_argument("--ckpt-timeout", type=float, default=40, help="limit for `stasis checkpoint`")
    ap.add_argument("--plain", action="store_true", help="no stasis: run the program twice and compare")
    ap.add_argument("--selftest", action="store_true", help="check the comparison logic and exit")
    ap.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS ({dir} = the run's work dir)")
    a = ap.parse_args(argv)
    if a.program and a.program[0] == "--":
        a.program = a.program[1:]
    if not a.selftest and not a.program:
        ap.error("no program given")
    # the programs run in other directories: make relative paths absolute
    if a.program and "/" in a.program[0] and os.path.exists(a.program[0]):
        a.program[0] = os.path.abspath(a.program[0])
    if a.stasis and "/" in a.stasis:
        a.stasis = os.path.abspath(a.stasis)
    if not a.selftest and not a.plain and not a.stasis:
        ap.error("--stasis is required")
    return a


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.selftest:
        return selftest()
    if a.plain:
        return plain(a)
    if not os.access(a.stasis, os.X_OK):
        print(f"FAIL {a.name}: stasis binary {a.stasis} is missing or not executable (not built yet?)")
        return 1
    s = Scenario(a)
    keep = os.environ.get("STASIS_TEST_KEEP") == "1"
    t0 = time.monotonic()
    try:
        s.run()
        return 0
    except TestFailure as e:
        s.report(str(e))
        return 1
    except KeyboardInterrupt:
        s.report("interrupted")
        return 1
    finally:
        s.env.cleanup(keep)
        log(f"{a.name} took {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
