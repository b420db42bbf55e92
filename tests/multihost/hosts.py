"""Two hosts on one machine for the multi-host tests: network namespaces joined by a veth pair,
each with loopback up and one address. Needs root and `ip netns`; always taken down again."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

# The remote shell the tests use as ssh (bin/ssh runs it with an empty environment).
NSRSH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "nsrsh")


def run(*argv, check=True, **kw):
    return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=60, **kw)


def unavailable():
    """Why these tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None or subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        return "`ip netns` is not available"
    return None


class TwoHosts:
    """`spare_addresses`: a second address per host, standing for other machines a restart moves to."""
    def __init__(self, namespaces, addresses, veth_prefix, spare_addresses=()):
        self.namespaces, self.addresses, self.veth = namespaces, addresses, veth_prefix
        self.spare_addresses = spare_addresses

    def in_ns(self, index, *argv):
        return ["ip", "netns", "exec", self.namespaces[index], *argv]

    def down(self):
        # A process left in a namespace (a coordinator, a daemon of a failed run) would keep it,
        # with its addresses, alive after `ip netns del`, and confuse the next run's connections.
        for ns in self.namespaces:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                subprocess.run(["kill", "-9", pid], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def up(self):
        self.down()  # left over from an interrupted run
        for ns in self.namespaces:
            run("ip", "netns", "add", ns)
            run("ip", "-n", ns, "link", "set", "lo", "up")
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

    def prefer_spare_addresses(self):
        """Connections from each host leave from its spare address from now on, as from another machine."""
        for i, ns in enumerate(self.namespaces):
            subnet = self.addresses[i].rsplit(".", 1)[0] + ".0/24"
            run("ip", "-n", ns, "route", "replace", subnet, "dev", f"{self.veth}{i + 1}", "src", self.spare_addresses[i])

    def nsrsh_map(self):
        pairs = list(zip(self.addresses, self.namespaces)) + list(zip(self.spare_addresses, self.namespaces))
        return ",".join(f"{a}={n}" for a, n in pairs)

    def host_of(self, pid):
        """The index of the namespace process `pid` runs in, or None."""
        name = subprocess.run(["ip", "netns", "identify", str(pid)], capture_output=True, text=True).stdout.strip()
        return self.namespaces.index(name) if name in self.namespaces else None


def checkpoint_and_kill(hosts, stasis, coord, env, launch, *logs, timeout=120):
    """`stasis checkpoint --kill` from host 1, then the launch's end: the new checkpoint's directory."""
    try:
        ckpt = subprocess.run(hosts.in_ns(0, stasis, "checkpoint", "--kill", "--coord", coord),
                              capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"the checkpoint did not finish within {timeout} s", *logs)
    if ckpt.returncode != 0:
        fail(f"checkpoint failed: {ckpt.stdout}{ckpt.stderr}", *logs)
    launch.wait(timeout=60)
    return ckpt.stdout.strip().splitlines()[-1]


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
    env = dict(os.environ, STASIS_RUNTIME_DIR=os.path.join(tmp, "rt"), NSRSH=nsrsh, NSRSH_MAP=hosts.nsrsh_map())
    for name in ("STASIS_COORD", "STASIS_SECRET", "STASIS_CKPT_DIR"):
        env.pop(name, None)
    return env


def remove_unless_kept(tmp):
    if os.environ.get("STASIS_TEST_KEEP"):
        print("kept", tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)


def test_run(hosts, nsrsh, prefix, port=7781):
    """A test's temporary directory, environment, coordinator address (on host 1), checkpoint
    directory and coordinator log."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    ckpt_dir = os.path.join(tmp, "ckpt")
    return (tmp, test_environment(tmp, nsrsh, hosts), f"{hosts.addresses[0]}:{port}", ckpt_dir,
            os.path.join(ckpt_dir, "coordinator.log"))
