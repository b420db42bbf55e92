"""Two hosts on one machine for the multi-host tests: network namespaces joined by a veth pair,
each with loopback up and one address. Needs root and `ip netns`; always taken down again."""
import os
import shutil
import subprocess
import sys
import tempfile
import time


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
    def __init__(self, namespaces, addresses, veth_prefix):
        self.namespaces, self.addresses, self.veth = namespaces, addresses, veth_prefix

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
            run("ip", "-n", ns, "link", "set", f"{self.veth}{i + 1}", "up")
        # Both ends carry before the test starts (a link just set up may not yet).
        for i, ns in enumerate(self.namespaces):
            for _ in range(100):
                if "LOWER_UP" in run("ip", "-n", ns, "link", "show", "dev", f"{self.veth}{i + 1}").stdout:
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError(f"the link of {ns} does not come up")

    def nsrsh_map(self):
        return ",".join(f"{a}={n}" for a, n in zip(self.addresses, self.namespaces))

    def host_of(self, pid):
        """The index of the namespace process `pid` runs in, or None."""
        name = subprocess.run(["ip", "netns", "identify", str(pid)], capture_output=True, text=True).stdout.strip()
        return self.namespaces.index(name) if name in self.namespaces else None


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
