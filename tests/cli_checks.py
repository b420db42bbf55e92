#!/usr/bin/python3
"""Command-line contract checks for `stasis` that are not a checkpoint-restart cycle.

usage: cli_checks.py --stasis BIN --counter PATH --threads PATH CHECK
CHECK is one of the functions named check_* below (without the prefix). Each one uses its own
temporary directory and STASIS_RUNTIME_DIR (via ckpt_driver.Env) and cleans up after itself."""
from __future__ import annotations

import argparse
import json
import os
import re
import socket
import stat
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ckpt_driver import Env, TestFailure, count_matching, free_port, log, run_cmd, tail_text  # noqa: E402

SUBCOMMANDS = ["coordinator", "launch", "checkpoint", "restart", "status", "kill", "inspect"]
PROGRESS = re.compile(rb"^step ")


def json_find(node, pred) -> list:
    """All (key, value) pairs anywhere in a JSON document for which pred(key, value) holds."""
    found = []
    if isinstance(node, dict):
        for k, v in node.items():
            if pred(k, v):
                found.append((k, v))
            found += json_find(v, pred)
    elif isinstance(node, list):
        for v in node:
            found += json_find(v, pred)
    return found


class Checks:
    def __init__(self, a):
        self.a = a
        self.env: Env | None = None

    def new_env(self, name: str, coordinator: bool = True) -> Env:
        self.env = Env(self.a.stasis, name)
        if coordinator:
            self.env.start_coordinator()
        return self.env

    def stasis(self, *args, env=None, timeout=60, cwd=None):
        e = self.env
        return run_cmd([self.a.stasis, *args], env or e.env(), cwd or e.tmp, timeout)

    def launch_counter(self, steps=200, program=None) -> "object":
        e = self.env
        argv = [self.a.stasis, "launch", "--", *(program or [self.a.counter, str(steps), "50"])]
        p = e.start("launch", argv, e.run_dir, e.env())
        deadline = time.monotonic() + 30
        while count_matching(p.stdout_bytes(), PROGRESS) < 3:
            if p.poll() is not None:
                raise TestFailure(f"launched program exited {p.poll()} early; stderr: {p.stderr_bytes()!r}")
            if time.monotonic() > deadline:
                raise TestFailure("launched program printed no progress within 30 s")
            time.sleep(0.05)
        return p

    # ---------------------------------------------------------------------------------------
    def check_version(self):
        self.new_env("cli.version", coordinator=False)
        rc, out, err, _ = self.stasis("--version")
        if rc != 0 or not re.search(r"\d+\.\d+\.\d+", out + err):
            raise TestFailure(f"`stasis --version` exited {rc}, printed {(out + err)!r}; expected exit 0 and a version x.y.z")
        log(f"--version: {(out + err).strip()}")

    def check_help(self):
        self.new_env("cli.help", coordinator=False)
        problems = []
        rc, out, err, _ = self.stasis("--help")
        if rc != 0:
            problems.append(f"`stasis --help` exited {rc}")
        for sub in SUBCOMMANDS:
            if sub not in out + err:
                problems.append(f"`stasis --help` does not list `{sub}`")
        for sub in SUBCOMMANDS:
            rc, out, err, _ = self.stasis(sub, "--help")
            if rc != 0:
                problems.append(f"`stasis {sub} --help` exited {rc}: {(err or out).strip()[:200]!r}")
            elif not (out + err).strip():
                problems.append(f"`stasis {sub} --help` printed nothing")
        if problems:
            raise TestFailure("; ".join(problems))

    def check_secret_file(self):
        e = self.new_env("cli.secret_file")
        f = e.runtime_dir / f"coordinator-127.0.0.1-{e.port}.secret"
        if not f.is_file():
            raise TestFailure(f"no secret file {f}; runtime dir has {sorted(os.listdir(e.runtime_dir))}")
        mode = stat.S_IMODE(f.stat().st_mode)
        text = f.read_text().strip()
        problems = []
        if mode & 0o077:
            problems.append(f"mode {oct(mode)} is not owner-only")
        if not re.fullmatch(r"[0-9a-fA-F]{64}", text):
            problems.append(f"content is not 64 hex digits ({len(text)} chars)")
        if problems:
            raise TestFailure(f"secret file {f}: " + "; ".join(problems))

    def check_wrong_secret(self):
        e = self.new_env("cli.wrong_secret")
        self.launch_counter()
        rc, out, err, _ = self.stasis("status")
        if rc != 0:
            raise TestFailure(f"`stasis status` with the right secret exited {rc}: {(err or out).strip()}")
        wrong = "0123456789abcdef" * 4
        secret_file = e.runtime_dir / f"coordinator-127.0.0.1-{e.port}.secret"
        if secret_file.exists() and secret_file.read_text().strip() == wrong:
            wrong = "f" * 64
        for cmd in (["status"], ["checkpoint"], ["kill"]):
            rc, out, err, _ = self.stasis(*cmd, env=e.env(STASIS_SECRET=wrong))
            msg = (err + out).strip()
            if rc == 0:
                raise TestFailure(f"`stasis {' '.join(cmd)}` with a wrong STASIS_SECRET exited 0: {msg!r}")
            if "secret" not in msg.lower():
                raise TestFailure(f"`stasis {' '.join(cmd)}` with a wrong secret exited {rc}, but the message "
                                  f"does not mention the secret: {msg!r}")
            log(f"{cmd[0]} with wrong secret: exit {rc}: {msg}")
        gens = [p for p in e.ckpt_dir.glob("[0-9]*") if (p / "MANIFEST.json").exists()] if e.ckpt_dir.exists() else []
        if gens:
            raise TestFailure(f"a checkpoint was written despite the wrong secret: {gens}")
        rc, out, err, _ = self.stasis("status")
        if rc != 0:
            raise TestFailure(f"`stasis status` with the right secret failed after the refused commands "
                              f"(a wrong `kill` must not have killed anything): {(err or out).strip()}")

    def check_status_json(self):
        self.new_env("cli.status_json")
        p = self.launch_counter()
        rc, out, err, _ = self.stasis("status", "--json")
        if rc != 0:
            raise TestFailure(f"`stasis status --json` exited {rc}: {(err or out).strip()}")
        try:
            doc = json.loads(out)
        except ValueError as ex:
            raise TestFailure(f"`stasis status --json` is not JSON ({ex}): {out[:500]!r}")
        pids = json_find(doc, lambda k, v: "pid" in k.lower() and v == p.pid)
        if not pids:
            raise TestFailure(f"`stasis status --json` does not list the launched pid {p.pid}: {out[:1000]}")
        names = json_find(doc, lambda k, v: isinstance(v, str) and "counter" in v)
        if not names:
            raise TestFailure(f"`stasis status --json` does not name the program `counter`: {out[:1000]}")
        rc, out, err, _ = self.stasis("status")
        if rc != 0 or str(p.pid) not in out:
            raise TestFailure(f"plain `stasis status` exited {rc} and/or does not show pid {p.pid}: {out!r}")

    def check_inspect_json(self):
        e = self.new_env("cli.inspect_json")
        self.launch_counter(program=[self.a.threads, "40", "30", "8"])
        rc, out, err, _ = self.stasis("checkpoint")
        if rc != 0:
            raise TestFailure(f"`stasis checkpoint` exited {rc}: {(err or out).strip()}")
        gen = Path(out.strip().splitlines()[-1])
        images = sorted(gen.glob("*.stasis"))
        if not images:
            raise TestFailure(f"no image in {gen}")
        rc, out, err, _ = self.stasis("inspect", str(images[0]))
        if rc != 0 or not out.strip():
            raise TestFailure(f"`stasis inspect IMAGE` exited {rc}: {(err or out).strip()}")
        rc, out, err, _ = self.stasis("inspect", "--json", str(images[0]))
        if rc != 0:
            raise TestFailure(f"`stasis inspect --json` exited {rc}: {(err or out).strip()}")
        try:
            doc = json.loads(out)
        except ValueError as ex:
            raise TestFailure(f"`stasis inspect --json` is not JSON ({ex}): {out[:500]!r}")
        problems = []
        for want, minimum in (("threads", 9), ("regions", 1), ("fds", 3)):
            hits = json_find(doc, lambda k, v: k.lower() == want and isinstance(v, list))
            if not hits:
                problems.append(f"no list named {want!r}")
            elif len(hits[0][1]) < minimum:
                problems.append(f"{want!r} has {len(hits[0][1])} entries, expected at least {minimum}")
        if problems:
            raise TestFailure("`stasis inspect --json` on an 8-thread program: " + "; ".join(problems)
                              + f"; top-level keys: {list(doc) if isinstance(doc, dict) else type(doc).__name__}")

    def check_launch_same_pid(self):
        e = self.new_env("cli.launch_same_pid")
        p = e.start("launch", [self.a.stasis, "launch", "--", "/bin/sh", "-c", "echo $$; exit 7"], e.run_dir, e.env())
        rc = p.wait(30)
        out = p.stdout_bytes().decode().strip()
        if rc != 7:
            raise TestFailure(f"`stasis launch -- sh -c 'exit 7'` exited {rc}, expected 7; stderr: {p.stderr_bytes()!r}")
        if out != str(p.pid):
            raise TestFailure(f"the program's pid {out!r} is not launch's pid {p.pid} (launch must exec the program)")

    def check_launch_autostart(self):
        e = self.new_env("cli.launch_autostart", coordinator=False)
        e.port = free_port()
        p = self.launch_counter(steps=60)
        with socket.socket() as s:
            s.settimeout(5)
            try:
                s.connect(("127.0.0.1", e.port))
            except OSError as ex:
                raise TestFailure(f"launch with no coordinator at {e.port}: none answers there while the program runs ({ex})")
        rc, out, err, _ = self.stasis("status")
        if rc != 0:
            raise TestFailure(f"`stasis status` against the auto-started coordinator exited {rc}: {(err or out).strip()}")
        rc, out, err, _ = self.stasis("checkpoint")
        if rc != 0:
            raise TestFailure(f"`stasis checkpoint` against the auto-started coordinator exited {rc}: {(err or out).strip()}")
        p.kill()

    def check_kill(self):
        self.new_env("cli.kill")
        p = self.launch_counter()
        rc, out, err, _ = self.stasis("kill")
        if rc != 0:
            raise TestFailure(f"`stasis kill` exited {rc}: {(err or out).strip()}")
        rc = p.wait(15, "after `stasis kill`")
        log(f"program ended with status {rc} after stasis kill")

    def check_kill_tree(self):
        # Children forked without an exec have no checkpoint thread and have not joined (the
        # runtime's deferred thread): `stasis kill` must end them too, through their parent.
        e = self.new_env("cli.kill_tree")
        p = self.launch_counter(program=[self.a.tree, "4000", "50", "stay"])
        rc, out, err, _ = self.stasis("kill")
        if rc != 0:
            raise TestFailure(f"`stasis kill` exited {rc}: {(err or out).strip()}")
        p.wait(15, "after `stasis kill`")
        deadline = time.monotonic() + 10
        while True:
            alive = [pid for pid in e.marked_pids() if not self.is_zombie(pid) and self.runs(pid, self.a.tree)]
            if not alive:
                break
            if time.monotonic() > deadline:
                raise TestFailure(f"processes of the program still run 10 s after `stasis kill`: pids {alive}")
            time.sleep(0.1)
        log("every process of the tree ended after stasis kill")

    @staticmethod
    def is_zombie(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
        except OSError:
            return True

    @staticmethod
    def runs(pid, program):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                first = f.read().split(b"\0")[0].decode(errors="replace")
            return os.path.basename(first) == os.path.basename(program) or os.readlink(f"/proc/{pid}/exe") == program
        except OSError:
            return False

    def check_checkpoint_no_coordinator(self):
        e = self.new_env("cli.checkpoint_no_coordinator", coordinator=False)
        e.port = free_port()
        rc, out, err, _ = self.stasis("checkpoint")
        lines = [l for l in (err + out).splitlines() if l.strip()]
        if rc == 0:
            raise TestFailure(f"`stasis checkpoint` with no coordinator exited 0: {lines!r}")
        if len(lines) != 1:
            raise TestFailure(f"`stasis checkpoint` with no coordinator: expected a one-line message, got {lines!r}")
        log(f"no coordinator: exit {rc}: {lines[0]}")

    # ---------------------------------------------------------------------------------------
    # Damaged checkpoints: each copy of a good generation, damaged in one way, is refused by
    # `stasis restart` with exit 1 (never a crash: 139 is a segfault) and a one-line message that
    # names the damaged file and what is wrong with it.
    def checkpoint_generation(self) -> Path:
        self.launch_counter()
        rc, out, err, _ = self.stasis("checkpoint", "--kill")
        if rc != 0:
            raise TestFailure(f"`stasis checkpoint --kill` exited {rc}: {(err or out).strip()}")
        return Path(out.strip().splitlines()[-1])

    def expect_refused(self, what: str, generation: Path, names: list[str]) -> None:
        rc, out, err, _ = self.stasis("restart", str(generation), timeout=60)
        message = (err + out).strip()
        if rc != 1 or len(message.splitlines()) != 1:
            raise TestFailure(f"{what}: `stasis restart` exited {rc} (139: a crash), expected 1 and a one-line "
                              f"message; printed {message!r}")
        missing = [n for n in names if n.lower() not in message.lower()]
        if missing:
            raise TestFailure(f"{what}: the refusal does not name {missing}: {message!r}")
        log(f"{what}: {message}")

    def check_bad_manifest(self):
        import shutil
        e = self.new_env("cli.bad_manifest")
        good = self.checkpoint_generation()
        manifest = json.loads((good / "MANIFEST.json").read_text())
        image = manifest["processes"][0]["image"]

        def edited(change):
            doc = json.loads(json.dumps(manifest))
            change(doc)
            return json.dumps(doc)

        def set_image(value):
            return lambda d: d["processes"][0].__setitem__("image", value)

        cases = [
            ("processes []", edited(lambda d: d.__setitem__("processes", [])), ["'processes'", "non-empty array"]),
            ("processes null", edited(lambda d: d.__setitem__("processes", None)), ["'processes'", "null"]),
            ("processes missing", edited(lambda d: d.pop("processes")), ["'processes'", "missing"]),
            ("processes a string", edited(lambda d: d.__setitem__("processes", "p")), ["'processes'", "string"]),
            ("a process not an object", edited(lambda d: d.__setitem__("processes", [7])),
             ["'processes[0]'", "an object"]),
            ("image a number", edited(set_image(42)), ["'processes[0].image'", "a string"]),
            ("image null", edited(set_image(None)), ["'processes[0].image'", "a string"]),
            ("image missing", edited(lambda d: d["processes"][0].pop("image")), ["'processes[0].image'", "missing"]),
            ("empty image name", edited(set_image("")), ["'processes[0].image'", "image file"]),
            ("image outside the generation", edited(set_image("../" + image)), ["'processes[0].image'"]),
            ("generation a string", edited(lambda d: d.__setitem__("generation", "1")), ["'generation'", "string"]),
            ("format wrong", edited(lambda d: d.__setitem__("format", "other")), ["'format'", "stasis-checkpoint"]),
            ("pid negative", edited(lambda d: d["processes"][0].__setitem__("pid", -1)), ["'processes[0].pid'"]),
            ("host a number", edited(lambda d: d["processes"][0].__setitem__("host", 1)), ["'processes[0].host'"]),
            ("complete false", edited(lambda d: d.__setitem__("complete", False)), ["complete"]),
            ("not JSON", '{"format": "stasis-checkpoint", ', ["not valid JSON"]),
            ("empty file", "", ["not valid JSON"]),
            ("a JSON array", "[1, 2]", ["not an object"]),
            ("a process nested a million arrays deep",
             edited(lambda d: d.__setitem__("processes", "NESTED")).replace('"NESTED"', "[" + "[" * 10**6 + "]" * 10**6 + "]"),
             ["'processes[0]'", "an object"]),
        ]
        for n, (what, text, names) in enumerate(cases):
            copy = e.tmp / "damaged" / f"manifest{n}" / good.name
            shutil.copytree(good, copy)
            (copy / "MANIFEST.json").write_text(text)
            self.expect_refused(what, copy, [str(copy / "MANIFEST.json"), *names])

    def check_bad_image(self):
        import shutil
        e = self.new_env("cli.bad_image")
        good = self.checkpoint_generation()
        image = json.loads((good / "MANIFEST.json").read_text())["processes"][0]["image"]
        size = (good / image).stat().st_size

        def damage(how):
            def apply(path: Path):
                if how == "missing":
                    path.unlink()
                elif how == "directory":
                    path.unlink()
                    path.mkdir()
                elif how == "empty":
                    path.write_bytes(b"")
                elif how == "truncated":
                    os.truncate(path, size // 2)
                elif how == "garbage":
                    path.write_bytes(os.urandom(size))
                elif how == "tail garbage":  # a sound header, the rest random: the records are damaged
                    data = path.read_bytes()
                    path.write_bytes(data[:4096] + os.urandom(size - 4096))
            return apply

        cases = [("missing", ["No such file"]), ("directory", ["not a regular file"]), ("empty", ["too short"]),
                 ("truncated", ["truncated"]), ("garbage", ["not a Stasis image"]),
                 ("tail garbage", ["corrupt"])]
        for n, (how, names) in enumerate(cases):
            copy = e.tmp / "damaged" / f"image{n}" / good.name
            shutil.copytree(good, copy)
            damage(how)(copy / image)
            self.expect_refused(f"image {how}", copy, [str(copy / image), *names])

    def check_restart_lock_held(self):
        """A restart that fails inside the restored process (a flock another process holds) says
        so on `stasis restart`'s own stderr, not on the program's stderr (here a file)."""
        import subprocess
        e = self.new_env("cli.restart_lock_held")
        lock_file = e.tmp / "locked.file"
        program = ("import fcntl, os, sys, time\n"
                   f"os.dup2(os.open({str(e.tmp / 'program.err')!r}, os.O_WRONLY | os.O_CREAT | os.O_APPEND), 2)\n"
                   f"f = open({str(lock_file)!r}, 'w')\n"
                   "fcntl.flock(f, fcntl.LOCK_EX)\n"
                   "for i in range(600):\n"
                   "    print(f'step {i}', flush=True)\n"
                   "    time.sleep(0.05)\n")
        self.launch_counter(program=[sys.executable, "-c", program])
        rc, out, err, _ = self.stasis("checkpoint", "--kill")
        if rc != 0:
            raise TestFailure(f"`stasis checkpoint --kill` exited {rc}: {(err or out).strip()}")
        generation = out.strip().splitlines()[-1]
        holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time\n"
                                   f"f = open({str(lock_file)!r}, 'a')\n"
                                   "fcntl.flock(f, fcntl.LOCK_EX)\n"
                                   "print('held', flush=True)\n"
                                   "time.sleep(120)\n"], stdout=subprocess.PIPE)
        try:
            if holder.stdout.readline().strip() != b"held":
                raise TestFailure("the other process could not take the lock after `checkpoint --kill`")
            rc, out, err, _ = self.stasis("restart", generation, timeout=60)
        finally:
            holder.kill()
            holder.wait()
        program_err = (e.tmp / "program.err").read_text(errors="replace").strip()
        if rc == 0:
            raise TestFailure(f"`stasis restart` exited 0 although another process holds the program's flock; "
                              f"stderr {err!r}")
        if str(lock_file) not in err or "lock" not in err:
            raise TestFailure(f"`stasis restart` exited {rc}, but its stderr does not name the lock on "
                              f"{lock_file}: {err!r} (the program's stderr file has: {program_err!r})")
        log(f"restart refused: exit {rc}: {err.strip()}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stasis", required=True)
    ap.add_argument("--counter", required=True)
    ap.add_argument("--threads", required=True)
    ap.add_argument("--tree", help="tests/targets/threadless_children (kill_tree)")
    names = sorted(n[len("check_"):] for n in dir(Checks) if n.startswith("check_"))
    ap.add_argument("check", choices=names)
    a = ap.parse_args()
    a.stasis, a.counter, a.threads = (os.path.abspath(x) if "/" in x else x for x in (a.stasis, a.counter, a.threads))
    if not os.access(a.stasis, os.X_OK):
        print(f"FAIL cli.{a.check}: stasis binary {a.stasis} is missing or not executable (not built yet?)")
        return 1
    c = Checks(a)
    try:
        getattr(c, "check_" + a.check)()
        print(f"PASS cli.{a.check}")
        return 0
    except TestFailure as ex:
        print(f"FAIL cli.{a.check}: {ex}")
        if c.env:
            for p in c.env.procs:
                print(f"--- {p.name} (pid {p.pid}, status {p.poll()}) stdout/stderr tails:")
                print(tail_text(p.stdout_bytes()))
                print(tail_text(p.stderr_bytes()))
            print("--- coordinator:")
            print(c.env.coordinator_log())
        return 1
    finally:
        if c.env:
            c.env.cleanup(os.environ.get("STASIS_TEST_KEEP") == "1")


if __name__ == "__main__":
    sys.exit(main())
