# The Open MPI ABI front (README.md), included by ../tests.cmake: the suite's own split test
# programs, built with Open MPI's plain mpicc (the native builds ../tests.cmake makes:
# split_ring_openmpi, ring_in_flight_openmpi), run unchanged through the front as split
# processes, and are checkpointed, killed and restarted, under Open MPI and under MPICH.
set(OMPI_ABI_DIR ${MPI_SPLIT_DIR}/ompi_abi)
if(STASIS_OPENMPI_CC AND STASIS_OPENMPI_RUN)
  set(native_dir ${CMAKE_BINARY_DIR}/tests/targets)
  set(not_forwarded ${native_dir}/ompi_abi_not_forwarded_openmpi)
  add_custom_command(OUTPUT ${not_forwarded}
                     COMMAND ${STASIS_OPENMPI_CC} -O2 -o ${not_forwarded} ${OMPI_ABI_DIR}/tests/not_forwarded.c -ldl
                     DEPENDS ${OMPI_ABI_DIR}/tests/not_forwarded.c ${OMPI_ABI_DIR}/error_classes.def VERBATIM)
  add_custom_target(ompi_abi_not_forwarded_openmpi ALL DEPENDS ${not_forwarded})
  # split_ring as a position-dependent executable (copy_relocated.same_output below).
  set(split_ring_no_pie ${native_dir}/split_ring_openmpi_no_pie)
  add_custom_command(OUTPUT ${split_ring_no_pie}
                     COMMAND ${STASIS_OPENMPI_CC} -O2 -fno-pie -no-pie -o ${split_ring_no_pie}
                             ${MPI_SPLIT_DIR}/tests/split_ring.c
                     DEPENDS ${MPI_SPLIT_DIR}/tests/split_ring.c ${MPI_SPLIT_DIR}/tests/split_test_common.h VERBATIM)
  add_custom_target(split_ring_openmpi_no_pie ALL DEPENDS ${split_ring_no_pie})
  # What the front exports against the installed Open MPI, and its lists against their generator.
  add_test(NAME mpi_split.ompi_abi.exports
           COMMAND ${STASIS_TEST_PYTHON} ${OMPI_ABI_DIR}/tests/exports.py $<TARGET_FILE:stasis_ompi_abi>
                   $<TARGET_FILE:stasis_mpi> ${STASIS_OPENMPI_CC} ${native_dir}/ring_in_flight_openmpi)
  set_tests_properties(mpi_split.ompi_abi.exports PROPERTIES TIMEOUT 60 LABELS mpi_split)
  # split_ring (communicator splits and dups, a split giving MPI_COMM_NULL, a vector datatype,
  # groups, nonblocking exchanges, collectives) built -no-pie: it copy-relocates Open MPI's
  # predefined objects into itself, so the handles it compares with (MPI_COMM_NULL,
  # MPI_REQUEST_NULL) are its copies, which the front must hand out. 3 ranks through the front
  # print what its native run prints. (Its PIE build is restarted under MPICH below.)
  add_test(NAME mpi_split.ompi_abi.copy_relocated.same_output
           COMMAND ${OMPI_ABI_DIR}/tests/front_same_output.sh ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN} 3
                   ${STASIS_LIBDIR}/ompi_abi ${split_ring_no_pie} 12)
  set_tests_properties(mpi_split.ompi_abi.copy_relocated.same_output PROPERTIES ENVIRONMENT
                       "OMPI_MCA_rmaps_base_oversubscribe=1;FRONT_COPY_RELOCATED=ompi_mpi_comm_null")
  # The PIE build of split_ring launched by MPICH's mpirun, over MPICH, through the front.
  if(STASIS_MPICH_RUN)
    add_test(NAME mpi_split.ompi_abi.on_mpich.same_output
             COMMAND ${OMPI_ABI_DIR}/tests/front_same_output.sh ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN} 3
                     ${STASIS_LIBDIR}/ompi_abi ${native_dir}/split_ring_openmpi 12)
    set_tests_properties(mpi_split.ompi_abi.on_mpich.same_output PROPERTIES TIMEOUT 200 LABELS "mpi;mpi_split"
                         RESOURCE_LOCK mpi_ports ENVIRONMENT
                         "OMPI_MCA_rmaps_base_oversubscribe=1;FRONT_LAUNCHER=${STASIS_MPICH_RUN}")
  endif()
  # A function the front does not forward ends the job with a line naming it.
  add_test(NAME mpi_split.ompi_abi.not_forwarded
           COMMAND ${OMPI_ABI_DIR}/tests/not_forwarded.sh ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN}
                   ${STASIS_LIBDIR}/ompi_abi ${not_forwarded})
  set_tests_properties(mpi_split.ompi_abi.copy_relocated.same_output
                       mpi_split.ompi_abi.not_forwarded PROPERTIES
                       TIMEOUT 200 LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports)
  # Debian's hpcc, unmodified, through the front: reads its input, then runs to its end or stops
  # by name at the first function the front does not forward (none since front_ops.c).
  add_test(NAME mpi_split.ompi_abi.hpcc
           COMMAND ${OMPI_ABI_DIR}/tests/hpcc_front.sh ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN} ${STASIS_LIBDIR}/ompi_abi
                   ${OMPI_ABI_DIR}/tests/hpccinf.txt)
  set_tests_properties(mpi_split.ompi_abi.hpcc PROPERTIES TIMEOUT 400 LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports
                       SKIP_RETURN_CODE 77)
  # hpcc checkpointed and killed once MPIRandomAccess has begun (its user operations and struct
  # datatype live, updates in flight: replayed and drained), restarted over fresh Open MPI lower halves:
  # the verification lines of the native uninterrupted run (tests/app_restart.py).
  add_test(NAME mpi_split.ompi_abi.hpcc.split_restart
           COMMAND ${STASIS_TEST_PYTHON} ${OMPI_ABI_DIR}/tests/app_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                   ${STASIS_OPENMPI_RUN} hpcc ${OMPI_ABI_DIR}/tests/hpccinf.txt)
  set_tests_properties(mpi_split.ompi_abi.hpcc.split_restart PROPERTIES TIMEOUT 400 LABELS "mpi;mpi_split"
                       RESOURCE_LOCK mpi_ports SKIP_RETURN_CODE 77)
  # NWChem (Debian's nwchem: Fortran and C through both fronts, Global Arrays over MPI one-sided
  # communication, error handlers, info objects, hindexed and subarray datatypes) on a direct SCF
  # of water (tests/nwchem_water.nw), checkpointed and killed after its second SCF iteration,
  # restarted over fresh Open MPI lower halves: every SCF iteration's energy and the final
  # energies of the native uninterrupted run, to 1e-10 hartree (tests/app_restart.py).
  add_test(NAME mpi_split.ompi_abi.nwchem.split_restart
           COMMAND ${STASIS_TEST_PYTHON} ${OMPI_ABI_DIR}/tests/app_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                   ${STASIS_OPENMPI_RUN} nwchem ${OMPI_ABI_DIR}/tests/nwchem_water.nw)
  set_tests_properties(mpi_split.ompi_abi.nwchem.split_restart PROPERTIES TIMEOUT 900 LABELS "mpi;mpi_split"
                       RESOURCE_LOCK mpi_ports SKIP_RETURN_CODE 77)
  # Checkpoints while ranks wait in MPI_Recv, MPI_Wait, MPI_Barrier and MPI_Allreduce
  # (../tests/blocking_restart.py), blocking_ranks' Open MPI build through the front: the front
  # adds no place where a rank waits outside the split layer's safe points.
  add_test(NAME mpi_split.ompi_abi.blocking_restart
           COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/blocking_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                   ${STASIS_OPENMPI_RUN} 2 ${native_dir}/blocking_ranks_openmpi ${native_dir}/blocking_ranks_openmpi 4)
  set_tests_properties(mpi_split.ompi_abi.blocking_restart PROPERTIES TIMEOUT 400 LABELS "mpi;mpi_split"
                       RESOURCE_LOCK mpi_ports)
  # The split restart (../tests/split_restart.py) through the front: `stasis launch --mpi --
  # mpirun`, checkpoint --kill, restart under a new launcher (each rank must say it started a
  # fresh lower half of the library named), checkpoint --kill of the restarted job and its
  # restart to the end, the first checkpoint restarted again: each the native output.
  # ring_in_flight under Open MPI again, with a message in flight to every rank at each
  # checkpoint (an Isend request the program holds across it).
  add_test(NAME mpi_split.ompi_abi.openmpi_to_openmpi.split_restart
           COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/split_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                   ${STASIS_OPENMPI_RUN} 2 ${native_dir}/ring_in_flight_openmpi ${native_dir}/ring_in_flight_openmpi
                   12 200 ${STASIS_OPENMPI_RUN} openmpi)
  set_tests_properties(mpi_split.ompi_abi.openmpi_to_openmpi.split_restart PROPERTIES TIMEOUT 400
                       LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports)
  # split_ring on 3 ranks restarted under MPICH's launcher and library: the communicators (a
  # dup, a split, one giving two ranks MPI_COMM_NULL) and the vector datatype it made under Open
  # MPI keep their handles, now made by MPICH. A binary built for Open MPI's ABI goes on over MPICH.
  # Debian's unmodified LAMMPS (lmp: C++, liblammps.so.0 on libmpi.so.40) on an input that
  # needs no simulation box (whose MPI_Cart_create the front does not forward yet): rank 0 reads
  # every command and broadcasts it, and the input loops by reading itself again
  # (tests/lammps_steps.in). Checkpointed and killed under Open MPI, restarted under MPICH
  # (under Open MPI where MPICH is missing), chained and restarted twice: the native output.
  # The applications' restarts run under MPICH where it is installed, else under Open MPI again.
  set(restart_to openmpi)
  set(restart_to_run ${STASIS_OPENMPI_RUN})
  if(STASIS_MPICH_RUN)
    set(restart_to mpich)
    set(restart_to_run ${STASIS_MPICH_RUN})
  endif()
  find_program(STASIS_LMP lmp)
  if(STASIS_LMP)
    add_test(NAME mpi_split.ompi_abi.lammps.openmpi_to_${restart_to}.split_restart
             COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/split_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                     ${STASIS_OPENMPI_RUN} 2 ${OMPI_ABI_DIR}/tests/lammps_steps.sh ${OMPI_ABI_DIR}/tests/lammps_steps.sh
                     10 200 ${restart_to_run} ${restart_to})
    set_tests_properties(mpi_split.ompi_abi.lammps.openmpi_to_${restart_to}.split_restart PROPERTIES TIMEOUT 400
                         LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports)
    # LAMMPS's LJ melt (tests/lammps_melt.in: 864 atoms, 600 steps, its Cartesian processor grid)
    # checkpointed and killed under Open MPI after 4 thermo lines,
    # restarted under MPICH where it is installed (tests/app_restart.py): the native run's thermo
    # lines, 12 digits.
    add_test(NAME mpi_split.ompi_abi.lammps_melt.openmpi_to_${restart_to}.split_restart
             COMMAND ${STASIS_TEST_PYTHON} ${OMPI_ABI_DIR}/tests/app_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                     ${STASIS_OPENMPI_RUN} lammps ${OMPI_ABI_DIR}/tests/lammps_melt.in ${restart_to_run} ${restart_to})
    set_tests_properties(mpi_split.ompi_abi.lammps_melt.openmpi_to_${restart_to}.split_restart PROPERTIES TIMEOUT 400
                         LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports SKIP_RETURN_CODE 77)
  else()
    stasis_skipped_group(mpi_split.ompi_abi.lammps "no lmp (Debian: lammps)")
  endif()
  # The mpi4py Jacobi solver (tests/scripts/jacobi.py under Debian's /usr/bin/python3 and its
  # python3-mpi4py, built against Open MPI: Debian's own extension module through the front, with
  # its keyvals and attributes, ../upper_attributes.c) checkpointed and killed under Open MPI at its
  # gate after the first checksum (a halo in flight, mpi4py's attribute on the world holding the
  # duplicate its reductions use), restarted under MPICH where it is installed (tests/app_restart.py):
  # the native run's checksum lines.
  add_test(NAME mpi_split.ompi_abi.jacobi.openmpi_to_${restart_to}.split_restart
           COMMAND ${STASIS_TEST_PYTHON} ${OMPI_ABI_DIR}/tests/app_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                   ${STASIS_OPENMPI_RUN} jacobi ${PROJECT_SOURCE_DIR}/tests/scripts/jacobi.py ${restart_to_run} ${restart_to})
  set_tests_properties(mpi_split.ompi_abi.jacobi.openmpi_to_${restart_to}.split_restart PROPERTIES TIMEOUT 300
                       LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports SKIP_RETURN_CODE 77)
  if(STASIS_MPICH_RUN)
    add_test(NAME mpi_split.ompi_abi.openmpi_to_mpich.split_restart
             COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/split_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                     ${STASIS_OPENMPI_RUN} 3 ${native_dir}/split_ring_openmpi ${native_dir}/split_ring_openmpi
                     14 200 ${STASIS_MPICH_RUN} mpich)
    set_tests_properties(mpi_split.ompi_abi.openmpi_to_mpich.split_restart PROPERTIES TIMEOUT 400
                         LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports ENVIRONMENT OMPI_MCA_rmaps_base_oversubscribe=1)
  endif()
else()
  stasis_skipped_group(mpi_split.ompi_abi "no mpicc.openmpi and mpirun.openmpi (Debian: openmpi-bin libopenmpi-dev)")
endif()
include(${OMPI_ABI_DIR}/fortran/tests.cmake)
