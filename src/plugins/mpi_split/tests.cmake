# Split-process MPI (README.md), included by tests/CMakeLists.txt. The unit tests of the virtual-id
# tables and the replay log are registered by CMakeLists.txt here (mpi_split.VirtualIds.*,
# mpi_split.ReplayLog.*). split_ring (tests/split_ring.c) is built against Stasis's abi/mpi.h
# (linked with libstasis_mpi.so) and against each library's own mpi.h; the jobs must print the
# same lines, the split one with a lower half mapped in every rank.
set(MPI_SPLIT_DIR ${CMAKE_CURRENT_LIST_DIR})
add_executable(split_ring_stasis ${MPI_SPLIT_DIR}/tests/split_ring.c)
target_link_libraries(split_ring_stasis PRIVATE stasis_mpi)
target_compile_options(split_ring_stasis PRIVATE -O2)
set_target_properties(split_ring_stasis PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/targets)

# split_ring_IMPL built with the library's own compiler wrapper.
function(stasis_split_ring_native implementation compiler)
  set(out ${CMAKE_BINARY_DIR}/tests/targets/split_ring_${implementation})
  add_custom_command(OUTPUT ${out} COMMAND ${compiler} -O2 -o ${out} ${MPI_SPLIT_DIR}/tests/split_ring.c
                     DEPENDS ${MPI_SPLIT_DIR}/tests/split_ring.c VERBATIM)
  add_custom_target(split_ring_${implementation} ALL DEPENDS ${out})
endfunction()
# stasis_split_same_output(NAME RANKS_A RANKS_B REMADE_B COMMAND_A... --then COMMAND_B...)
function(stasis_split_same_output name ranks_a ranks_b remade_b)
  add_test(NAME ${name} COMMAND ${MPI_SPLIT_DIR}/tests/same_output.sh ${ranks_a} ${ranks_b} ${remade_b} ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports
                       SKIP_RETURN_CODE 77)
endfunction()

set(SPLIT_RING ${CMAKE_BINARY_DIR}/tests/targets/split_ring_stasis)
# in_flight (tests/in_flight.c): the drain's aggregated count against messages the program knows
# are in flight; it checks every figure itself and ends with "in_flight ok".
add_executable(split_in_flight ${MPI_SPLIT_DIR}/tests/in_flight.c)
target_link_libraries(split_in_flight PRIVATE stasis_mpi)
set_target_properties(split_in_flight PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/targets)
# stasis_split_in_flight(NAME LAUNCHER LAUNCHER_OPTIONS...)
function(stasis_split_in_flight name)
  add_test(NAME ${name} COMMAND sh -c "\"$@\" > \"$TMPDIR/$$.out\" && grep -q '^in_flight ok$' \"$TMPDIR/$$.out\"; rc=$?; cat \"$TMPDIR/$$.out\"; rm -f \"$TMPDIR/$$.out\"; exit $rc"
           sh ${PROJECT_SOURCE_DIR}/tests/scripts/mpi_run.sh ${ARGN} -- $<TARGET_FILE:split_in_flight> 3 200)
  set_tests_properties(${name} PROPERTIES TIMEOUT 120 LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports
                       ENVIRONMENT TMPDIR=/tmp)
endfunction()
set(SPLIT_MPI_RUN ${PROJECT_SOURCE_DIR}/tests/scripts/mpi_run.sh)
find_program(STASIS_OPENMPI_CC mpicc.openmpi)
find_program(STASIS_OPENMPI_RUN mpirun.openmpi)
if(STASIS_OPENMPI_CC AND STASIS_OPENMPI_RUN)
  stasis_split_ring_native(openmpi ${STASIS_OPENMPI_CC})
  set(NATIVE ${CMAKE_BINARY_DIR}/tests/targets/split_ring_openmpi)
  stasis_split_same_output(mpi_split.openmpi.same_output 0 2 0
                           ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN} -np 2 -- ${NATIVE} 30
                           --then ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN} -np 2 -- ${SPLIT_RING} 30)
  stasis_split_same_output(mpi_split.openmpi.np4.same_output 0 4 0
                           ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN} -np 4 --oversubscribe -- ${NATIVE} 30
                           --then ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN} -np 4 --oversubscribe -- ${SPLIT_RING} 30)
  stasis_split_same_output(mpi_split.openmpi.tcp.same_output 0 2 0
                           ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN} -np 2 --mca btl tcp,self -- ${NATIVE} 30
                           --then ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN} -np 2 --mca btl tcp,self -- ${SPLIT_RING} 30)
  # Today's whole-job checkpoint (docs/mpi.md: the lower half and mpirun are saved too) of a split
  # build: the upper half's tables and replay log, and a lower half loaded with RTLD_DEEPBIND,
  # come back as they were. Not yet the split restart (a fresh lower half): README.md.
  foreach(whole_job IN ITEMS tcp.whole_job.chain2 shm.whole_job)
    if(whole_job MATCHES "^tcp")
      set(transport --mca btl tcp,self)
      set(driver_args --chain 2 --between-lines 8)
    else()
      set(transport)
      set(driver_args --wait-lines 8 --before-restart "${SCRIPTS}/mpi_scribble_shm.sh ${STASIS_BIN}")
    endif()
    stasis_ckpt_test(mpi_split.openmpi.${whole_job} TIMEOUT 200 LABELS mpi mpi_split ARGS ${driver_args}
                     PROGRAM ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN} -np 2 ${transport} -- ${SPLIT_RING} 50 100)
    set_tests_properties(mpi_split.openmpi.${whole_job} PROPERTIES RESOURCE_LOCK mpi_ports)
  endforeach()
  stasis_split_in_flight(mpi_split.openmpi.in_flight ${STASIS_OPENMPI_RUN} -np 4 --oversubscribe)
  # The replay against the real library: halfway, every rank makes its communicators and
  # datatypes again from its log (collectively: dup, split, the split that gave rank 1 none) and
  # runs on with them under the same ids.
  stasis_split_same_output(mpi_split.openmpi.remake.same_output 0 3 3
                           ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN} -np 3 --oversubscribe -- ${NATIVE} 30 0 15
                           --then ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN} -np 3 --oversubscribe -- ${SPLIT_RING} 30 0 15)
else()
  stasis_skipped_group(mpi_split.openmpi "no mpicc.openmpi and mpirun.openmpi (Debian: openmpi-bin libopenmpi-dev)")
endif()
find_program(STASIS_MPICH_CC mpicc.mpich)
find_program(STASIS_MPICH_RUN mpirun.mpich)
if(STASIS_MPICH_CC AND STASIS_MPICH_RUN)
  stasis_split_ring_native(mpich ${STASIS_MPICH_CC})
  set(NATIVE ${CMAKE_BINARY_DIR}/tests/targets/split_ring_mpich)
  stasis_split_same_output(mpi_split.mpich.same_output 0 2 0
                           ${SPLIT_MPI_RUN} ${STASIS_MPICH_RUN} -np 2 -- ${NATIVE} 30
                           --then ${SPLIT_MPI_RUN} ${STASIS_MPICH_RUN} -np 2 -- ${SPLIT_RING} 30)
  stasis_split_in_flight(mpi_split.mpich.in_flight ${STASIS_MPICH_RUN} -np 3)
  stasis_split_same_output(mpi_split.mpich.remake.same_output 0 3 3
                           ${SPLIT_MPI_RUN} ${STASIS_MPICH_RUN} -np 3 -- ${NATIVE} 30 0 15
                           --then ${SPLIT_MPI_RUN} ${STASIS_MPICH_RUN} -np 3 -- ${SPLIT_RING} 30 0 15)
else()
  stasis_skipped_group(mpi_split.mpich "no mpicc.mpich and mpirun.mpich (Debian: mpich libmpich-dev)")
endif()
# One binary, two libraries: the split build runs unchanged under Open MPI and under MPICH (each
# rank loads the lower half its launcher names) and prints the same lines.
if(STASIS_OPENMPI_RUN AND STASIS_MPICH_RUN)
  stasis_split_same_output(mpi_split.one_binary.openmpi_mpich 2 2 0
                           ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN} -np 2 -- ${SPLIT_RING} 30
                           --then ${SPLIT_MPI_RUN} ${STASIS_MPICH_RUN} -np 2 -- ${SPLIT_RING} 30)
else()
  stasis_skipped_group(mpi_split.one_binary "needs both mpirun.openmpi and mpirun.mpich")
endif()
