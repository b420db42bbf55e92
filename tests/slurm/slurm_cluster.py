"""A private Slurm cluster for one test: its own munged (own key and socket), slurmctld and one
slurmd per node, state in the test's directory, configured from slurm.conf.in beside this file.
By default one node, this machine, on free ports of 127.0.0.1; slurm_nodes.py gives it several,
each a test host of its own. Every daemon it started is stopped by pid, also when the test fails."""
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


def process_gone(pid):
    """Whether process `pid` has exited (gone, or a zombie): it may go between any two reads."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    """A compute node: its NodeName (what its slurmd finds as its host name), NodeAddr, how a
    command is run there (`on(argv)`: the argv that runs it on the node) and which process of this
    machine a pid its daemons write names (`outer_pid(pid)`, None if none: a node with a pid
    namespace of its own writes pids of that namespace)."""
    def __init__(self, name, address, on=lambda argv: list(argv), outer_pid=lambda pid: pid):
        self.name, self.address, self.on, self.outer_pid = name, address, on, outer_pid


class Cluster:
    """`nodes`: the compute nodes, the first also the controller and where commands run (the
    login node); by default this machine alone. `ports`: slurmctld's and slurmd's (free ones of
    this machine by default). `spool`: each slurmd's spool directory (%n: its node's name; made
    on the node); short, as slurmstepd's sockets there have paths of at most 108 bytes."""
    def __init__(self, tmp, conf_template, nodes=None, ports=None, spool=None):
        self.dir = os.path.join(tmp, "slurm")
        self.conf_template = conf_template
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.pid_files = []  # of the daemons started, in start order: (pid file, its pid -> this machine's)
        self.nodes = nodes or [Node(socket.gethostname(), "127.0.0.1")]
        self.ports = ports or (free_port(), free_port())
        self.spool = spool or os.path.join(self.dir, "spool-%n")

    def env(self, base):
        """`base` without anything of an enclosing Slurm job, pointed at this cluster."""
        env = {k: v for k, v in base.items() if not k.startswith(("SLURM_", "SALLOC_", "SBATCH_", "SRUN_"))}
        env["SLURM_CONF"] = self.conf
        return env

    def test_env(self, tmp):
        """A test's environment: this cluster's, nothing of an outer Stasis, and its own runtime
        directory (the secret files) in `tmp`."""
        env = self.env(os.environ)
        for name in ("STASIS_COORD", "STASIS_SECRET", "STASIS_CKPT_DIR", "STASIS_LAUNCH_PID"):
            env.pop(name, None)
        env["STASIS_RUNTIME_DIR"] = os.path.join(tmp, "rt")
        return env

    def print_logs(self, *paths):
        """The end of each of `paths` that exists, then of the daemons' logs: what a failed test shows."""
        for path in (*paths, *self.log_files()):
            if os.path.exists(path):
                print(f"--- {path}:\n{open(path, errors='replace').read()[-3000:]}")

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
                     f"--seed-file={os.path.join(munge_dir, 'seed')}"], outer_pid=lambda pid: pid)
        text = open(self.conf_template).read()
        node_lines = "\n".join(f"NodeName={n.name} NodeAddr={n.address} CPUs=2 CoresPerSocket=2 ThreadsPerCore=1 "
                               "State=UNKNOWN" for n in self.nodes)
        controller = self.nodes[0]
        for name, value in (("DIR", self.dir), ("CONTROLLER", controller.name), ("CONTROLLER_ADDR", controller.address),
                            ("MUNGE_SOCKET", socket_path), ("SPOOL", self.spool), ("SLURMCTLD_PORT", self.ports[0]),
                            ("SLURMD_PORT", self.ports[1]), ("NODES", node_lines),
                            ("NODE_NAMES", ",".join(n.name for n in self.nodes))):
            text = text.replace(f"@{name}@", str(value))
        with open(self.conf, "w") as f:
            f.write(text)
        env = self.env(os.environ)
        self._start("slurmctld", os.path.join(self.dir, "slurmctld.pid"), controller.on([DAEMONS[1]]), controller.outer_pid,
                    env)
        for node in self.nodes:
            subprocess.run(node.on(["mkdir", "-p", self.spool.replace("%n", node.name)]), check=True, timeout=60)
            self._start(f"slurmd of {node.name}", os.path.join(self.dir, f"slurmd-{node.name}.pid"),
                        node.on([DAEMONS[2]]), node.outer_pid, env)
        deadline = time.time() + 60
        while time.time() < deadline:
            state = self.run("sinfo", "-h", "-N", "-o", "%t").stdout
            if state.split() == ["idle"] * len(self.nodes):
                return
            time.sleep(0.2)
        raise RuntimeError(f"the Slurm nodes are not idle after 60 s (sinfo: {state.strip()!r}); see {self.dir}")

    def run(self, *argv, timeout=60, env=None):
        """A Slurm command run on the login node (the first)."""
        return subprocess.run(self.nodes[0].on(argv), capture_output=True, text=True, timeout=timeout,
                              env=self.env(env or os.environ))

    def _start(self, name, pid_file, argv, outer_pid, env=None):
        # The daemons fork into the background; they are known by their pid files from then on.
        self.pid_files.append((pid_file, outer_pid))
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
        return self.run("squeue", "-h", "-o", "%i").stdout.split()

    def log_files(self):
        return [os.path.join(self.dir, "slurmctld.log")] + [os.path.join(self.dir, f"slurmd-{n.name}.log")
                                                             for n in self.nodes]

    def cancel_the_job(self, launch):
        """`scancel` the one job in the queue, then wait for `launch` (its srun, a Popen) to end and the
        queue to empty; returns the job's id."""
        jobs = self.jobs()
        if len(jobs) != 1:
            raise RuntimeError(f"expected one job in the queue, found {jobs}")
        self.run("scancel", jobs[0])
        launch.wait(timeout=120)
        self.wait_no_jobs()
        return jobs[0]

    def wait_no_jobs(self, timeout=90):
        deadline = time.time() + timeout
        while self.jobs():
            if time.time() > deadline:
                raise RuntimeError(f"jobs still in the queue after {timeout} s: {self.jobs()}")
            time.sleep(0.2)

    def stop(self):
        if self.jobs():
            self.run("scancel", "--full", *self.jobs())
            try:
                self.wait_no_jobs(30)
            except RuntimeError:
                pass
        for pid_file, outer_pid in reversed(self.pid_files):
            pid = self._pid(pid_file)
            pid = outer_pid(pid) if pid else None  # never a pid of another namespace: another process here
            if not pid:
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):
                if process_gone(pid):
                    break
                time.sleep(0.05)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
