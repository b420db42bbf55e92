#!/usr/bin/env python3
"""fortran_exports.py FRONT MPIF90 NATIVE_PROGRAM: the Fortran front (FRONT, libmpi_mpifh.so.40)
stands in for the libmpi_mpifh.so.40 that NATIVE_PROGRAM (built with MPIF90, Open MPI's mpif90)
loads.

Passes when: the front's soname is libmpi_mpifh.so.40; its lists (fortran_predefined.def,
fortran_not_forwarded.def) are what generate_fortran_lists.py makes from the installed Open MPI
(so a new Open MPI, whose numbers or functions differ, cannot slip by); it exports every function
the real library exports and every sentinel common block (mpi_fortran_*_) the real libmpi.so.40
defines for it; and it needs none of Open MPI's own libraries."""
import re
import subprocess
import sys
import tempfile
from pathlib import Path


def run(*command):
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def exported(library, letters):
    return {fields[2] for fields in map(str.split, run("nm", "-D", "--defined-only", library).splitlines())
            if len(fields) == 3 and fields[1] in letters}


def dynamic_entries(library, tag):
    """The values of the library's dynamic section entries of one tag (SONAME, NEEDED)."""
    return re.findall(rf"\({tag}\)\s+\S.*?: \[(.*)\]", run("readelf", "-d", library))


def stale_lists(generator, inputs, names):
    """The checked-in lists (next to the generator) that differ from what it makes now."""
    with tempfile.TemporaryDirectory() as fresh:
        run(sys.executable, str(generator), *map(str, inputs), fresh)
        return [name for name in names if (Path(fresh) / name).read_text().splitlines()[1:]
                != (generator.parent / name).read_text().splitlines()[1:]]


def main():
    front, mpif90, native = sys.argv[1:4]
    faults = []
    if dynamic_entries(front, "SONAME") != ["libmpi_mpifh.so.40"]:
        faults.append(f"{front}: soname {dynamic_entries(front, 'SONAME')}, not libmpi_mpifh.so.40")
    needed = dynamic_entries(front, "NEEDED")
    if any(re.match(r"lib(mpi|open-pal|open-rte)", name) for name in needed):
        faults.append(f"{front} needs {needed}: the front must load no library of Open MPI's")
    loads = dict(re.findall(r"(\S+) => (\S+)", run("ldd", native)))
    real = loads.get("libmpi_mpifh.so.40") or sys.exit(f"FAIL: {native} loads no libmpi_mpifh.so.40")
    handles = Path(run(mpif90, "--showme:incdirs").split()[0]) / "mpif-handles.h"
    stale = stale_lists(Path(__file__).resolve().parents[1] / "generate_fortran_lists.py", (handles, real),
                        ("fortran_predefined.def", "fortran_not_forwarded.def"))
    if stale:
        faults.append(f"{stale}: not what generate_fortran_lists.py makes from {handles} and {real} (run it again "
                      f"and check the front's bindings)")
    ours = exported(front, "TW")
    missing = sorted(exported(real, "TW") - ours)
    if missing:
        faults.append(f"{len(missing)} functions of {real} not exported, e.g. {missing[:5]}")
    real_libmpi = re.search(r"libmpi\.so\.40 => (\S+)", run("ldd", real)).group(1)
    sentinels = {name for name in exported(real_libmpi, "BD") if name.startswith("mpi_fortran_")}
    if not sentinels or sentinels - exported(front, "BD"):
        faults.append(f"sentinels {sorted(sentinels - exported(front, 'BD'))} of {real_libmpi} not exported")
    if faults:
        sys.exit("FAIL: " + "\n".join(faults))
    print(f"Fortran front: {len(ours)} functions ({len(exported(real, 'TW'))} in {real}), {len(sentinels)} sentinels, "
          f"lists current")


if __name__ == "__main__":
    main()
