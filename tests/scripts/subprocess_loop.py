#!/usr/bin/python3
"""Each step runs a child through subprocess (which closes every descriptor but 0-2 before exec)
that lives a while, so checkpoints find it running; after a restart such children must still
join the computation (they find it through their parent)."""
import subprocess
import sys

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
total = 0
for step in range(1, steps + 1):
    out = subprocess.run(["/bin/sh", "-c", f"sleep 0.2; echo {step * step}"], capture_output=True,
                         text=True, check=True).stdout
    total += int(out)
    print(f"step {step} total {total}", flush=True)
print("done")
