"""Slurm across nodes on one machine: a private cluster of two nodes, each a test host of its own
(tests/multihost/hosts.py: network, mount and UTS namespaces, so each has its own address, /tmp,
/dev/shm and host name), each running its own slurmd (NodeName its host name, NodeAddr its
address, spool, pid and log files of its own). slurmctld runs on the first node, which is also
the login node where the tests' Slurm and Stasis commands run. One munged, outside the hosts,
serves both: its socket is in the test directory, which every host sees, as the nodes of a
cluster share one munge key. The test directory is on the shared file system
(hosts.test_directory), never in a host's /tmp."""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from multihost.hosts import BridgedHosts, remove_unless_kept, run, test_directory, unavailable  # noqa: E402
from slurm.slurm_cluster import Cluster, Node, skip_reason as slurm_skip_reason  # noqa: E402

NAMESPACES = ("stasis_slurm1", "stasis_slurm2", "stasis_slurm3")
ADDRESSES = ("10.210.0.1", "10.210.0.2", "10.210.0.3")
PORTS = (6817, 6818)  # slurmctld's and slurmd's: the hosts' network namespaces are the test's own


def skip_reason(conf_template):
    """Why a test on the two-node cluster cannot run here (it then exits 77), or None."""
    if not shutil.which("findmnt"):
        return "no findmnt (Debian: util-linux) to give each node the machine's cgroup hierarchies"
    return slurm_skip_reason(conf_template) or unavailable()


class SlurmNodes:
    """The hosts (two, or `count`) and the cluster on them: `up()` then `down()`, also after a failure."""
    def __init__(self, conf_template, prefix, count=2):
        # A pid namespace per node too: the tasks of two nodes may have the same pids, as on a cluster.
        self.hosts = BridgedHosts(NAMESPACES[:count], ADDRESSES[:count], "stasis_lv", own_pids=True)
        self.tmp = test_directory(prefix)
        nodes = [Node(ns.replace("_", "-"), address, on=lambda argv, i=i: self.hosts.in_ns(i, *argv),
                      outer_pid=lambda pid, i=i: self.hosts.outer_pid(i, pid))
                 for i, (ns, address) in enumerate(zip(NAMESPACES[:count], ADDRESSES[:count]))]
        # Each slurmd's spool in its node's own /tmp, as on a cluster's nodes.
        self.cluster = Cluster(self.tmp, conf_template, nodes, PORTS, spool="/tmp/slurmd-spool")
        self.names = [n.name for n in nodes]

    def on(self, index, *argv):
        """argv run on node `index` (0: the login node)."""
        return self.hosts.in_ns(index, *argv)

    def up(self):
        self.hosts.up()
        # slurmd looks at the cgroup file system at start even with proctrack/linuxproc, and wants
        # what /proc/self/cgroup shows (this machine's cgroup v1 hierarchies, or v2): a host's own
        # /sys (hosts.py mounts one for its network devices) has none, so it gets the same.
        cgroups = subprocess.run(["findmnt", "-rn", "-t", "cgroup,cgroup2", "-o", "TARGET,FSTYPE,OPTIONS"],
                                 capture_output=True, text=True).stdout.split("\n")
        mounts = ["mount -t tmpfs -o mode=755 tmpfs /sys/fs/cgroup"] if os.path.ismount("/sys/fs/cgroup") and \
            subprocess.run(["stat", "-f", "-c", "%T", "/sys/fs/cgroup"], capture_output=True, text=True).stdout.strip() \
            == "tmpfs" else []
        for line in filter(None, cgroups):
            target, fstype, options = line.split()
            mounts.append(f"mkdir -p {target} && mount -t {fstype} -o {options} {fstype} {target}")
        for i in range(len(self.names)):
            run(*self.hosts.in_ns(i, "sh", "-ec", " && ".join(mounts) or "true"))
        self.cluster.start()

    def down(self):
        try:
            self.cluster.stop()
        finally:
            self.hosts.down()
            remove_unless_kept(self.tmp)
