"""Helpers shared by the end-to-end tests written outside the checkpoint driver
(tests/api, tests/failure, tests/restart): a private coordinator per test, waiting, failing."""
import os
import subprocess
import sys
import time
from pathlib import Path


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def wait_for(predicate, what, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    fail(f"timed out waiting for {what}")


class Computation:
    def __init__(self, stasis, tmp, *coordinator_options):
        self.stasis, self.tmp = stasis, Path(tmp)
        self.ckpt = self.tmp / "ckpt"
        self.env = dict(os.environ, STASIS_RUNTIME_DIR=str(self.tmp / "run"))
        port_file = self.tmp / "port"
        subprocess.run([stasis, "coordinator", "--port", "0", "--port-file", str(port_file),
                        "--ckpt-dir", str(self.ckpt), "--daemon", "--exit-when-idle",
                        *coordinator_options], env=self.env, check=True)
        self.env["STASIS_COORD"] = f"127.0.0.1:{port_file.read_text().strip()}"

    def run(self, *args, **kw):
        return subprocess.run([self.stasis, *args], env=self.env, capture_output=True, text=True, **kw)

    def popen(self, args, stdout, stderr):
        return subprocess.Popen([self.stasis, *args], env=self.env, stdout=stdout, stderr=stderr)

    def cleanup(self):
        self.run("kill")


def lines(path):
    return Path(path).read_text().splitlines() if Path(path).exists() else []


def wait_lines(path, n, timeout=60):
    wait_for(lambda: len(lines(path)) >= n, f"{n} lines in {path}", timeout)


