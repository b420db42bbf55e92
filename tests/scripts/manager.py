#!/usr/bin/python3
"""A multiprocessing Manager (a server process reached over a named Unix socket) shared by a
parent and two worker processes, with a Pipe (a socketpair) back to the parent."""
import multiprocessing
import sys
import time


def worker(shared, lock, conn, index, steps):
    for step in range(1, steps + 1):
        with lock:
            shared[f"w{index}"] = shared.get(f"w{index}", 0) + step * (index + 1)
        conn.send((index, step))
        time.sleep(0.03)
    conn.close()


if __name__ == "__main__":
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    multiprocessing.set_start_method("fork")
    with multiprocessing.Manager() as manager:
        shared = manager.dict()
        lock = manager.Lock()
        pipes = [multiprocessing.Pipe() for _ in range(2)]
        workers = [multiprocessing.Process(target=worker, args=(shared, lock, pipes[i][1], i, steps))
                   for i in range(2)]
        for w in workers:
            w.start()
        for step in range(1, steps + 1):
            got = sorted(pipes[i][0].recv() for i in range(2))
            with lock:
                snapshot = dict(shared)
            print(f"step {step} got {got} w0 {snapshot.get('w0', 0) >= 0} total {len(snapshot)}",
                  flush=True)
        for w in workers:
            w.join()
        print(f"final {sorted(shared.items())}", flush=True)
