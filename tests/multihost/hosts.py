"""Two hosts on one machine for the multi-host tests: network namespaces joined by a veth pair,
each with loopback up and one address, and, as the nodes of a cluster, a node-local /tmp and
/dev/shm of its own (a mount namespace with private tmpfs mounts) and a host name of its own (a
UTS namespace). Both are kept by bind mounts under HOST_STATE (as `ip netns` keeps network
namespaces under /run/netns) and entered with nsenter (in_ns, bin/nsrsh). What the cluster's
nodes share, the tests keep in their test directory, in the build tree (shared_directory()):
the checkpoint directory, the runtime directory with the secret, the programs, softib's
fabric. Needs root, `ip netns`, unshare and nsenter; always taken down again."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

# The remote shell the tests use as ssh (bin/ssh runs it with an empty environment).
NSRSH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "nsrsh")
# Where each host's mount and UTS namespaces are kept: HOST_STATE/NAMESPACE.mnt and .uts (bin/nsrsh
# reads the same paths).
HOST_STATE = "/run/stasis-hosts"
# The init of a host with its own pid namespace: reaps every child, its own and adopted ones.
REAP_ORPHANS = ("import os, time\nwhile True:\n    try:\n        os.wait()\n"
                "    except ChildProcessError:\n        time.sleep(0.2)\n")


def shared_directory():
    """The cluster's shared file system: $STASIS_TEST_SHARED_DIR, else the test's working directory
    (ctest runs it in the build tree, where the programs are). Never under /tmp, which is each
    host's own."""
    path = os.environ.get("STASIS_TEST_SHARED_DIR") or os.getcwd()
    if os.path.realpath(path).startswith(("/tmp/", "/dev/shm/")) or os.path.realpath(path) in ("/tmp", "/dev/shm"):
        raise RuntimeError(f"the shared directory {path} is in a host's own /tmp or /dev/shm")
    return path


def run(*argv, check=True, **kw):
    return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=60, **kw)


def unavailable():
    """Why these tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None or subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        return "`ip netns` is not available"
    missing = [tool for tool in ("unshare", "nsenter", "mountpoint") if shutil.which(tool) is None]
    if missing:
        return f"no {', '.join(missing)} for each host's own /tmp (Debian: util-linux)"
    return None


class TwoHosts:
    """`spare_addresses`: a second address per host, standing for other machines a restart moves to.
    `own_pids`: each host also has a pid namespace of its own (its own /proc; pids as small as on a
    freshly booted node, so two hosts' processes may have the same pids, as real nodes' do). Not for
    the ssh stand-in, which execs into the other host's namespaces: a process and its child would
    then be in two pid spaces."""
    def __init__(self, namespaces, addresses, veth_prefix, spare_addresses=(), own_pids=False):
        self.namespaces, self.addresses, self.veth = namespaces, addresses, veth_prefix
        self.spare_addresses = spare_addresses
        self.own_pids = own_pids
        self.holders = []  # the processes holding each host's mount and UTS namespaces

    def in_ns(self, index, *argv):
        """argv run on host `index`: in its network, mount and UTS namespaces (as bin/nsrsh does) and
        its pid namespace if it has one, in the caller's working directory (as `ip netns exec`
        keeps it: the tests' is shared)."""
        pid = ["--pid"] if self.own_pids else []
        return ["nsenter", "--wd=.", "-t", str(self.holder_pid(self.namespaces[index])), "--net", "--mount", "--uts",
                *pid, "--", *argv]

    def outer_pid(self, index, pid):
        """The pid, on this machine, of the process that host `index` knows as `pid` (None if none):
        with pid namespaces of their own, a daemon's pid file there names a process of the host's."""
        if not self.own_pids:
            return pid
        namespace = os.readlink(f"/proc/{self.holder_pid(self.namespaces[index])}/ns/pid")
        for entry in os.listdir("/proc"):
            try:
                if entry.isdigit() and os.readlink(f"/proc/{entry}/ns/pid") == namespace:
                    with open(f"/proc/{entry}/status") as f:
                        nspid = next(line for line in f if line.startswith("NSpid:")).split()
                    if int(nspid[-1]) == pid:
                        return int(entry)
            except (OSError, StopIteration, ValueError):
                continue
        return None

    @staticmethod
    def holder_pid(ns):
        with open(f"{HOST_STATE}/{ns}.pid") as f:
            return int(f.read())

    def down(self):
        # A process left in a namespace (a coordinator, a daemon of a failed run) would keep it,
        # with its addresses, alive after `ip netns del`, and confuse the next run's connections.
        # Every process of a host is in its network namespace, the one holding its mount and UTS
        # namespaces too: once they are gone, so are its /tmp and /dev/shm.
        for ns in self.namespaces:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                subprocess.run(["kill", "-9", pid], capture_output=True)
            if os.path.exists(f"{HOST_STATE}/{ns}.pid"):
                os.unlink(f"{HOST_STATE}/{ns}.pid")
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        for holder in self.holders:
            holder.wait()
        self.holders = []

    def make_node(self, ns):
        """Host `ns`'s own /tmp and /dev/shm (empty tmpfs, mode 1777 as on a node) and host name, in
        namespaces that a process of the host holds (its pid in HOST_STATE/ns.pid, for bin/nsrsh:
        a file every host sees, where a namespace bound to a file would be seen by hosts made after
        it only); its /sys shows its network devices, as under `ip netns exec`."""
        os.makedirs(HOST_STATE, exist_ok=True)
        # With a pid namespace of its own, the holder is the host's init: it reaps what is orphaned
        # there (the double-forked processes of a restart, sshd's sessions), as a node's init does.
        hold = f"exec {sys.executable} -c '{REAP_ORPHANS}'" if self.own_pids else "exec sleep infinity"
        setup = ("mount -t tmpfs -o mode=1777 tmpfs /tmp && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && "
                 f"mount -t sysfs sysfs /sys && hostname {ns.replace('_', '-')} && echo ready && {hold}")
        pid_namespace = ["--pid", "--fork", "--mount-proc"] if self.own_pids else []
        holder = subprocess.Popen(["nsenter", f"--net=/run/netns/{ns}", "unshare", "--mount", "--uts", *pid_namespace,
                                   "--propagation", "private", "sh", "-c", setup], stdout=subprocess.PIPE, text=True)
        self.holders.append(holder)
        if holder.stdout.readline().strip() != "ready":
            raise RuntimeError(f"host {ns} could not get its own /tmp, /dev/shm and host name")
        holder_pid = holder.pid  # nsenter and unshare exec: the pid is the holder's
        if self.own_pids:  # unshare forked the host's init, which holds every namespace of the host
            with open(f"/proc/{holder.pid}/task/{holder.pid}/children") as f:
                holder_pid = int(f.read().split()[0])
        with open(f"{HOST_STATE}/{ns}.pid", "w") as f:
            f.write(str(holder_pid))

    def check_nodes(self):
        """Each host sees its own /tmp and /dev/shm and name: a file made on one is on no other."""
        for directory in ("/tmp", "/dev/shm"):
            marker = os.path.join(directory, f"stasis-node-check-{os.getpid()}")
            run(*self.in_ns(0, "touch", marker))
            try:
                seen = [subprocess.run(self.in_ns(1, "test", "-e", marker)).returncode == 0, os.path.exists(marker)]
            finally:
                run(*self.in_ns(0, "rm", "-f", marker))
            if any(seen):
                raise RuntimeError(f"host 1's {directory} is not its own (seen on host 2, here: {seen})")
        names = [run(*self.in_ns(i, "hostname")).stdout.strip() for i in range(len(self.namespaces))]
        if len(set(names)) != len(names):
            raise RuntimeError(f"the hosts share a host name: {names}")
        if self.own_pids:
            spaces = [run(*self.in_ns(i, "readlink", "/proc/self/ns/pid")).stdout.strip()
                      for i in range(len(self.namespaces))]
            if len(set(spaces) | {os.readlink("/proc/self/ns/pid")}) != len(spaces) + 1:
                raise RuntimeError(f"the hosts do not have pid namespaces of their own: {spaces}")

    def up(self):
        self.down()  # left over from an interrupted run
        for ns in self.namespaces:
            run("ip", "netns", "add", ns)
            run("ip", "-n", ns, "link", "set", "lo", "up")
            self.make_node(ns)
        run("ip", "link", "add", f"{self.veth}1", "netns", self.namespaces[0], "type", "veth", "peer", "name",
            f"{self.veth}2", "netns", self.namespaces[1])
        for i, ns in enumerate(self.namespaces):
            run("ip", "-n", ns, "addr", "add", self.addresses[i] + "/24", "dev", f"{self.veth}{i + 1}")
            if self.spare_addresses:
                run("ip", "-n", ns, "addr", "add", self.spare_addresses[i] + "/24", "dev", f"{self.veth}{i + 1}")
            run("ip", "-n", ns, "link", "set", f"{self.veth}{i + 1}", "up")
        # Both ends carry before the test starts (a link just set up may not yet).
        for i, ns in enumerate(self.namespaces):
            for _ in range(100):
                if "LOWER_UP" in run("ip", "-n", ns, "link", "show", "dev", f"{self.veth}{i + 1}").stdout:
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError(f"the link of {ns} does not come up")
        self.check_nodes()

    def prefer_spare_addresses(self):
        """Connections from each host leave from its spare address from now on, as from another machine."""
        for i, ns in enumerate(self.namespaces):
            subnet = self.addresses[i].rsplit(".", 1)[0] + ".0/24"
            run("ip", "-n", ns, "route", "replace", subnet, "dev", f"{self.veth}{i + 1}", "src", self.spare_addresses[i])

    def nsrsh_map(self):
        pairs = list(zip(self.addresses, self.namespaces)) + list(zip(self.spare_addresses, self.namespaces))
        return ",".join(f"{a}={n}" for a, n in pairs)

    def host_of(self, pid):
        """The index of the host (network namespace) process `pid` runs in, or None."""
        name = subprocess.run(["ip", "netns", "identify", str(pid)], capture_output=True, text=True).stdout.strip()
        return self.namespaces.index(name) if name in self.namespaces else None


class BridgedHosts(TwoHosts):
    """TwoHosts' nodes, two or more, on one Ethernet segment: a bridge in the first host's network
    namespace, each other host joined to it by a veth pair, every host one address of one /24
    (the slurm test cluster, the three-host ssh chain)."""
    def up(self):
        if len(self.namespaces) == 2:
            return super().up()
        self.down()  # left over from an interrupted run
        first = self.namespaces[0]
        for ns in self.namespaces:
            run("ip", "netns", "add", ns)
            run("ip", "-n", ns, "link", "set", "lo", "up")
            self.make_node(ns)
        bridge = f"{self.veth}br"
        run("ip", "-n", first, "link", "add", bridge, "type", "bridge")
        run("ip", "-n", first, "addr", "add", self.addresses[0] + "/24", "dev", bridge)
        run("ip", "-n", first, "link", "set", bridge, "up")
        for i, ns in enumerate(self.namespaces[1:], start=1):
            near, far = f"{self.veth}{i}a", f"{self.veth}{i}b"
            run("ip", "link", "add", near, "netns", first, "type", "veth", "peer", "name", far, "netns", ns)
            run("ip", "-n", first, "link", "set", near, "master", bridge, "up")
            run("ip", "-n", ns, "addr", "add", self.addresses[i] + "/24", "dev", far)
            run("ip", "-n", ns, "link", "set", far, "up")
        # Every link carries before the test starts (a link just set up may not yet).
        links = [(first, bridge)] + [(first, f"{self.veth}{i}a") for i in range(1, len(self.namespaces))] + \
                [(ns, f"{self.veth}{i}b") for i, ns in enumerate(self.namespaces[1:], start=1)]
        for ns, link in links:
            for _ in range(100):
                if "LOWER_UP" in run("ip", "-n", ns, "link", "show", "dev", link).stdout:
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError(f"the link {link} of {ns} does not come up")
        self.check_nodes()


def checkpoint_and_kill(hosts, stasis, coord, env, launch, *logs, timeout=120, ended_ok=False):
    """`stasis checkpoint --kill` from host 1, then the launch's end: the new checkpoint's directory.
    With ended_ok, a computation that had already ended (a loaded machine delayed the checkpoint
    past the program's last step) gives None instead of failing the test, for the caller to try
    again with a longer run. A split MPI rank that stayed inside its library past the safe point's
    wait refuses the checkpoint and runs on: asked again, up to 20 times."""
    try:
        for _ in range(20):
            ckpt = subprocess.run(hosts.in_ns(0, stasis, "checkpoint", "--kill", "--coord", coord),
                                  capture_output=True, text=True, env=env, timeout=timeout)
            if ckpt.returncode == 0 or "stayed inside the MPI library" not in ckpt.stderr:
                break
            time.sleep(0.3)
    except subprocess.TimeoutExpired:
        fail(f"the checkpoint did not finish within {timeout} s", *logs)
    if ckpt.returncode != 0:
        if ended_ok and "no processes are connected" in ckpt.stderr + ckpt.stdout:
            launch.wait(timeout=60)
            return None
        fail(f"checkpoint failed: {ckpt.stdout}{ckpt.stderr}", *logs)
    launch.wait(timeout=60)
    return ckpt.stdout.strip().splitlines()[-1]


def launch_on_host1(hosts, stasis, coord, ckpt_dir, program, out_path, env):
    """`stasis launch PROGRAM` on host 1, its output and errors to out_path: the running launch."""
    with open(out_path, "w") as out:
        return subprocess.Popen(hosts.in_ns(0, stasis, "launch", "--coord", coord, "--ckpt-dir", ckpt_dir, "--", *program),
                                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def fail(message, *logs):
    print("FAIL:", message)
    for path in logs:
        if os.path.exists(path):
            print(f"--- {path}:\n{open(path, errors='replace').read()[-4000:]}")
    sys.exit(1)


def skip_reason(nsrsh):
    """Why a multi-host test cannot run here (it then exits 77), or None."""
    if unavailable():
        return unavailable()
    if not os.access(nsrsh, os.X_OK):
        return f"no nsrsh at {nsrsh}"
    return None


def test_environment(tmp, nsrsh, hosts):
    """The environment of a test's commands: its own runtime directory (secret files) and ssh
    stand-in settings; nothing of an outer Stasis."""
    # STASIS_SSH_RELAY=0: the stand-in execs into its remote command, which needs no ssh relay
    # (src/plugins/ssh/README.md); the tests with real ssh (RealSsh) remove it.
    env = dict(os.environ, STASIS_RUNTIME_DIR=os.path.join(tmp, "rt"), NSRSH=nsrsh, NSRSH_MAP=hosts.nsrsh_map(),
               STASIS_SSH_RELAY="0")
    for name in ("STASIS_COORD", "STASIS_SECRET", "STASIS_CKPT_DIR"):
        env.pop(name, None)
    return env


def remove_unless_kept(tmp):
    if os.environ.get("STASIS_TEST_KEEP"):
        print("kept", tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)


def test_directory(prefix):
    """A new directory for one test, on the shared file system (every host sees it)."""
    return tempfile.mkdtemp(prefix=prefix, dir=shared_directory())


def test_run(hosts, nsrsh, prefix, port=7781):
    """A test's temporary directory, environment, coordinator address (on host 1), checkpoint
    directory and coordinator log."""
    tmp = test_directory(prefix)
    ckpt_dir = os.path.join(tmp, "ckpt")
    return (tmp, test_environment(tmp, nsrsh, hosts), f"{hosts.addresses[0]}:{port}", ckpt_dir,
            os.path.join(ckpt_dir, "coordinator.log"))


SSHD = "/usr/sbin/sshd"
SSH_CLIENT = "/usr/bin/ssh"


def real_ssh_unavailable():
    """Why the tests with real OpenSSH cannot run here, or None."""
    missing = [path for path in (SSHD, SSH_CLIENT, "/usr/bin/ssh-keygen") if not os.access(path, os.X_OK)]
    if missing:
        return f"no {', '.join(missing)} (Debian: openssh-server, openssh-client)"
    return None


class RealSsh:
    """A real OpenSSH server on each host (in its network, mount and UTS namespaces), with its own
    configuration, host key and authorised user key in `directory` (the test's, on the shared file
    system), and a client that reaches them: `bin/ssh` in `directory`, first in the PATH that
    environment() gives, runs /usr/bin/ssh -F with a generated configuration (ssh reads ~/.ssh from
    the passwd entry, not $HOME, so nothing of the user's is used). The servers log to
    directory/sshd-N.log; stop() ends them by pid."""

    def __init__(self, hosts, directory):
        self.hosts, self.directory = hosts, os.path.join(directory, "ssh")
        self.client = os.path.join(self.directory, "bin", "ssh")  # the wrapper, as programs run it
        self.servers = []

    def _config(self, index):
        d = self.directory
        return (f"ListenAddress {self.hosts.addresses[index]}\nPort 22\nHostKey {d}/host_key\n"
                f"AuthorizedKeysFile {d}/user_key.pub\nPidFile {d}/sshd-{index}.pid\n"
                "StrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                "KbdInteractiveAuthentication no\nPrintMotd no\nPrintLastLog no\nUseDNS no\nLogLevel INFO\n"
                "MaxStartups 100:30:200\nMaxSessions 100\n")

    def start(self):
        os.makedirs(os.path.join(self.directory, "bin"), exist_ok=True)
        os.chmod(self.directory, 0o700)
        for key in ("host_key", "user_key"):
            run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"stasis test {key}", "-f",
                os.path.join(self.directory, key))
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        client = os.path.join(self.directory, "ssh_config")
        with open(client, "w") as f:
            f.write(f"Host *\n  IdentityFile {self.directory}/user_key\n  IdentitiesOnly yes\n"
                    f"  UserKnownHostsFile {self.directory}/known_hosts\n  StrictHostKeyChecking no\n"
                    "  BatchMode yes\n  LogLevel ERROR\n  ConnectTimeout 20\n")
        with open(self.client, "w") as f:
            f.write(f'#!/bin/sh\nexec {SSH_CLIENT} -F {client} "$@"\n')
        os.chmod(self.client, 0o755)
        for index in range(len(self.hosts.namespaces)):
            config = os.path.join(self.directory, f"sshd_config-{index}")
            with open(config, "w") as f:
                f.write(self._config(index))
            log = os.path.join(self.directory, f"sshd-{index}.log")
            self.servers.append(subprocess.Popen(self.hosts.in_ns(index, SSHD, "-D", "-f", config, "-E", log),
                                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                 stderr=subprocess.DEVNULL))
        env = self.environment(os.environ)
        for index, address in enumerate(self.hosts.addresses):
            for _ in range(100):
                probe = subprocess.run(self.hosts.in_ns(0, "ssh", address, "hostname"), capture_output=True,
                                       text=True, env=env, timeout=60)
                if probe.returncode == 0:
                    break
                if self.servers[index].poll() is not None:
                    raise RuntimeError(f"sshd on host {index + 1} exited: {open(log).read()[-2000:]}")
                time.sleep(0.1)
            else:
                raise RuntimeError(f"ssh to host {index + 1} ({address}) does not work: {probe.stderr}")

    def check_nodes(self):
        """Through real ssh, each host shows its own host name, /tmp and /dev/shm."""
        env = self.environment(os.environ)
        names = [subprocess.run(self.hosts.in_ns(0, "ssh", a, "hostname"), capture_output=True, text=True, env=env,
                                timeout=60).stdout.strip() for a in self.hosts.addresses]
        if len(set(names)) != len(names) or "" in names:
            raise RuntimeError(f"the hosts, reached by ssh, do not have names of their own: {names}")
        for directory in ("/tmp", "/dev/shm"):
            marker = os.path.join(directory, f"stasis-ssh-node-check-{os.getpid()}")
            first, *others = self.hosts.addresses
            made = subprocess.run(self.hosts.in_ns(0, "ssh", first, "touch", marker), env=env, timeout=60)
            seen = [subprocess.run(self.hosts.in_ns(0, "ssh", other, "test", "-e", marker), env=env,
                                   timeout=60).returncode == 0 for other in others]
            subprocess.run(self.hosts.in_ns(0, "ssh", first, "rm", "-f", marker), env=env, timeout=60)
            if made.returncode != 0 or any(seen) or os.path.exists(marker):
                raise RuntimeError(f"host 1's {directory}, reached by ssh, is not its own")
        return names

    def environment(self, env):
        """`env` with this client first in PATH (for programs, mpirun and hydra that run "ssh")."""
        return dict(env, PATH=os.path.join(self.directory, "bin") + ":" + env.get("PATH", "/usr/bin:/bin"))

    def logs(self):
        return [os.path.join(self.directory, f"sshd-{i}.log") for i in range(len(self.hosts.namespaces))]

    def stop(self):
        for server in self.servers:
            server.kill()
            server.wait()
        self.servers = []
