"""Output comparison for tests/ckpt_driver.py: how the outputs of a launch and its restarts are
pieced together and compared with the reference run (pure functions; `ckpt_driver.py --selftest`
exercises them), and the failure, logging and text helpers every part of the driver uses."""
from __future__ import annotations

import difflib
import signal
import time

class TestFailure(Exception):
    pass


def log(msg: str) -> None:
    print(f"[driver {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def tail_text(data: bytes | str, n: int = 15) -> str:
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    lines = data.splitlines()
    prefix = f"    ... ({len(lines) - n} earlier lines)\n" if len(lines) > n else ""
    return prefix + "\n".join("    | " + l for l in lines[-n:]) if lines else "    (empty)"


def status_text(rc) -> str:
    """Exit status as Python reports it, with the signal name for deaths by signal."""
    if rc is None:
        return "still running"
    if rc < 0:
        try:
            return f"{rc} (killed by {signal.Signals(-rc).name})"
        except ValueError:
            return f"{rc} (killed by signal {-rc})"
    return str(rc)


def split_lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def unified_diff(expected: list[bytes], actual: list[bytes], max_lines: int = 80) -> str:
    exp = [l.decode("utf-8", "replace") for l in expected]
    act = [l.decode("utf-8", "replace") for l in actual]
    diff = list(difflib.unified_diff(exp, act, "expected (reference run)", "actual (with stasis)", n=2))
    if not diff:
        return "    (no line difference)"
    out = [("    " + d.rstrip("\n")) for d in diff[:max_lines]]
    if len(diff) > max_lines:
        out.append(f"    ... ({len(diff) - max_lines} more diff lines)")
    return "\n".join(out)


# ----------------------------------------------------------------------------------------------
# Output comparison (pure functions; --selftest exercises them)
# ----------------------------------------------------------------------------------------------

class Segment:
    """Output of one process in the chain launch -> restart 1 -> restart 2 ...

    before_ckpt: how many of this segment's complete lines existed when the checkpoint that the
    NEXT segment restarts from began (those lines must not be printed again), or None if unknown."""

    def __init__(self, name: str, data: bytes, before_ckpt: int | None = None):
        self.name = name
        self.data = data
        self.lines = split_lines(data)
        self.before_ckpt = before_ckpt

    def bytes_before_ckpt(self) -> int:
        return len(b"".join(self.lines[: self.before_ckpt or 0]))


def common_prefix_length(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix, by bisection over slice comparisons (done in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def merge_segments(reference: bytes, segments: list[Segment]) -> tuple[bool, list[bytes], str]:
    """Splices the segments the way a correct restart would: the output of segment j+1 continues
    segment j from some byte k (k >= the bytes of the lines printed before the checkpoint began).
    The cut may fall inside a line: a launcher that forwards its ranks' output (MPICH's hydra)
    writes in chunks, so a checkpoint can come after "step 20 " and before the rest of that line.
    Returns (ok, combined lines, explanation)."""
    combined = segments[0].data
    start = 0  # where the current segment starts inside combined
    notes = []
    for j in range(1, len(segments)):
        prev, seg = segments[j - 1], segments[j]
        final = j == len(segments) - 1
        hi = start + len(prev.data)
        lo = min(start + prev.bytes_before_ckpt(), hi)
        # Every cut keeps combined[:k], so k cannot pass the first difference from the reference.
        top = min(hi, common_prefix_length(combined[:hi], reference))
        chosen = None
        if final:
            k = len(reference) - len(seg.data)
            if lo <= k <= top and reference[k:] == seg.data:
                chosen = k
        elif not seg.data:
            chosen = top if top >= lo else None
        else:
            probe = seg.data[:256]
            k = reference.rfind(probe, lo, top + len(probe))
            while k >= lo:
                if k <= top and reference.startswith(seg.data, k):
                    chosen = k
                    break
                k = reference.rfind(probe, lo, k + len(probe) - 1)
        if chosen is None:
            # Best guess for the diff: where the segment's first line appears after lo, else hi.
            guess = hi
            first_line = seg.lines[0] if seg.lines else b""
            if first_line:
                at = combined.find(first_line, lo, hi)
                guess = at if at >= 0 else hi
            combined = combined[:guess] + seg.data
            first = first_line.decode("utf-8", "replace").rstrip() if first_line else "(nothing)"
            return False, split_lines(combined), (
                f"{seg.name} does not continue {prev.name}: its first line is {first!r}; no cut of "
                f"{prev.name}'s output between byte {lo - start} (end of the {prev.before_ckpt or 0} "
                f"lines printed before the checkpoint began) and byte {hi - start} (all it printed) "
                f"followed by {seg.name}'s output {'equals' if final else 'is a prefix of'} the reference")
        line_no = combined[:chosen].count(b"\n") - combined[:start].count(b"\n")
        notes.append(f"{seg.name} continues {prev.name} after its byte {chosen - start} (line {line_no})")
        combined = combined[:chosen] + seg.data
        start = chosen
    if combined != reference:
        return False, split_lines(combined), "combined output differs from the reference"
    return True, split_lines(combined), "; ".join(notes) or "output equals the reference"


def check_append_file(reference: bytes, actual: bytes) -> tuple[bool, str]:
    """An O_APPEND file after kill -9 and restart: lines written after the checkpoint and before
    the kill are written again by the restarted program, so the file must be the reference with at
    most one repeated run: ref[:j] + ref[i:] with i <= j."""
    ref, act = split_lines(reference), split_lines(actual)
    if act == ref:
        return True, "identical"
    p = 0
    while p < len(act) and p < len(ref) and act[p] == ref[p]:
        p += 1
    rest = act[p:]
    for i in range(p, -1, -1):
        if ref[i:] == rest:
            return True, f"reference with lines {i + 1}..{p} written twice (at-least-once append)"
    return False, f"append file is not the reference with one repeated run (common prefix {p} lines)"
