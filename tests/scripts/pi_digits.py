#!/usr/bin/python3
"""Prints the digits of pi progressively (Gibbons' unbounded spigot), one progress line per
group of digits, sleeping between groups; deterministic output.
usage: pi_digits.py [GROUPS=40] [DIGITS_PER_GROUP=25] [DELAY_MS=50]"""
import sys
import time


def pi_digits():
    q, r, t, k, n, l = 1, 0, 1, 1, 3, 3
    while True:
        if 4 * q + r - t < n * t:
            yield n
            q, r, t, k, n, l = (10 * q, 10 * (r - n * t), t, k,
                                (10 * (3 * q + r)) // t - 10 * n, l)
        else:
            q, r, t, k, n, l = (q * k, (2 * q + r) * l, t * l, k + 1,
                                (q * (7 * k + 2) + r * l) // (t * l), l + 2)


def main():
    groups = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    per = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    delay = (int(sys.argv[3]) if len(sys.argv) > 3 else 50) / 1000.0
    gen = pi_digits()
    state = {"digits": [], "hash": 0}
    for g in range(1, groups + 1):
        chunk = "".join(str(next(gen)) for _ in range(per))
        state["digits"].append(chunk)
        for ch in chunk:
            state["hash"] = (state["hash"] * 131 + ord(ch)) % (1 << 61)
        print(f"step {g} digits {chunk} hash {state['hash']:x}", flush=True)
        time.sleep(delay)
    print(f"done digits {groups * per} hash {state['hash']:x}", flush=True)


if __name__ == "__main__":
    main()
