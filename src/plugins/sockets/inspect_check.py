"""`stasis inspect --json` names the state of sockets: addresses, options and queued bytes of the
TCP connections of stream_server, queued datagrams of datagram_peers (tests/ beside this file).
usage: inspect_check.py STASIS STREAM_SERVER DATAGRAM_PEERS"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "files"))
from inspect_common import inspected_descriptors, require  # noqa: E402

stasis, stream_server, datagram_peers = sys.argv[1:4]

tcp = inspected_descriptors(stasis, [stream_server, "tcp4", "1000", "40"], lines_first=12)
require(tcp, "a TCP listener on a loopback address with its backlog",
        lambda fd: fd["kind"] == "tcp-listener" and fd["state"]["local"].startswith("127.0.0.1:")
        and fd["state"]["backlog"] > 0)
require(tcp, "a TCP connection with both addresses and bytes queued at it",
        lambda fd: fd["kind"] == "tcp-connection" and fd["state"]["peer"].startswith("127.0.0.1:")
        and fd["state"]["queued_bytes"] > 0)

udp = inspected_descriptors(stasis, [datagram_peers, "udp4", "1000", "30"], lines_first=3)
require(udp, "a UDP socket with its address and queued datagrams",
        lambda fd: fd["kind"] == "udp-socket" and fd["state"]["local"].startswith("127.0.0.1:")
        and fd["state"]["queued_datagrams"] > 0)
print("inspect --json names socket addresses, queued bytes and datagrams")
