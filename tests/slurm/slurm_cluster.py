"""A private one-node Slurm cluster for one test: its own munged (own key and socket), slurmctld
and slurmd on free ports, state in the test's directory, configured from slurm.conf.in beside
this file. Every daemon it started is stopped by pid, also when the test fails."""
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time

DEFAULT_TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "slurm.conf.in")

DAEMONS = ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd")
COMMANDS = ("srun", "salloc", "scancel", "squeue", "sinfo")


def skip_reason(conf_template):
    """Why a Slurm test cannot run here (it then exits 77), or None."""
    if os.geteuid() != 0:
        return "the test's own munged and slurmd need root"
    missing = [d for d in DAEMONS if not os.access(d, os.X_OK)] + [c for c in COMMANDS if shutil.which(c) is None]
    if missing:
        return f"slurm-wlm/munge are not installed (missing {', '.join(missing)})"
    if not os.path.exists(conf_template):
        return f"no {conf_template}"
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return "no munge user"
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, tmp, conf_template):
        self.dir = os.path.join(tmp, "slurm")
        self.conf_template = conf_template
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.pid_files = []  # of the daemons started, in start order

    def env(self, base):
        """`base` without anything of an enclosing Slurm job, pointed at this cluster."""
        env = {k: v for k, v in base.items() if not k.startswith(("SLURM_", "SALLOC_", "SBATCH_", "SRUN_"))}
        env["SLURM_CONF"] = self.conf
        return env

    def start(self):
        munge_dir = os.path.join(self.dir, "munge")
        for d in ("state", "spool"):
            os.makedirs(os.path.join(self.dir, d))
        os.makedirs(munge_dir)
        munge = pwd.getpwnam("munge")
        os.chmod(self.dir, 0o711)
        os.chmod(os.path.dirname(self.dir), 0o711)
        os.chown(munge_dir, munge.pw_uid, munge.pw_gid)
        os.chmod(munge_dir, 0o711)  # munged wants its socket's folder searchable by all
        key = os.path.join(munge_dir, "key")
        with open(key, "wb") as f:
            f.write(os.urandom(128))
        os.chown(key, munge.pw_uid, munge.pw_gid)
        os.chmod(key, 0o400)
        socket_path = os.path.join(munge_dir, "socket")
        self._start("munged", os.path.join(munge_dir, "pid"),
                    ["runuser", "-u", "munge", "--", DAEMONS[0], f"--socket={socket_path}", f"--key-file={key}",
                     f"--pid-file={os.path.join(munge_dir, 'pid')}", f"--log-file={os.path.join(munge_dir, 'log')}",
                     f"--seed-file={os.path.join(munge_dir, 'seed')}"])
        text = open(self.conf_template).read()
        for name, value in (("DIR", self.dir), ("HOST", socket.gethostname()), ("MUNGE_SOCKET", socket_path),
                            ("SLURMCTLD_PORT", free_port()), ("SLURMD_PORT", free_port())):
            text = text.replace(f"@{name}@", str(value))
        with open(self.conf, "w") as f:
            f.write(text)
        env = self.env(os.environ)
        self._start("slurmctld", os.path.join(self.dir, "slurmctld.pid"), [DAEMONS[1]], env)
        self._start("slurmd", os.path.join(self.dir, "slurmd.pid"), [DAEMONS[2]], env)
        deadline = time.time() + 60
        while time.time() < deadline:
            state = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, env=env).stdout
            if state.strip() == "idle":
                return
            time.sleep(0.2)
        raise RuntimeError(f"the Slurm node is not idle after 60 s (sinfo: {state.strip()!r}); see {self.dir}")

    def _start(self, name, pid_file, argv, env=None):
        # The daemons fork into the background; they are known by their pid files from then on.
        self.pid_files.append(pid_file)
        subprocess.run(argv, check=True, env=env, timeout=60)
        deadline = time.time() + 30
        while not self._pid(pid_file):
            if time.time() > deadline:
                raise RuntimeError(f"{name} wrote no pid file {pid_file}")
            time.sleep(0.05)

    @staticmethod
    def _pid(pid_file):
        try:
            return int(open(pid_file).read().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def jobs(self):
        out = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, env=self.env(os.environ))
        return out.stdout.split()

    def wait_no_jobs(self, timeout=90):
        deadline = time.time() + timeout
        while self.jobs():
            if time.time() > deadline:
                raise RuntimeError(f"jobs still in the queue after {timeout} s: {self.jobs()}")
            time.sleep(0.2)

    def stop(self):
        env = self.env(os.environ)
        if self.jobs():
            subprocess.run(["scancel", "--full", *self.jobs()], capture_output=True, env=env)
            try:
                self.wait_no_jobs(30)
            except RuntimeError:
                pass
        for pid_file in reversed(self.pid_files):
            pid = self._pid(pid_file)
            if not pid:
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):
                if not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z":
                    break
                time.sleep(0.05)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
