"""What the benchmarks share: a private coordinator, its log's times, a cold page cache."""
import datetime
import os
import subprocess
import time
from pathlib import Path


def drop_caches() -> bool:
    """Drops the page cache (root only); False when not permitted."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def log_time(line):
    """The wall-clock time of a coordinator.log line ("2026-11-23 01:51:23.925 ...")."""
    return datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S.%f").timestamp()


def start_coordinator(stasis, tmp, ckpt, env):
    """Starts a coordinator daemon (any free port, checkpoints in ckpt, exits when idle) and
    points env's STASIS_COORD at it."""
    port_file = Path(tmp) / "port"
    subprocess.run([stasis, "coordinator", "--port", "0", "--port-file", port_file, "--ckpt-dir", ckpt,
                    "--daemon", "--exit-when-idle"], env=env, check=True, timeout=30,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(500):
        if port_file.exists() and port_file.read_text().strip():
            break
        time.sleep(0.01)
    env["STASIS_COORD"] = "127.0.0.1:" + port_file.read_text().strip()
