#!/usr/bin/env python3
"""exports.py FRONT STASIS_MPI MPICC NATIVE_PROGRAM: the Open MPI front (FRONT, libmpi.so.40)
stands in for the libmpi.so.40 that NATIVE_PROGRAM (built with MPICC, Open MPI's mpicc) loads.

Passes when: the front's soname is libmpi.so.40; its lists (predefined.def, not_forwarded.def)
are what generate_lists.py makes from the installed Open MPI (so a new Open MPI cannot slip by);
it exports every MPI_*, PMPI_* and OMPI_C_* function (the predefined attribute copy and delete
functions mpi.h names) the real library exports, and every data object the
real mpi.h declares with the real size (a copy relocation takes the size the program was linked
with); and libstasis_mpi.so (STASIS_MPI) binds its own MPI_* calls to itself (no dynamic
relocation names an MPI_* symbol), without which the front would receive them."""
import re
import subprocess
import sys
import tempfile
from pathlib import Path


def run(*command):
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def exported(library):
    """name -> (type letter, size) of the defined dynamic symbols."""
    table = {}
    for line in run("nm", "-DS", "--defined-only", library).splitlines():
        fields = line.split()
        if len(fields) == 4:
            table[fields[3]] = (fields[2], int(fields[1], 16))
    return table


def main():
    front, stasis_mpi, mpicc, native = sys.argv[1:5]
    faults = []
    soname = re.search(r"\(SONAME\)\s+Library soname: \[(.*)\]", run("readelf", "-d", front))
    if not soname or soname.group(1) != "libmpi.so.40":
        faults.append(f"{front}: soname {soname.group(1) if soname else None}, not libmpi.so.40")
    found = re.search(r"libmpi\.so\.40 => (\S+)", run("ldd", native))
    if not found:
        sys.exit(f"FAIL: {native} loads no libmpi.so.40")
    real = found.group(1)
    header = Path(run(mpicc, "--showme:incdirs").split()[0]) / "mpi.h"
    here = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as fresh:
        run(sys.executable, str(here / "generate_lists.py"), str(header), real, fresh)
        for name in ("predefined.def", "not_forwarded.def"):
            made = (Path(fresh) / name).read_text().splitlines()[1:]
            kept = (here / name).read_text().splitlines()[1:]
            if made != kept:
                faults.append(f"{name} is not what generate_lists.py makes from {header} and {real} "
                              f"({len(set(made) ^ set(kept))} lines differ): run it again")
    real_symbols, front_symbols = exported(real), exported(front)
    for name, (kind, size) in real_symbols.items():
        if re.match(r"P?MPI_|OMPI_C_", name) and kind in "TW" and front_symbols.get(name, ("?",))[0] not in ("T", "W"):
            faults.append(f"{name}: a function of {real}, not exported by the front")
    declared = re.findall(r"^OMPI_DECLSPEC\s+extern\s+[^(;]*?[\s*](\w+);", header.read_text(), re.M)
    objects = 0
    for name in declared:
        if name in real_symbols and real_symbols[name][0] in "BDRV":
            objects += 1
            if name not in front_symbols or front_symbols[name][1] != real_symbols[name][1]:
                faults.append(f"{name}: {real_symbols[name][1]} bytes in {real}, "
                              f"{front_symbols.get(name, (None, 'no'))[1]} in the front")
    relocations = [line.split()[4] for line in run("readelf", "-rW", stasis_mpi).splitlines()
                   if len(line.split()) > 4 and re.match(r"P?MPI_", line.split()[4])]
    if relocations:
        faults.append(f"{stasis_mpi} reaches its own {sorted(set(relocations))} through the global scope")
    if faults:
        print("FAIL:\n  " + "\n  ".join(faults))
        sys.exit(1)
    functions = sum(1 for name, (kind, _) in real_symbols.items() if re.match(r"P?MPI_", name) and kind in "TW")
    print(f"the front exports the {functions} MPI_*/PMPI_* functions and {objects} data objects of {real}")


if __name__ == "__main__":
    main()
