#!/usr/bin/python3
"""A real numerical mpi4py job for the checkpoint tests (mpi.openmpi.jacobi): explicit heat
diffusion on a 1-D rod split across the ranks, each step a Jacobi update after exchanging one
halo cell with each neighbour (Sendrecv of numpy buffers); every REPORT steps the ranks reduce the
sum of the temperatures to rank 0, which prints "iter N checksum S". The same arguments and
number of ranks give the same lines bit for bit, so a restarted run can be compared with one that
was never stopped. Needs Debian's python3-mpi4py and python3-numpy (run /usr/bin/python3).
With GATE (a file name), rank 0 waits after its first report until GATE exists, while the other
ranks wait in their next Sendrecv with a halo in flight: a test checkpoints there, whatever the
machine's speed, and opens the gate (mpi_split.ompi_abi.jacobi: tests/app_restart.py there).
usage: mpirun -np R /usr/bin/python3 jacobi.py [CELLS_PER_RANK=200000] [STEPS=20000] [REPORT=1000] [GATE]"""
import os
import sys
import time

import numpy as np
from mpi4py import MPI


def main():
    args = [int(a) for a in sys.argv[1:4]]
    cells, steps, report = args + [200000, 20000, 1000][len(args):]
    gate = sys.argv[4] if len(sys.argv) > 4 else None
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    left = rank - 1 if rank > 0 else MPI.PROC_NULL  # the rod's ends keep a zero halo
    right = rank + 1 if rank < size - 1 else MPI.PROC_NULL

    # u[0] and u[-1] are halo cells holding the neighbours' edge values.
    u = np.zeros(cells + 2)
    first = rank * cells
    u[1:-1] = np.sin(np.arange(first, first + cells) * 0.001) ** 2

    started = time.time()
    for step in range(1, steps + 1):
        comm.Sendrecv(u[1:2], dest=left, sendtag=0, recvbuf=u[-1:], source=right, recvtag=0)
        comm.Sendrecv(u[-2:-1], dest=right, sendtag=1, recvbuf=u[0:1], source=left, recvtag=1)
        u[1:-1] += 0.25 * (u[:-2] - 2.0 * u[1:-1] + u[2:])
        if step % report == 0:
            total = comm.reduce(float(u[1:-1].sum()), op=MPI.SUM, root=0)
            if rank == 0:
                print(f"iter {step} checksum {total:.12e}", flush=True)
                while gate and step == report and not os.path.exists(gate):
                    time.sleep(0.05)
    if rank == 0:
        print(f"done: {size} ranks, {cells} cells each, {steps} steps in {time.time() - started:.1f} s",
              file=sys.stderr)


if __name__ == "__main__":
    main()
