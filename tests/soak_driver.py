#!/usr/bin/python3
"""Back-to-back checkpoint soak for Stasis: no checkpoint may lose the computation or a child.

One invocation:
  1. runs the program once without Stasis (the reference output and exit status),
  2. launches it under Stasis and, once --wait-lines progress lines are out, runs N/2 live
     checkpoints back to back (`stasis checkpoint`, each started as soon as the previous ended),
  3. after each one checks that the program still runs (a program that ended, or printed a
     line matching --lost-regex, is a lost computation or a lost child),
  4. kills it with SIGKILL and restarts it from the newest successful checkpoint, then runs the
     other N/2 checkpoints on the restarted computation (which translates virtual pids),
  5. kills and restarts it again and lets it run to completion: the output must equal the
     reference's and so must the exit status,
  6. requires at least --min-success of the checkpoints to have succeeded.

The program is told (STASIS_SOAK_FINISH_FILE=soak.finish) to go on working silently after its
last progress line until that file exists in its working directory: the driver makes the file at
once for the reference and only before the final restart for the soaked run, so the computation
outlives the checkpoints however fast or slow this machine forks, while its output stays the
reference's. A program that ignores the variable must simply be long enough.

It prints the figures (checkpoints done and failed, each distinct failure message, checkpoints
per second) on one `SOAK` line, which bench/fork_soak.py reads. Exit status: 0 pass, 1 fail.
It reuses tests/ckpt_driver.py's environment (private coordinator, temp dir, cleanup) and its
comparison of a restarted run's output with the reference.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ckpt_driver as cd  # noqa: E402


FINISH_VARIABLE = "STASIS_SOAK_FINISH_FILE"
FINISH_FILE = "soak.finish"


class Soak(cd.Scenario):
    def soak_phase(self, proc: cd.Proc, count: int, first: int) -> tuple[Path, int] | None:
        """`count` back-to-back checkpoints of the running `proc`; the newest good generation and
        the lines printed before it began."""
        a = self.a
        lost = re.compile(a.lost_regex.encode())
        newest = None
        for i in range(first, first + count):
            before = proc.program_output().count(b"\n")
            rc, out, err, secs = cd.run_cmd([a.stasis, "checkpoint"], self.env.env(), self.env.tmp,
                                            a.ckpt_timeout)
            proc.pump()
            if rc == 0:
                self.succeeded += 1
                printed = [l.strip() for l in out.splitlines() if l.strip()]
                newest = (Path(printed[-1]), before)
            else:
                text = (err or out).strip()
                # One message per kind: pids and generation numbers vary from one to the next.
                self.failures[re.sub(r"\d+", "N", text.splitlines()[-1] if text else f"exit {rc}")] += 1
                if sum(self.failures.values()) <= 5:
                    cd.log(f"checkpoint {i + 1} failed ({secs:.2f} s): {text}")
            bad = [l for l in proc.program_output().splitlines() if lost.search(l)]
            if bad:
                raise cd.TestFailure(f"after {i + 1} checkpoints the program reported a lost child: "
                                     f"{bad[0].decode(errors='replace')} ({len(bad)} such lines)")
            if proc.poll() is not None:
                proc.join_output()
                last_line = self.reference.splitlines(keepends=True)[-1]
                if proc.poll() == self.reference_rc and proc.program_output().endswith(last_line):
                    raise cd.TestFailure(f"the program completed after {i + 1} checkpoints, before the "
                                         f"soak's end: give it more work")
                raise cd.TestFailure(f"the computation was lost: {proc.name} ended with status "
                                     f"{cd.status_text(proc.poll())} after {i + 1} checkpoints "
                                     f"(stderr:\n{cd.tail_text(proc.stderr_bytes())})")
        return newest

    def restart_from(self, proc: cd.Proc, newest: tuple[Path, int] | None, index: int) -> cd.Proc:
        if newest is None:
            raise cd.TestFailure(f"no checkpoint of {proc.name} succeeded: {dict(self.failures)}")
        gen, before = newest
        self.generations.append(gen)
        proc.kill()
        cd.log(f"killed {proc.name} (pid {proc.pid}); restarting from {gen.name}")
        self.segments.append(cd.Segment(proc.name, proc.stdout_bytes(), before))
        p = self.restart(gen, index)
        self.seg_procs.append(p)
        return p

    def wait_running(self, proc: cd.Proc) -> None:
        """Until the restarted `proc` shows it runs: a new progress line, or a hold round on
        stderr once its progress lines are all out."""
        lines = self.lines_of(proc)
        self.wait_until(proc, lambda: self.lines_of(proc) > lines or b"hold round" in proc.stderr_bytes(),
                        "a progress line or a hold round after the restart")

    def soak(self) -> dict:
        """Half the checkpoints before a restart (no pid table), half after it (virtual pids)."""
        a = self.a
        self.env.base_env[FINISH_VARIABLE] = FINISH_FILE
        (self.env.ref_dir / FINISH_FILE).touch()
        self.run_reference()
        self.env.start_coordinator()
        argv = [a.stasis, "launch", "--", *self.prog_argv(self.env.run_dir)]
        proc = self.env.start("launch", argv, self.env.run_dir, self.env.env(),
                              self.stdout_path(self.env.run_dir, "launch"))
        self.seg_procs.append(proc)
        cd.log(f"launched pid {proc.pid}: {' '.join(argv[1:])}")
        self.wait_progress(proc, a.wait_lines)
        self.failures: collections.Counter[str] = collections.Counter()
        self.succeeded = 0
        started = time.monotonic()
        half = a.checkpoints // 2
        newest = self.soak_phase(proc, half, 0)
        restarted = self.restart_from(proc, newest, 1)
        self.wait_running(restarted)
        newest = self.soak_phase(restarted, a.checkpoints - half, half)
        elapsed = time.monotonic() - started
        ok = self.succeeded
        figures = {"checkpoints": a.checkpoints, "succeeded": ok, "failed": a.checkpoints - ok,
                   "success_ratio": round(ok / a.checkpoints, 4), "seconds": round(elapsed, 1),
                   "checkpoints_per_second": round(a.checkpoints / elapsed, 2),
                   "failures": dict(self.failures.most_common())}
        cd.log(f"{ok} of {a.checkpoints} checkpoints succeeded in {elapsed:.1f} s "
               f"(a restart after the first {half})")
        (self.env.run_dir / FINISH_FILE).touch()
        last = self.restart_from(restarted, newest, 2)
        self.final_rc = last.wait(a.timeout, "restarted program running to completion")
        self.segments.append(cd.Segment(last.name, last.stdout_bytes()))
        self.compare()
        figures["restart_output_equal"] = True
        print("SOAK " + json.dumps(figures), flush=True)
        if ok / a.checkpoints < a.min_success:
            raise cd.TestFailure(f"only {ok} of {a.checkpoints} checkpoints succeeded "
                                 f"(at least {a.min_success:.0%} must): {dict(self.failures)}")
        return figures


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stasis", required=True, help="path of the stasis binary")
    ap.add_argument("--name", default="soak", help="test name (for messages and temp dir)")
    ap.add_argument("--checkpoints", type=int, default=150, help="back-to-back live checkpoints")
    ap.add_argument("--min-success", type=float, default=0.99, help="share of checkpoints that must succeed")
    ap.add_argument("--wait-lines", type=int, default=3, help="progress lines before the first checkpoint")
    ap.add_argument("--progress-regex", default=r"^step ", help="what a progress line looks like")
    ap.add_argument("--lost-regex", default=r"^LOST ", help="a program's line that reports a lost child")
    ap.add_argument("--timeout", type=float, default=120, help="limit for a whole program run")
    ap.add_argument("--step-timeout", type=float, default=30, help="limit for each wait")
    ap.add_argument("--ckpt-timeout", type=float, default=40, help="limit for `stasis checkpoint`")
    ap.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS")
    a = ap.parse_args(argv)
    if a.program and a.program[0] == "--":
        a.program = a.program[1:]
    if not a.program:
        ap.error("no program given")
    if "/" in a.program[0]:
        a.program[0] = os.path.abspath(a.program[0])
    if "/" in a.stasis:
        a.stasis = os.path.abspath(a.stasis)
    # What ckpt_driver.Scenario reads and a soak does not vary.
    a.mode, a.stdin_after, a.wait_regex, a.restart_from, a.restart_arg = "pipe", None, None, "gen", []
    a.restart_cwd, a.compare_file, a.append_file, a.between_lines = "same", [], [], 0
    return a


def main(argv=None) -> int:
    a = parse_args(argv)
    s = Soak(a)
    keep = os.environ.get("STASIS_TEST_KEEP") == "1"
    t0 = time.monotonic()
    try:
        s.soak()
        return 0
    except cd.TestFailure as e:
        s.report(str(e))
        return 1
    finally:
        s.env.cleanup(keep)
        cd.log(f"{a.name} took {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
