#!/usr/bin/python3
"""End-to-end tests of the application API and the plugin API: launch, checkpoint, kill -9,
restart, and compare with an uninterrupted run.

  api_tests.py app_api STASIS APP_API_BINARY
  api_tests.py plugin  STASIS PLUGIN_SO COUNTER_BINARY
"""
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from e2e_common import Computation, fail, lines, wait_for  # noqa: E402


def app_api(stasis, program):
    with tempfile.TemporaryDirectory() as tmp:
        reference = subprocess.run([program, "40", "10"], capture_output=True, text=True, check=True)
        if "enabled 0" not in reference.stderr or "checkpoint returned -1" not in reference.stderr:
            fail(f"without Stasis the API should report disabled: {reference.stderr!r}")
        comp = Computation(stasis, tmp)
        out, err1, err2 = Path(tmp, "out"), Path(tmp, "err1"), Path(tmp, "err2")
        try:
            with open(out, "w") as o, open(err1, "w") as e:
                proc = comp.popen(["launch", "--", program, "40", "10"], o, e)
            wait_for(lambda: (comp.ckpt / "latest" / "MANIFEST.json").exists(),
                     "the checkpoint the program asked for")
            wait_for(lambda: len(lines(out)) >= 15, "15 lines of output")
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            if "enabled 1" not in err1.read_text() or "checkpoint returned 1" not in err1.read_text():
                fail(f"under Stasis the API should report enabled and a checkpoint: {err1.read_text()!r}")
            with open(err2, "w") as e:
                restarted = subprocess.run([stasis, "restart", str(comp.ckpt)], env=comp.env,
                                           stderr=e, timeout=60)
            if restarted.returncode != 0:
                fail(f"restart exited {restarted.returncode}: {err2.read_text()}")
            # stderr was a regular file: the restarted process writes on at its saved offset.
            if err1.read_text() != "enabled 1\ncheckpoint returned 2\n":
                fail(f"stasis_checkpoint() should return STASIS_AFTER_RESTART after restart: {err1.read_text()!r}")
            if out.read_text() != reference.stdout:
                fail("the output after restart differs from an uninterrupted run")
        finally:
            comp.cleanup()
    print("PASS app_api")


def plugin(stasis, plugin_so, counter):
    with tempfile.TemporaryDirectory() as tmp:
        reference = subprocess.run([counter, "40", "50"], capture_output=True, text=True, check=True)
        comp = Computation(stasis, tmp)
        log = Path(tmp, "plugin.log")
        comp.env["STASIS_EXAMPLE_LOG"] = str(log)
        out = Path(tmp, "out")
        try:
            with open(out, "w") as o:
                proc = comp.popen(["launch", "--plugin", plugin_so, "--", counter, "40", "50"], o, None)
            wait_for(lambda: len(lines(out)) >= 5, "5 lines of output")
            for _ in range(2):
                r = comp.run("checkpoint", timeout=60)
                if r.returncode != 0:
                    fail(f"checkpoint failed: {r.stderr}")
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            restarted = subprocess.run([stasis, "restart", str(comp.ckpt)], env=comp.env, timeout=60)
            if restarted.returncode != reference.returncode:
                fail(f"restart exited {restarted.returncode}, an uninterrupted run {reference.returncode}")
            if out.read_text() != reference.stdout:
                fail("the output after restart differs from an uninterrupted run")
            events = [" ".join(l.split()[:3]) for l in lines(log)]
            # "barrier": the example-quiesce barrier the plugin adds between drain and checkpoint.
            expected = ["init generation 0",
                        "pre-suspend generation 1", "drain generation 1", "barrier generation 1",
                        "pre-checkpoint generation 1", "resume generation 1",
                        "pre-suspend generation 2", "drain generation 2", "barrier generation 2",
                        "pre-checkpoint generation 2", "resume generation 2",
                        "restart generation 2", "resume generation 2", "exit generation 2"]
            if events != expected:
                fail(f"plugin events {events} != {expected}")
            counts = [int(l.split()[-1]) for l in lines(log)]
            # The counter is plugin memory: after the restart it is what the image saved (1: the
            # second checkpoint's resume had not run yet when memory was written).
            if counts[5] != 1 or counts[10] != 2 or counts[11] != 1:
                fail(f"plugin state did not survive as saved: {lines(log)}")
        finally:
            comp.cleanup()
    print("PASS plugin")


if __name__ == "__main__":
    if sys.argv[1] == "app_api":
        app_api(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "plugin":
        plugin(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        fail(f"unknown case {sys.argv[1]}")
