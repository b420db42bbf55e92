"""`stasis inspect --json` names the state of event descriptors: the timerfd settings of
timerfd_ops and the epoll interest lists of epoll_ops (tests/ beside this file).
usage: inspect_check.py STASIS TIMERFD_OPS EPOLL_OPS"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "files"))
from inspect_common import inspected_descriptors, require  # noqa: E402

stasis, timerfd_ops, epoll_ops = sys.argv[1:4]

timers = inspected_descriptors(stasis, [timerfd_ops, "1000", "30"])
require(timers, "a periodic CLOCK_MONOTONIC timerfd with its interval",
        lambda fd: fd["kind"] == "timerfd" and fd["state"]["clock"] == "CLOCK_MONOTONIC"
        and fd["state"]["interval_ns"] == 30_000_000 and fd["state"]["armed"])
require(timers, "an absolute CLOCK_REALTIME timerfd with its flags by name and unread expirations",
        lambda fd: fd["kind"] == "timerfd" and fd["state"]["clock"] == "CLOCK_REALTIME"
        and fd["state"]["flags"] == ["TFD_TIMER_ABSTIME", "TFD_TIMER_CANCEL_ON_SET"]
        and fd["state"]["unread_expirations"] >= 11)
require(timers, "a disarmed timerfd", lambda fd: fd["kind"] == "timerfd" and not fd["state"]["armed"])

polls = inspected_descriptors(stasis, [epoll_ops, "1000", "50"])
require(polls, "an epoll interest list with EPOLLET and 64-bit data",
        lambda fd: fd["kind"] == "epoll" and any("EPOLLET" in i["events"] and i["data"] >= 0xfeedf00d00000000
                                                 for i in fd["state"]["interests"]))
require(polls, "an EPOLLEXCLUSIVE interest", lambda fd: fd["kind"] == "epoll" and any(
    "EPOLLEXCLUSIVE" in i["events"] for i in fd["state"]["interests"]))
require(polls, "an eventfd counter", lambda fd: fd["kind"] == "eventfd" and "counter" in fd["state"])
print("inspect --json names timerfd settings, epoll interests and eventfd counters")
