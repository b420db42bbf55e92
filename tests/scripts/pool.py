#!/usr/bin/python3
"""subprocess and a multiprocessing pool of 4 workers, checkpointed as one process tree."""
import multiprocessing
import subprocess
import sys
import time


def work(n):
    total = 0
    for k in range(20000):
        total = (total * 31 + n * k) % 1000003
    return total


if __name__ == "__main__":
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    with multiprocessing.Pool(4) as pool:
        acc = 0
        for step in range(1, steps + 1):
            results = pool.map(work, range(step, step + 8))
            echoed = subprocess.run(["echo", str(sum(results) % 997)], capture_output=True,
                                    text=True, check=True).stdout.strip()
            acc = (acc * 7 + sum(results)) % 1000000007
            print(f"step {step} sum {sum(results)} echo {echoed} acc {acc}", flush=True)
            time.sleep(0.1)
    print(f"done {acc}")
