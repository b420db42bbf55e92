#!/usr/bin/python3
"""mpi4py job for checkpoint tests: ranks pass a block of integers around a ring and reduce it.
usage: mpirun -np R python3 mpi_ring.py [STEPS=40] [DELAY_MS=50] [WORDS=2000]
Per step each rank sends its block to the next rank and receives the previous one's (sendrecv of
pickled lists, and Sendrecv of a buffer), mixes it in, and all ranks combine a checksum with
allreduce; rank 0 prints "step N sum S". Integer arithmetic only: the output depends only on the
arguments and the number of ranks."""
import sys
import time
from array import array

from mpi4py import MPI

MASK = (1 << 64) - 1
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
delay = int(sys.argv[2]) if len(sys.argv) > 2 else 50
words = int(sys.argv[3]) if len(sys.argv) > 3 else 2000

state = (rank + 1) * 0x9E3779B97F4A7C15 & MASK
block = []
for _ in range(words):
    state = (state * 6364136223846793005 + 1442695040888963407) & MASK
    block.append(state)
right, left = (rank + 1) % size, (rank - 1) % size
received = array("Q", bytes(8 * words))
for step in range(1, steps + 1):
    theirs = comm.sendrecv(block, dest=right, sendtag=step, source=left, recvtag=step)
    comm.Sendrecv(array("Q", block), dest=right, sendtag=step, recvbuf=received, source=left, recvtag=step)
    assert list(received) == theirs
    block = [((mine * 31) ^ theirs[(i + step) % words]) & MASK for i, mine in enumerate(block)]
    total = comm.allreduce(sum(block) & MASK, op=MPI.SUM) & MASK
    if rank == 0:
        print(f"step {step} sum {total:016x}", flush=True)
    time.sleep(delay / 1000)
final = comm.reduce(sum(block) & MASK, op=MPI.SUM, root=0)
if rank == 0:
    print(f"done ranks {size} checksum {final & MASK:016x}", flush=True)
