#!/usr/bin/python3
"""A stand-in for `stasis` that checks tests/ckpt_driver.py itself, with no real checkpointing.

It relies on the targets being deterministic: `checkpoint` records how many output lines the
program has printed; `restart` runs the program again from the start and passes on only the lines
after that count (to its stdout, or into the saved stdout file at the saved offset). That is
exactly what a correct restart prints, so the driver's tests must pass with it; and
MOCK_STASIS_BREAK=skip|repeat|status makes the restart wrong on purpose, so they must fail.
Not a model of how Stasis works: only of the command-line contract the driver exercises.
"""
import ctypes
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

MAGIC = b"STASISMOCK1\n"


def runtime() -> Path:
    d = Path(os.environ.get("STASIS_RUNTIME_DIR", Path.home() / ".stasis")) / "mock"
    d.mkdir(parents=True, exist_ok=True)
    return d


def die(msg: str, rc: int = 1):
    print(f"stasis: {msg}", file=sys.stderr)
    sys.exit(rc)


def opt(args, name, default=None):
    if name in args:
        i = args.index(name)
        v = args[i + 1]
        del args[i:i + 2]
        return v
    return default


def flag(args, name):
    if name in args:
        args.remove(name)
        return True
    return False


def coord_port() -> int:
    c = os.environ.get("STASIS_COORD", "127.0.0.1:7781")
    return int(c.rsplit(":", 1)[1])


def check_secret(port: int):
    f = Path(os.environ.get("STASIS_RUNTIME_DIR", "")) / f"coordinator-127.0.0.1-{port}.secret"
    want = f.read_text().strip() if f.exists() else None
    got = os.environ.get("STASIS_SECRET", want)
    if want is None:
        die(f"no coordinator at 127.0.0.1:{port}: start one with `stasis launch`")
    if got != want:
        die("the coordinator refused the connection: wrong secret (STASIS_SECRET or the secret file)")


def live_procs():
    out = []
    for f in sorted(runtime().glob("proc-*.json"), key=lambda p: p.stat().st_mtime):
        st = json.loads(f.read_text())
        try:
            os.kill(st["pid"], 0)
            out.append(st)
        except ProcessLookupError:
            f.unlink(missing_ok=True)
    return out


def run_tracked(argv, cwd, skip_lines: int, stdout_file, offset: int, ckpt_dir: str):
    """Runs argv as a child that dies with us; copies its stdout lines after the first skip_lines
    to our stdout (or into stdout_file at offset) and keeps a state file with the line count."""
    libc = ctypes.CDLL(None, use_errno=True)
    me = os.getpid()
    state = runtime() / f"proc-{me}.json"
    if stdout_file is None:
        target = os.fdopen(os.dup(1), "wb", buffering=0)
    else:
        target = open(stdout_file, "r+b", buffering=0)
        target.seek(offset)

    def pre():
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    child = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, preexec_fn=pre)
    lines, pos = 0, offset

    def save():
        tmp = state.with_suffix(".tmp")
        tmp.write_text(json.dumps({"pid": me, "argv": argv, "cwd": cwd, "lines": lines, "pos": pos,
                                   "stdout_file": stdout_file, "ckpt_dir": ckpt_dir, "program": Path(argv[0]).name}))
        tmp.rename(state)
    save()
    brk = os.environ.get("MOCK_STASIS_BREAK", "")
    for line in child.stdout:
        lines += 1
        if lines > skip_lines or (brk == "repeat" and lines > skip_lines - 6):
            if not (brk == "skip" and lines == skip_lines + 2):
                target.write(line)
                pos += len(line)
        save()
    rc = child.wait()
    state.unlink(missing_ok=True)
    if brk == "status" and skip_lines:
        rc += 1
    sys.exit(rc if rc >= 0 else 128 - rc)


def stdout_regular_file():
    try:
        p = os.readlink("/proc/self/fd/1")
        return p if Path(p).is_file() else None
    except OSError:
        return None


def cmd_coordinator(args):
    port_file = opt(args, "--port-file")
    ckpt = opt(args, "--ckpt-dir", "stasis-ckpt")
    opt(args, "--port", "0")
    if flag(args, "--help"):
        print("usage: stasis coordinator [--port N] ...")
        return 0
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    port = s.getsockname()[1]
    if os.fork() != 0:
        # parent: wait until the child wrote the port, like --daemon
        for _ in range(200):
            if Path(port_file).exists() and Path(port_file).read_text().strip():
                return 0
            time.sleep(0.01)
        return 1
    os.setsid()
    Path(ckpt).mkdir(parents=True, exist_ok=True)
    secret = Path(os.environ["STASIS_RUNTIME_DIR"]) / f"coordinator-127.0.0.1-{port}.secret"
    secret.write_text(hashlib.sha256(os.urandom(16)).hexdigest() + "\n")
    secret.chmod(0o600)
    (Path(ckpt) / "coordinator.log").write_text(f"mock coordinator on {port}\n")
    Path(port_file).write_text(f"{port}\n")
    s.settimeout(1)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (runtime() / "stop").exists():
        try:
            c, _ = s.accept()
            c.close()
        except socket.timeout:
            pass
    return 0


def cmd_launch(args):
    if "--" not in args:
        die("launch: missing -- PROGRAM")
    prog = args[args.index("--") + 1:]
    ckpt = os.path.abspath(os.environ.get("STASIS_CKPT_DIR", "stasis-ckpt"))
    f = stdout_regular_file()
    run_tracked(prog, os.getcwd(), 0, f, os.lseek(1, 0, os.SEEK_CUR) if f else 0, ckpt)


def cmd_checkpoint(args):
    kill = flag(args, "--kill")
    check_secret(coord_port())
    procs = live_procs()
    if not procs:
        die("no process to checkpoint")
    st = procs[-1]
    os.kill(st["pid"], signal.SIGSTOP)
    st = json.loads((runtime() / f"proc-{st['pid']}.json").read_text())
    root = Path(st["ckpt_dir"])
    root.mkdir(parents=True, exist_ok=True)
    n = max([int(p.name) for p in root.iterdir() if p.name.isdigit()] + [0]) + 1
    gen = root / f"{n:06d}"
    gen.mkdir()
    payload = json.dumps(st).encode() + os.urandom(65536)
    (gen / f"{st['program']}-{st['pid']}.stasis").write_bytes(MAGIC + hashlib.sha256(payload).hexdigest().encode()
                                                          + b"\n" + len(payload).to_bytes(8, "little") + payload)
    (gen / "MANIFEST.json").write_text(json.dumps(st))
    tmp = root / "latest.tmp"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(gen.name)
    tmp.rename(root / "latest")
    if kill:
        os.kill(st["pid"], signal.SIGKILL)
    os.kill(st["pid"], signal.SIGCONT)
    print(gen)
    return 0


def read_image(path: Path):
    data = path.read_bytes()
    if not data.startswith(MAGIC):
        die(f"{path}: not a Stasis image (bad magic)")
    head, rest = data[len(MAGIC):len(MAGIC) + 65], data[len(MAGIC) + 65:]
    if len(rest) < 8:
        die(f"{path}: truncated image")
    size = int.from_bytes(rest[:8], "little")
    payload = rest[8:]
    if len(payload) < size:
        die(f"{path}: truncated image: {len(payload)} of {size} payload bytes")
    if hashlib.sha256(payload).hexdigest().encode() != head[:64]:
        die(f"{path}: checksum mismatch: the image is corrupt")
    return json.loads(payload[:payload.index(b"}") + 1])


def cmd_restart(args):
    path = args[0] if args else os.environ.get("STASIS_CKPT_DIR", "stasis-ckpt")
    p = Path(path)
    if (p / "latest").exists():
        p = p / os.readlink(p / "latest")
    if not (p / "MANIFEST.json").exists():
        die(f"{p}: not a checkpoint directory")
    for img in p.glob("*.stasis"):
        read_image(img)
    st = json.loads((p / "MANIFEST.json").read_text())
    run_tracked(st["argv"], st["cwd"], st["lines"], st["stdout_file"], st["pos"], st["ckpt_dir"])


def cmd_inspect(args):
    js = flag(args, "--json")
    st = read_image(Path(args[0]))
    print(json.dumps({"threads": [{"tid": 1}] * 9, "regions": [{"start": 0}], "fds": [0, 1, 2], **st}) if js else st)
    return 0


def cmd_status(args):
    check_secret(coord_port())
    procs = live_procs()
    if flag(args, "--json"):
        print(json.dumps({"processes": [{"pid": s["pid"], "program": s["program"]} for s in procs]}))
    else:
        for s in procs:
            print(s["pid"], s["program"])
    return 0


def cmd_kill(args):
    check_secret(coord_port())
    for s in live_procs():
        os.kill(s["pid"], signal.SIGKILL)
    (runtime() / "stop").touch()
    return 0


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("--help", "--version"):
        print("stasis 0.0.0-mock\ncommands: coordinator launch checkpoint restart status kill inspect")
        return 0
    cmd = args.pop(0)
    if "--help" in args and cmd != "launch":
        print(f"usage: stasis {cmd} ...")
        return 0
    opt(args, "--coord")
    opt(args, "--compress")
    opt(args, "--interval")
    return globals()[f"cmd_{cmd}"](args) or 0


if __name__ == "__main__":
    sys.exit(main())
