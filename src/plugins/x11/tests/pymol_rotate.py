# PyMOL (run as `pymol -q pymol_rotate.py -- PDB STEPS PNG`): a molecule as a cartoon, turned 3
# degrees a step with a redraw of the window each, then written as an OpenGL PNG (ray=0).
import sys
import time

from pymol import cmd

pdb, steps, png = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cmd.load(pdb, "molecule")
cmd.show_as("cartoon")
cmd.viewport(320, 240)
for step in range(steps):
    cmd.turn("y", 3)
    cmd.refresh()
    print("step", step, flush=True)
    time.sleep(0.04)
cmd.png(png, ray=0)
print("done", flush=True)
cmd.quit()
