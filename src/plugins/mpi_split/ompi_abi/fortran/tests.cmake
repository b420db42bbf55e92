# The Fortran front (README.md), included by ../tests.cmake: ring_fortran (tests/ring_fortran.f90)
# built with Open MPI's plain mpif90, run unchanged through the front as split processes,
# checkpointed, killed and restarted under MPICH (under Open MPI where MPICH is missing).
set(FORTRAN_FRONT_DIR ${MPI_SPLIT_DIR}/ompi_abi/fortran)
find_program(STASIS_OPENMPI_FC mpif90.openmpi)
if(STASIS_OPENMPI_FC AND STASIS_OPENMPI_RUN)
  set(ring_fortran ${CMAKE_BINARY_DIR}/tests/targets/ring_fortran_openmpi)
  # -fallow-argument-mismatch: mpif.h declares no interfaces, and gfortran 10+ refuses one routine
  # called with two buffer types in one file unless told (as every mpif.h program's build does).
  add_custom_command(OUTPUT ${ring_fortran}
                     COMMAND ${STASIS_OPENMPI_FC} -O2 -fallow-argument-mismatch -w -o ${ring_fortran}
                             ${FORTRAN_FRONT_DIR}/tests/ring_fortran.f90
                     WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}
                     DEPENDS ${FORTRAN_FRONT_DIR}/tests/ring_fortran.f90 VERBATIM)
  add_custom_target(ring_fortran_openmpi ALL DEPENDS ${ring_fortran})
  set(fortran_refused ${CMAKE_BINARY_DIR}/tests/targets/fortran_refused_openmpi)
  add_custom_command(OUTPUT ${fortran_refused}
                     COMMAND ${STASIS_OPENMPI_FC} -O2 -w -o ${fortran_refused} ${FORTRAN_FRONT_DIR}/tests/fortran_refused.f90
                     WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}
                     DEPENDS ${FORTRAN_FRONT_DIR}/tests/fortran_refused.f90 VERBATIM)
  add_custom_target(fortran_refused_openmpi ALL DEPENDS ${fortran_refused})
  # What the Fortran front exports against the installed libmpi_mpifh.so.40, its lists against
  # their generator.
  add_test(NAME mpi_split.ompi_abi.fortran.exports
           COMMAND ${STASIS_TEST_PYTHON} ${FORTRAN_FRONT_DIR}/tests/fortran_exports.py
                   $<TARGET_FILE:stasis_ompi_abi_fortran> ${STASIS_OPENMPI_FC} ${ring_fortran})
  set_tests_properties(mpi_split.ompi_abi.fortran.exports PROPERTIES TIMEOUT 60 LABELS mpi_split)
  # Through the front, Fortran and the C front agree on the predefined communicators' numbers;
  # then a binding the front does not forward (MPI_ADD_ERROR_CLASS), and a Fortran type without a
  # split-mode equivalent (MPI_COMPLEX), each end the job with a line naming the call.
  add_test(NAME mpi_split.ompi_abi.fortran.refused
           COMMAND ${OMPI_ABI_DIR}/tests/not_forwarded.sh ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN}
                   ${STASIS_LIBDIR}/ompi_abi ${fortran_refused} libmpi_mpifh.so.40
                   call "mpi_add_error_class_: not forwarded"
                   object "MPI_BCAST: Open MPI's Fortran datatype 18 has no equivalent in split mode yet")
  set_tests_properties(mpi_split.ompi_abi.fortran.refused PROPERTIES TIMEOUT 200 LABELS "mpi;mpi_split"
                       RESOURCE_LOCK mpi_ports)
  # The split restart (../../tests/split_restart.py): `stasis launch --mpi -- mpirun.openmpi`,
  # checkpoint --kill with a message in flight to every rank, restart under the other launcher,
  # checkpoint --kill again, restart to the end, the first checkpoint restarted again: each the
  # native output; every restarted rank on a fresh lower half of the library named.
  # The restarts' library and launcher: MPICH's where it is installed.
  set(fortran_to openmpi ${STASIS_OPENMPI_RUN})
  if(STASIS_MPICH_RUN)
    set(fortran_to mpich ${STASIS_MPICH_RUN})
  endif()
  list(GET fortran_to 1 fortran_to_run)
  list(GET fortran_to 0 fortran_to)
  add_test(NAME mpi_split.ompi_abi.fortran.openmpi_to_${fortran_to}.split_restart
           COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/split_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                   ${STASIS_OPENMPI_RUN} 2 ${ring_fortran} ${ring_fortran} 12 200 ${fortran_to_run} ${fortran_to})
  set_tests_properties(mpi_split.ompi_abi.fortran.openmpi_to_${fortran_to}.split_restart PROPERTIES TIMEOUT 400
                       LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports)
else()
  stasis_skipped_group(mpi_split.ompi_abi.fortran "no mpif90.openmpi and mpirun.openmpi (Debian: openmpi-bin libopenmpi-dev gfortran)")
endif()
