"""Processes for tests/ckpt_driver.py: a child whose output is drained and compared (Proc), short
commands (run_cmd), and the per-test environment (Env: temporary directory, private coordinator,
cleanup of every process carrying the test's marker)."""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

from driver_output import TestFailure, log, tail_text

MARKER_VAR = "STASIS_TEST_MARKER"
CONTROLLED_VARS = {"STASIS_COORD", "STASIS_CKPT_DIR", "STASIS_RUNTIME_DIR", "STASIS_SECRET", "STASIS_COMPRESS"}


class Proc:
    """A child process whose stdout goes to a file or a pipe we drain, stderr to a pipe we drain,
    and stdin to /dev/null or a pipe we write once its output matches a regex."""

    def __init__(self, name, argv, cwd, env, stdout_file: Path | None,
                 stdin_feed: tuple[re.Pattern, bytes] | None = None, tty: bool = False):
        self.name = name
        self.argv = [str(a) for a in argv]
        self.stdout_file = stdout_file
        self.stdin_feed = stdin_feed
        self.fed = False
        # Where the program's output shows up: its stdout, or (restarted in file mode) the file
        # the restored descriptor writes to.
        self.watch_file: Path | None = None
        self._out = bytearray()
        self._err = bytearray()
        self._lock = threading.Lock()
        self.started = time.monotonic()
        self.ended: float | None = None
        self.tty_master = None
        if stdout_file is not None:
            out_target = open(stdout_file, "wb")
        elif tty:
            # stdout on a pseudo-terminal, as in an interactive shell; we read the master side
            self.tty_master, out_target = os.openpty()
        else:
            out_target = subprocess.PIPE
        try:
            self.popen = subprocess.Popen(
                self.argv, cwd=str(cwd), env=env,
                stdin=subprocess.PIPE if stdin_feed else subprocess.DEVNULL,
                stdout=out_target, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as e:
            raise TestFailure(f"cannot start {name}: {' '.join(self.argv)}: {e}")
        finally:
            if stdout_file is not None:
                out_target.close()
            elif tty:
                os.close(out_target)
        self.pid = self.popen.pid
        self._threads = []
        if self.tty_master is not None:
            self._threads.append(self._drain_fd(self.tty_master, self._out))
        elif stdout_file is None:
            self._threads.append(self._drain(self.popen.stdout, self._out))
        self._threads.append(self._drain(self.popen.stderr, self._err))

    def _drain_fd(self, fd, buf):
        def run():
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # EIO: every slave side is closed
                    chunk = b""
                if not chunk:
                    break
                with self._lock:
                    buf.extend(chunk)
            os.close(fd)
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t

    def _drain(self, stream, buf):
        def run():
            while True:
                chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
                if not chunk:
                    break
                with self._lock:
                    buf.extend(chunk)
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t

    def stdout_bytes(self) -> bytes:
        if self.stdout_file is not None:
            try:
                return self.stdout_file.read_bytes()
            except FileNotFoundError:
                return b""
        with self._lock:
            return bytes(self._out)

    def program_output(self) -> bytes:
        if self.watch_file is not None:
            try:
                return self.watch_file.read_bytes()
            except FileNotFoundError:
                return b""
        return self.stdout_bytes()

    def stderr_bytes(self) -> bytes:
        with self._lock:
            return bytes(self._err)

    def pump(self) -> None:
        """Feeds stdin once the output matches the trigger."""
        if self.stdin_feed and not self.fed:
            regex, data = self.stdin_feed
            if regex.search(self.program_output()):
                self.fed = True
                try:
                    self.popen.stdin.write(data)
                    self.popen.stdin.close()
                except OSError:
                    pass

    def poll(self):
        rc = self.popen.poll()
        if rc is not None and self.ended is None:
            self.ended = time.monotonic()
        return rc

    def wait(self, timeout: float, what: str = "") -> int:
        deadline = time.monotonic() + timeout
        while True:
            self.pump()
            rc = self.poll()
            if rc is not None:
                self.join_output()
                return rc
            if time.monotonic() > deadline:
                raise TestFailure(f"{self.name} (pid {self.pid}) did not exit within {timeout:.0f} s"
                                  + (f" ({what})" if what else ""))
            time.sleep(0.02)

    def join_output(self, timeout: float = 5.0) -> None:
        # A pipe stays open while any other process holds it (e.g. a helper that inherited it):
        # do not wait forever for EOF.
        for t in self._threads:
            t.join(timeout)

    def session_members(self) -> list[int]:
        """Processes of the session this one leads (it was started with a new session): the
        whole tree it started, however the processes regrouped inside it."""
        members = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                after_comm = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(after_comm[3]) == self.pid:  # field 6: session id
                members.append(int(entry.name))
        return members

    def kill(self) -> None:
        """SIGKILL to the program and everything in its session, as when its machine fails: all
        are stopped first, so none sees another die (a peer's reset connection) and prints."""
        if self.poll() is None:
            members = [self.pid] + self.session_members()
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                for pid in members:
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
            # Gone for good (descriptors closed, ports free) before anything restarts.
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() and pid != self.pid
                                                      for pid in members):
                time.sleep(0.01)
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                pass
            self.poll()
        self.join_output(2)


def run_cmd(argv, env, cwd, timeout, name=None) -> tuple[int, str, str, float]:
    """Runs a short command; returns (rc, stdout, stderr, seconds). A hang is a failure."""
    t0 = time.monotonic()
    try:
        cp = subprocess.run([str(a) for a in argv], env=env, cwd=str(cwd), capture_output=True,
                            timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        raise TestFailure(f"`{' '.join(map(str, argv))}` did not finish within {timeout} s; "
                          f"stdout: {e.stdout!r} stderr: {e.stderr!r}")
    except OSError as e:
        raise TestFailure(f"cannot run `{' '.join(map(str, argv))}`: {e}")
    return (cp.returncode, cp.stdout.decode("utf-8", "replace"), cp.stderr.decode("utf-8", "replace"),
            time.monotonic() - t0)


def count_matching(data: bytes, regex: re.Pattern) -> int:
    return sum(1 for line in data.splitlines() if regex.search(line))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------------------------
# The per-test environment: temp dir, coordinator, cleanup
# ----------------------------------------------------------------------------------------------

class Env:
    def __init__(self, stasis: str | None, name: str):
        self.stasis = stasis
        self.name = name
        self.marker = f"{name}-{uuid.uuid4().hex[:12]}"
        self.tmp = Path(tempfile.mkdtemp(prefix=f"stasis-test-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}-"))
        self.runtime_dir = self.tmp / "runtime"
        self.runtime_dir.mkdir(mode=0o700)
        self.ckpt_dir = self.tmp / "stasis-ckpt"  # tmp/stasis-ckpt: `restart` with no PATH in tmp finds it
        self.ref_dir = self.tmp / "ref"
        self.run_dir = self.tmp / "run"
        self.other_dir = self.tmp / "elsewhere"
        for d in (self.ref_dir, self.run_dir, self.other_dir):
            d.mkdir()
        self.port: int | None = None
        self.procs: list[Proc] = []
        # The variables this driver decides are dropped from the caller's environment; others
        # (e.g. STASIS_FORKED_CHECKPOINT set by a test's ENVIRONMENT property) pass through.
        base = {k: v for k, v in os.environ.items() if k not in CONTROLLED_VARS and k != "LD_PRELOAD"}
        base[MARKER_VAR] = self.marker
        base["STASIS_RUNTIME_DIR"] = str(self.runtime_dir)
        base.setdefault("LC_ALL", "C")
        self.base_env = base

    # environment for stasis commands and launched programs
    def env(self, ckpt_env: bool = True, **extra) -> dict:
        e = dict(self.base_env)
        if self.port is not None:
            e["STASIS_COORD"] = f"127.0.0.1:{self.port}"
        if ckpt_env:
            e["STASIS_CKPT_DIR"] = str(self.ckpt_dir)
        e.update({k: v for k, v in extra.items() if v is not None})
        return e

    def start(self, name, argv, cwd, env, stdout_file=None, stdin_feed=None, tty=False) -> Proc:
        p = Proc(name, argv, cwd, env, stdout_file, stdin_feed, tty)
        self.procs.append(p)
        return p

    def start_coordinator(self, extra_args=()) -> None:
        port_file = self.tmp / "coordinator.port"
        argv = [self.stasis, "coordinator", "--port", "0", "--port-file", port_file,
                "--ckpt-dir", self.ckpt_dir, "--daemon", "--exit-when-idle", *extra_args]
        out = open(self.tmp / "coordinator.out", "wb")
        try:
            p = subprocess.Popen([str(a) for a in argv], cwd=str(self.tmp), env=self.env(),
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        finally:
            out.close()
        try:
            rc = p.wait(30)
        except subprocess.TimeoutExpired:
            raise TestFailure("`stasis coordinator --daemon` did not return within 30 s "
                              "(--daemon must return once listening)")
        if rc != 0:
            raise TestFailure(f"`stasis coordinator --daemon` exited {rc}: "
                              f"{(self.tmp / 'coordinator.out').read_text(errors='replace').strip()}")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                text = port_file.read_text().strip()
                if text:
                    self.port = int(text)
                    break
            except (FileNotFoundError, ValueError):
                pass
            time.sleep(0.02)
        if self.port is None:
            raise TestFailure(f"coordinator wrote no port to {port_file} within 10 s of --daemon returning")
        log(f"coordinator listening on 127.0.0.1:{self.port}")

    def coordinator_log(self) -> str:
        parts = []
        for f in (self.ckpt_dir / "coordinator.log", self.tmp / "coordinator.out"):
            if f.exists():
                parts.append(f"--- {f} (last 60 lines)\n" + tail_text(f.read_bytes(), 60))
        return "\n".join(parts) or "    (no coordinator log found)"

    def listing(self) -> str:
        if not self.ckpt_dir.exists():
            return f"    {self.ckpt_dir} does not exist"
        rows = []
        for root, dirs, files in os.walk(self.ckpt_dir):
            dirs.sort()
            for name in sorted(dirs + files):
                p = Path(root) / name
                try:
                    st = p.lstat()
                except OSError:
                    continue
                desc = f"-> {os.readlink(p)}" if p.is_symlink() else ("" if p.is_dir() else f"{st.st_size} bytes")
                rows.append(f"    {p.relative_to(self.ckpt_dir)} {desc}")
        return "\n".join(rows[:60]) or "    (empty)"

    def marked_pids(self) -> list[int]:
        needle = f"{MARKER_VAR}={self.marker}".encode()
        pids = []
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == os.getpid():
                continue
            try:
                with open(f"/proc/{d}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        pids.append(int(d))
            except OSError:
                pass
        return pids

    def cleanup(self, keep: bool) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        if self.stasis and self.port is not None:
            try:
                subprocess.run([self.stasis, "kill"], env=self.env(), cwd=str(self.tmp), timeout=10,
                               capture_output=True, stdin=subprocess.DEVNULL)
            except (subprocess.TimeoutExpired, OSError):
                pass
        # Anything still carrying our marker (coordinators, helpers, restarted programs) goes, by pid.
        for attempt in range(3):
            pids = self.marked_pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGTERM if attempt == 0 else signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.3)
        for p in self.procs:
            p.join_output(1)
        if keep:
            log(f"keeping {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)
