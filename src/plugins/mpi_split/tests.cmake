# Split-process MPI (README.md), included by tests/CMakeLists.txt. The unit tests of the virtual-id
# tables, the replay log and the per-peer counts are registered by CMakeLists.txt here
# (mpi_split.VirtualIds.*, .ReplayLog.*, .PeerCounts.*). split_ring (tests/split_ring.c) is built
# against Stasis's abi/mpi.h (linked with libstasis_mpi.so) and against each library's own mpi.h;
# the jobs must print the same lines, the split one with a lower half mapped in every rank.
# in_flight (tests/in_flight.c): the drain's aggregated count, and the drain, against messages the
# program knows are in flight; it checks every figure itself and ends with "in_flight ok".
# lower_inventory (tests/lower_inventory.c): what the lower-half program says it owns, against
# /proc/self/maps and the upper half's own memory; ends with "lower_inventory ok".
set(MPI_SPLIT_DIR ${CMAKE_CURRENT_LIST_DIR})
foreach(program IN ITEMS split_ring in_flight lower_inventory ring_in_flight blocking_ranks)
  set(target ${program}_split)
  add_executable(${target} ${MPI_SPLIT_DIR}/tests/${program}.c)
  target_link_libraries(${target} PRIVATE stasis_mpi)
  target_compile_options(${target} PRIVATE -O2)
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/targets)
endforeach()
set(SPLIT_RING ${CMAKE_BINARY_DIR}/tests/targets/split_ring_split)
set(SPLIT_MPI_RUN ${PROJECT_SOURCE_DIR}/tests/scripts/mpi_run.sh)

# The project's own MPI test programs (tests/mpi/), unchanged, built against abi/mpi.h: their
# output through the split layer is compared with their native builds' (tests/mpi/tests.cmake).
# They print no line about the halves: built so, they can only reach MPI through libstasis_mpi.so.
foreach(program IN ITEMS mpi_ring mpi_shm)
  add_executable(${program}_split ${PROJECT_SOURCE_DIR}/tests/mpi/${program}.c)
  target_include_directories(${program}_split PRIVATE ${PROJECT_SOURCE_DIR}/tests/targets)
  target_compile_definitions(${program}_split PRIVATE _GNU_SOURCE)
  target_link_libraries(${program}_split PRIVATE stasis_mpi)
  target_compile_options(${program}_split PRIVATE -O2)
  set_target_properties(${program}_split PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/targets)
endforeach()

# stasis_split_same_output(NAME RANKS_A RANKS_B REMADE_B COMMAND_A... --then COMMAND_B...)
function(stasis_split_same_output name ranks_a ranks_b remade_b)
  add_test(NAME ${name} COMMAND ${MPI_SPLIT_DIR}/tests/same_output.sh ${ranks_a} ${ranks_b} ${remade_b} ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports
                       SKIP_RETURN_CODE 77)
endfunction()

# The tests every library gets: IMPL (openmpi, mpich), its compiler wrapper and launcher, and how
# many ranks the in_flight and remake jobs run (the oversubscription option included).
function(stasis_split_library_tests implementation compiler launcher)
  set(native ${CMAKE_BINARY_DIR}/tests/targets/split_ring_${implementation})
  add_custom_command(OUTPUT ${native} COMMAND ${compiler} -O2 -o ${native} ${MPI_SPLIT_DIR}/tests/split_ring.c
                     DEPENDS ${MPI_SPLIT_DIR}/tests/split_ring.c ${MPI_SPLIT_DIR}/tests/split_test_common.h
                     VERBATIM)
  add_custom_target(split_ring_${implementation} ALL DEPENDS ${native})
  set(run ${SPLIT_MPI_RUN} ${launcher})
  stasis_split_same_output(mpi_split.${implementation}.same_output 0 2 0
                           ${run} -np 2 -- ${native} 30 --then ${run} -np 2 -- ${SPLIT_RING} 30)
  # The lower half as a program of its own (stasis-mpi-lower-IMPL, README.md): the program starts
  # as the upper half with its own ld.so and libc, and prints what the native build prints.
  # Halfway it makes its objects again from the replay log, through the FS switch.
  stasis_split_same_output(mpi_split.${implementation}.own_libc.same_output 0 2 2
                           ${run} -np 2 -- ${native} 30 0 15
                           --then ${run} -np 2 -- ${STASIS_LIBDIR}/stasis-mpi-lower-${implementation} ${SPLIT_RING} 30 0 15)
  set_tests_properties(mpi_split.${implementation}.own_libc.same_output PROPERTIES ENVIRONMENT SPLIT_B_MODE=program)
  # The other way round, as a restarted upper half will get its fresh lower half: the program
  # starts stasis-mpi-lower-IMPL inside itself at MPI_Init (STASIS_MPI_LOWER_MODE=program), which
  # hands its interface back; two libcs again, the same lines, objects made again halfway.
  stasis_split_same_output(mpi_split.${implementation}.lower_started.same_output 0 2 2
                           ${run} -np 2 -- ${native} 30 0 15 --then ${run} -np 2 -- ${SPLIT_RING} 30 0 15)
  set_tests_properties(mpi_split.${implementation}.lower_started.same_output PROPERTIES
                       ENVIRONMENT "SPLIT_B_MODE=program;STASIS_MPI_LOWER_MODE=program")
  # What the lower-half program refuses to start, with the file and the fault: not an ELF file,
  # and a program without an ELF interpreter (static).
  add_test(NAME mpi_split.${implementation}.lower_program.refuses
           COMMAND sh -c "\"$1\" \"$2\" 2>&1 | grep -qx \"stasis-mpi-lower: $2: not an ELF file\" &&
                          \"$1\" \"$3\" 2>&1 | grep -q \"^stasis-mpi-lower: $3: has no ELF interpreter\" &&
                          { \"$1\" \"$2\"; test $? -eq 127; }"
                   sh ${STASIS_LIBDIR}/stasis-mpi-lower-${implementation} ${MPI_SPLIT_DIR}/README.md
                   $<TARGET_FILE:stasis-loader>)
  set_tests_properties(mpi_split.${implementation}.lower_program.refuses PROPERTIES TIMEOUT 30 LABELS mpi_split)
  # The replay against the real library: halfway, every rank makes its communicators and
  # datatypes again from its log (collectively: dup, split, the split that gave two ranks none)
  # and runs on with them under the same ids.
  stasis_split_same_output(mpi_split.${implementation}.remake.same_output 0 3 3
                           ${run} ${ARGN} -- ${native} 30 0 15 --then ${run} ${ARGN} -- ${SPLIT_RING} 30 0 15)
  # in_flight counts only (DRAIN=0), then drains too (DRAIN=1), the last also under the lower-half
  # program (own_libc.drain) and with that program started by the program (lower_started.drain).
  # Each with 4 duplicates of the world more, the last made carrying a message to every rank.
  foreach(mode IN ITEMS in_flight drain own_libc.drain lower_started.drain)
    set(drain 1)
    set(lower_program)
    set(environment "STASIS_MPI_LOWER_MODE=library")
    if(mode STREQUAL "in_flight")
      set(drain 0)
    elseif(mode STREQUAL "own_libc.drain")
      set(lower_program ${STASIS_LIBDIR}/stasis-mpi-lower-${implementation})
    elseif(mode STREQUAL "lower_started.drain")
      set(environment "STASIS_MPI_LOWER_MODE=program")
    endif()
    add_test(NAME mpi_split.${implementation}.${mode}
             COMMAND sh -c "d=$(mktemp -d) && \"$0\" \"$d/out\" \"$d/err\" \"$@\"; rc=$?; cat \"$d/out\" \"$d/err\";
                            [ $rc -eq 0 ] && grep -q '^in_flight ok$' \"$d/out\"; rc=$?; rm -rf \"$d\"; exit $rc"
                     ${MPI_SPLIT_DIR}/tests/run_mpi_job.sh ${run} ${ARGN} -- ${lower_program} $<TARGET_FILE:in_flight_split>
                     3 200 ${drain} 4)
    set_tests_properties(mpi_split.${implementation}.${mode} PROPERTIES TIMEOUT 120 LABELS "mpi;mpi_split"
                         RESOURCE_LOCK mpi_ports ENVIRONMENT "${environment}")
  endforeach()
  # What a split checkpoint will leave out: the lower-half program's ranges and threads (Open MPI
  # runs at least one thread of its own in every rank: its PMIx progress thread).
  set(lower_threads 0)
  if(implementation STREQUAL "openmpi")
    set(lower_threads 1)
  endif()
  # The split checkpoint (README.md, The split checkpoint): a job of the split build whose program
  # starts its lower half, checkpointed twice under today's whole-job launch: each rank's image
  # holds the upper half only, and the job prints the native build's lines. No restart yet.
  add_test(NAME mpi_split.${implementation}.split_checkpoint
           COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/split_checkpoint.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                   ${launcher} 2 ${native} ${SPLIT_RING} 40 150 0 job)
  # The same with a message in flight to every rank at each checkpoint (ring_in_flight sleeps
  # between a send and its receive): the checkpoint's drain takes them into the upper half, and
  # the receives after it get them from there. Launched with `stasis launch --mpi`: mpirun stays
  # outside, and the checkpoint holds the ranks' images only.
  set(native_in_flight ${CMAKE_BINARY_DIR}/tests/targets/ring_in_flight_${implementation})
  add_custom_command(OUTPUT ${native_in_flight}
                     COMMAND ${compiler} -O2 -o ${native_in_flight} ${MPI_SPLIT_DIR}/tests/ring_in_flight.c
                     DEPENDS ${MPI_SPLIT_DIR}/tests/ring_in_flight.c ${MPI_SPLIT_DIR}/tests/split_test_common.h VERBATIM)
  add_custom_target(ring_in_flight_${implementation} ALL DEPENDS ${native_in_flight})
  add_test(NAME mpi_split.${implementation}.split_checkpoint.drain
           COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/split_checkpoint.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                   ${launcher} 2 ${native_in_flight} $<TARGET_FILE:ring_in_flight_split> 30 300 1 mpi)
  set_tests_properties(mpi_split.${implementation}.split_checkpoint mpi_split.${implementation}.split_checkpoint.drain
                       PROPERTIES TIMEOUT 300 LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports)
  # The split restart (README.md, Restart): checkpointed and killed with a message in flight to
  # every rank, restarted through a new launcher (`mpirun -np 2 stasis restart --mpi-rank DIR`:
  # fresh lower halves, a new MPI_Init), checkpointed and killed again and restarted; the first
  # checkpoint restarted a second time. Every run ends with the native build's output.
  add_test(NAME mpi_split.${implementation}.split_restart
           COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/split_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                   ${launcher} 2 ${native_in_flight} $<TARGET_FILE:ring_in_flight_split> 24 300)
  set_tests_properties(mpi_split.${implementation}.split_restart PROPERTIES TIMEOUT 400 LABELS "mpi;mpi_split"
                       RESOURCE_LOCK mpi_ports)
  # Checkpoints while ranks wait in blocking calls (README.md, Safe points inside blocking calls):
  # blocking_ranks holds its other ranks in MPI_Recv, MPI_Wait, MPI_Barrier, MPI_Allreduce,
  # MPI_Comm_dup, MPI_Comm_split, MPI_Comm_create and MPI_Finalize while its last rank computes until
  # the test lets it go; a checkpoint at each, live, then with --kill and a restart under mpirun;
  # never refused, each rank found in its call, the native output.
  set(native_blocking ${CMAKE_BINARY_DIR}/tests/targets/blocking_ranks_${implementation})
  add_custom_command(OUTPUT ${native_blocking}
                     COMMAND ${compiler} -O2 -o ${native_blocking} ${MPI_SPLIT_DIR}/tests/blocking_ranks.c
                     DEPENDS ${MPI_SPLIT_DIR}/tests/blocking_ranks.c VERBATIM)
  add_custom_target(blocking_ranks_${implementation} ALL DEPENDS ${native_blocking})
  add_test(NAME mpi_split.${implementation}.blocking_restart
           COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/blocking_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                   ${launcher} 2 ${native_blocking} $<TARGET_FILE:blocking_ranks_split> 4)
  # The same program ungated, collectives back to back, checkpointed 4 times as it runs (every
  # second one killed and restarted): the drain's agreement on the collective in progress.
  add_test(NAME mpi_split.${implementation}.blocking_restart.storm
           COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/blocking_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                   ${launcher} 2 ${native_blocking} $<TARGET_FILE:blocking_ranks_split> 300 storm 4)
  set_tests_properties(mpi_split.${implementation}.blocking_restart mpi_split.${implementation}.blocking_restart.storm
                       PROPERTIES TIMEOUT 400 LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports)
  # Both ways of starting the halves: the lower-half program first, and the program first.
  foreach(mode IN ITEMS own_libc lower_started)
    set(lower_program ${STASIS_LIBDIR}/stasis-mpi-lower-${implementation})
    set(environment "STASIS_MPI_LOWER_MODE=library")
    if(mode STREQUAL "lower_started")
      set(lower_program)
      set(environment "STASIS_MPI_LOWER_MODE=program")
    endif()
    add_test(NAME mpi_split.${implementation}.${mode}.lower_inventory
             COMMAND sh -c "d=$(mktemp -d) && \"$0\" \"$d/out\" \"$d/err\" \"$@\"; rc=$?; cat \"$d/out\" \"$d/err\";
                            [ $rc -eq 0 ] && grep -q '^lower_inventory ok$' \"$d/out\"; rc=$?; rm -rf \"$d\"; exit $rc"
                     ${MPI_SPLIT_DIR}/tests/run_mpi_job.sh ${run} ${ARGN}
                     -- ${lower_program} $<TARGET_FILE:lower_inventory_split> ${lower_threads})
    set_tests_properties(mpi_split.${implementation}.${mode}.lower_inventory PROPERTIES TIMEOUT 120
                         LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports ENVIRONMENT "${environment}")
  endforeach()
endfunction()

find_program(STASIS_OPENMPI_CC mpicc.openmpi)
find_program(STASIS_OPENMPI_RUN mpirun.openmpi)
if(STASIS_OPENMPI_CC AND STASIS_OPENMPI_RUN)
  stasis_split_library_tests(openmpi ${STASIS_OPENMPI_CC} ${STASIS_OPENMPI_RUN} -np 3 --oversubscribe)
  set(native ${CMAKE_BINARY_DIR}/tests/targets/split_ring_openmpi)
  set(run ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN})
  stasis_split_same_output(mpi_split.openmpi.np4.same_output 0 4 0
                           ${run} -np 4 --oversubscribe -- ${native} 30
                           --then ${run} -np 4 --oversubscribe -- ${SPLIT_RING} 30)
  foreach(program IN ITEMS mpi_ring mpi_shm)
    stasis_split_same_output(mpi_split.openmpi.${program}.same_output 0 0 0
                             ${run} -np 2 -- ${CMAKE_BINARY_DIR}/tests/targets/${program}_openmpi 20 0
                             --then ${run} -np 2 -- ${CMAKE_BINARY_DIR}/tests/targets/${program}_split 20 0)
  endforeach()
  stasis_split_same_output(mpi_split.openmpi.tcp.same_output 0 2 0
                           ${run} -np 2 --mca btl tcp,self -- ${native} 30
                           --then ${run} -np 2 --mca btl tcp,self -- ${SPLIT_RING} 30)
  # Today's whole-job checkpoint (docs/mpi.md: the lower half and mpirun are saved too) of a split
  # build: the upper half's tables and replay log, and a lower half loaded with RTLD_DEEPBIND,
  # come back as they were. Not yet the split restart (a fresh lower half): README.md.
  stasis_ckpt_test(mpi_split.openmpi.tcp.whole_job.chain2 TIMEOUT 200 LABELS mpi mpi_split
                   ARGS --chain 2 --between-lines 8
                   PROGRAM ${run} -np 2 --mca btl tcp,self -- ${SPLIT_RING} 50 100)
  stasis_ckpt_test(mpi_split.openmpi.shm.whole_job TIMEOUT 200 LABELS mpi mpi_split
                   ARGS --wait-lines 8 --before-restart "${SCRIPTS}/mpi_scribble_shm.sh ${STASIS_BIN}"
                   PROGRAM ${run} -np 2 -- ${SPLIT_RING} 50 100)
  set_tests_properties(mpi_split.openmpi.tcp.whole_job.chain2 mpi_split.openmpi.shm.whole_job PROPERTIES
                       RESOURCE_LOCK mpi_ports)
  # Another network at restart (README.md): ring_in_flight launched over verbs (Open MPI's openib
  # BTL on softib, docs/softib.md), checkpointed and killed with a message in flight to every rank,
  # restarted over TCP alone; each run's transport read from Open MPI's BML and softib's trace.
  if(TARGET softib_verbs)
    add_test(NAME mpi_split.openmpi.softib_to_tcp
             COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/transport_switch.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                     ${STASIS_OPENMPI_RUN} 2 ${CMAKE_BINARY_DIR}/tests/targets/ring_in_flight_openmpi
                     $<TARGET_FILE:ring_in_flight_split> 12 200 $<TARGET_FILE_DIR:softib_verbs>)
    set_tests_properties(mpi_split.openmpi.softib_to_tcp PROPERTIES TIMEOUT 200 LABELS "mpi;mpi_split;softib"
                         RESOURCE_LOCK "mpi_ports;busy_polling_verbs" SKIP_RETURN_CODE 77)
  else()
    stasis_skipped_group(mpi_split.openmpi.softib_to_tcp "no softib (no infiniband/verbs.h; Debian: libibverbs-dev)")
  endif()
else()
  stasis_skipped_group(mpi_split.openmpi "no mpicc.openmpi and mpirun.openmpi (Debian: openmpi-bin libopenmpi-dev)")
endif()
find_program(STASIS_MPICH_CC mpicc.mpich)
find_program(STASIS_MPICH_RUN mpirun.mpich)
if(STASIS_MPICH_CC AND STASIS_MPICH_RUN)
  stasis_split_library_tests(mpich ${STASIS_MPICH_CC} ${STASIS_MPICH_RUN} -np 3)
  stasis_split_same_output(mpi_split.mpich.mpi_shm.same_output 0 0 0
                           ${SPLIT_MPI_RUN} ${STASIS_MPICH_RUN} -np 2 -- ${CMAKE_BINARY_DIR}/tests/targets/mpi_shm_mpich 20 0
                           --then ${SPLIT_MPI_RUN} ${STASIS_MPICH_RUN} -np 2 -- ${CMAKE_BINARY_DIR}/tests/targets/mpi_shm_split 20 0)
else()
  stasis_skipped_group(mpi_split.mpich "no mpicc.mpich and mpirun.mpich (Debian: mpich libmpich-dev)")
endif()
# One binary, two libraries: the split build runs unchanged under Open MPI and under MPICH (each
# rank loads the lower half its launcher names) and prints the same lines.
if(STASIS_OPENMPI_RUN AND STASIS_MPICH_RUN)
  # Checkpointed under one library and launcher, restarted under the other (README.md, Restart):
  # the split restart's chain and double restart, every restart a fresh lower half of the other.
  set(cross_directions)
  if(STASIS_OPENMPI_CC AND STASIS_MPICH_CC)  # the native builds of the reference runs
    set(cross_directions openmpi:mpich mpich:openmpi)
  endif()
  foreach(direction IN LISTS cross_directions)
    string(REPLACE ":" ";" pair ${direction})
    list(GET pair 0 from)
    list(GET pair 1 to)
    set(from_run ${STASIS_OPENMPI_RUN})
    set(to_run ${STASIS_MPICH_RUN})
    if(from STREQUAL "mpich")
      set(from_run ${STASIS_MPICH_RUN})
      set(to_run ${STASIS_OPENMPI_RUN})
    endif()
    add_test(NAME mpi_split.${from}_to_${to}.split_restart
             COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/split_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                     ${from_run} 2 ${CMAKE_BINARY_DIR}/tests/targets/ring_in_flight_${from}
                     $<TARGET_FILE:ring_in_flight_split> 24 300 ${to_run} ${to})
    set_tests_properties(mpi_split.${from}_to_${to}.split_restart PROPERTIES TIMEOUT 400 LABELS "mpi;mpi_split"
                         RESOURCE_LOCK mpi_ports)
  endforeach()
  # The collectives in flight, the persistent requests, probes and buffered sends of blocking_ranks
  # checkpointed under Open MPI and restarted under MPICH, twice in a storm.
  add_test(NAME mpi_split.openmpi_to_mpich.blocking_restart.storm
           COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/blocking_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                   ${STASIS_OPENMPI_RUN} 2 ${CMAKE_BINARY_DIR}/tests/targets/blocking_ranks_openmpi
                   $<TARGET_FILE:blocking_ranks_split> 300 storm 4 --restart-launcher ${STASIS_MPICH_RUN} mpich)
  set_tests_properties(mpi_split.openmpi_to_mpich.blocking_restart.storm PROPERTIES TIMEOUT 400
                       LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports)
  stasis_split_same_output(mpi_split.one_binary.openmpi_mpich 2 2 0
                           ${SPLIT_MPI_RUN} ${STASIS_OPENMPI_RUN} -np 2 -- ${SPLIT_RING} 30
                           --then ${SPLIT_MPI_RUN} ${STASIS_MPICH_RUN} -np 2 -- ${SPLIT_RING} 30)
else()
  stasis_skipped_group(mpi_split.one_binary "needs both mpirun.openmpi and mpirun.mpich")
endif()
# Cartesian topologies (README.md, Cartesian topologies): cart_ring (tests/cart_ring.c) makes a
# grid, its row, a duplicate and a freed grid, and sends over the grid with a message in flight at
# each checkpoint; split_restart.py checkpoints, kills and restarts it (a chain and a double
# restart), and every run must end with the native build's lines: the grid's communicators re-made
# by the replay, every query of the grid answered as before. Open MPI, MPICH, and Open MPI to MPICH.
# split_restart_program(PROGRAM STEPS RUNS...): PROGRAM (tests/PROGRAM.c) built against abi/mpi.h
# and against each library's own mpi.h; split_restart.py for each run FROM:TO (checkpoint under FROM,
# every restart under TO), named mpi_split.FROM.PROGRAM_restart or mpi_split.FROM_to_TO.PROGRAM_restart
# (PROGRAM less its "_ring"). A run whose MPI is missing is left out.
function(split_restart_program program steps)
  add_executable(${program}_split ${MPI_SPLIT_DIR}/tests/${program}.c)
  target_link_libraries(${program}_split PRIVATE stasis_mpi)
  target_compile_options(${program}_split PRIVATE -O2)
  set_target_properties(${program}_split PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/targets)
  string(REPLACE "_ring" "" short ${program})
  foreach(run IN LISTS ARGN)
    string(REPLACE ":" ";" pair ${run})
    list(GET pair 0 from)
    list(GET pair 1 to)
    string(TOUPPER ${from} FROM)
    string(TOUPPER ${to} TO)
    if(NOT (STASIS_${FROM}_CC AND STASIS_${FROM}_RUN AND STASIS_${TO}_RUN))
      continue()
    endif()
    set(native ${CMAKE_BINARY_DIR}/tests/targets/${program}_${from})
    if(NOT TARGET ${program}_${from})
      add_custom_command(OUTPUT ${native} COMMAND ${STASIS_${FROM}_CC} -O2 -o ${native} ${MPI_SPLIT_DIR}/tests/${program}.c
                         DEPENDS ${MPI_SPLIT_DIR}/tests/${program}.c ${MPI_SPLIT_DIR}/tests/split_test_common.h VERBATIM)
      add_custom_target(${program}_${from} ALL DEPENDS ${native})
    endif()
    set(name mpi_split.${from}.${short}_restart)
    set(cross)
    if(NOT from STREQUAL to)
      set(name mpi_split.${from}_to_${to}.${short}_restart)
      set(cross ${STASIS_${TO}_RUN} ${to})
    endif()
    add_test(NAME ${name}
             COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/split_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                     ${STASIS_${FROM}_RUN} 2 ${native} $<TARGET_FILE:${program}_split> ${steps} 200 ${cross})
    set_tests_properties(${name} PROPERTIES TIMEOUT 400 LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports)
  endforeach()
endfunction()
split_restart_program(cart_ring 14 openmpi:openmpi mpich:mpich openmpi:mpich)
# End of the Cartesian topologies.
# mpirma: one-sided communication (README.md, One-sided communication): rma_epochs
# (tests/rma_epochs.c) checkpointed with operations in flight in a fence epoch, in a lock_all epoch
# held for the whole run and under an exclusive lock, killed and restarted by split_restart.py (a
# chain and a double restart): every run ends with the native build's lines. Open MPI, and
# Open MPI to MPICH (checkpoint under one, restart under the other).
add_executable(rma_epochs_split ${MPI_SPLIT_DIR}/tests/rma_epochs.c)
target_link_libraries(rma_epochs_split PRIVATE stasis_mpi)
set_target_properties(rma_epochs_split PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/targets)
if(STASIS_OPENMPI_CC AND STASIS_OPENMPI_RUN)
  set(native ${CMAKE_BINARY_DIR}/tests/targets/rma_epochs_openmpi)
  add_custom_command(OUTPUT ${native} COMMAND ${STASIS_OPENMPI_CC} -O2 -o ${native} ${MPI_SPLIT_DIR}/tests/rma_epochs.c
                     DEPENDS ${MPI_SPLIT_DIR}/tests/rma_epochs.c ${MPI_SPLIT_DIR}/tests/split_test_common.h VERBATIM)
  add_custom_target(rma_epochs_openmpi ALL DEPENDS ${native})
  # The build against abi/mpi.h under Open MPI; the plain Open MPI build through the front
  # (ompi_abi/), restarted under MPICH where it is (else Open MPI). Every rank at each checkpoint
  # completed the operations of the fence epoch and the lock_all epoch (and the exclusive lock's,
  # where the checkpoint came in its sleep). Open MPI over TCP, whose RMA (osc pt2pt) holds a
  # put in the library until the fence: without that completion the restarted ranks find their
  # neighbour's block missing and end (seen, both tests); over shared memory puts land at once.
  set(rma_over_tcp "OMPI_MCA_btl=tcp,self;OMPI_MCA_osc=pt2pt")
  set(front_to openmpi)
  set(front_cross)
  if(STASIS_MPICH_RUN)
    set(front_to mpich)
    set(front_cross ${STASIS_MPICH_RUN} mpich)
  endif()
  foreach(run split front)
    set(name mpi_split.openmpi.rma_restart)
    set(program $<TARGET_FILE:rma_epochs_split>)
    set(cross)
    if(run STREQUAL "front")
      set(name mpi_split.ompi_abi.openmpi_to_${front_to}.rma_restart)
      set(program ${native})
      set(cross ${front_cross})
    endif()
    add_test(NAME ${name}
             COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/split_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                     ${STASIS_OPENMPI_RUN} 2 ${native} ${program} 16 150 ${cross})
    set_tests_properties(${name} PROPERTIES TIMEOUT 300 LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports ENVIRONMENT
                         "STASIS_SPLIT_LOG_EXPECTS=RMA completed on [23] windows in an epoch;${rma_over_tcp}")
  endforeach()
  # A live window of MPI_Win_allocate_shared refuses the checkpoint by name; the job runs on.
  add_test(NAME mpi_split.openmpi.rma_shared_refused
           COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/rma_refused.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                   ${STASIS_OPENMPI_RUN} ${native} $<TARGET_FILE:rma_epochs_split> 8 150)
  set_tests_properties(mpi_split.openmpi.rma_shared_refused PROPERTIES TIMEOUT 200 LABELS "mpi;mpi_split"
                       RESOURCE_LOCK mpi_ports)
else()
  stasis_skipped_group(mpi_split.openmpi.rma_restart "needs mpicc.openmpi and mpirun.openmpi")
endif()
# End of one-sided communication.
# Intercommunicators and matched probes (README.md, Intercommunicators; Matched probes): inter_ring
# (tests/inter_ring.c) joins the even and odd ranks with MPI_Intercomm_create, merges them, keeps
# the remote group, and sends over the intercommunicator, each block matched by MPI_Mprobe or
# MPI_Improbe and received by MPI_Mrecv or MPI_Imrecv; checkpoints come with a block in flight
# (drained) or matched and not received (held). The split restart's chain and double restart,
# each run the native output: checkpointed under MPICH and restarted under Open MPI, and the reverse.
split_restart_program(inter_ring 12 mpich:openmpi openmpi:mpich)
# The Open MPI builds of cart_ring and inter_ring, unmodified, through the Open MPI front
# (ompi_abi/), checkpointed under Open MPI and restarted under MPICH: the front's MPI_Cart_*, its
# intercommunicators and matched messages, and their handles.
if(STASIS_OPENMPI_CC AND STASIS_OPENMPI_RUN AND STASIS_MPICH_RUN)
  set(front_programs cart_ring inter_ring)
  set(front_steps 14 12)
  foreach(program steps IN ZIP_LISTS front_programs front_steps)
    string(REPLACE "_ring" "" short ${program})
    set(native ${CMAKE_BINARY_DIR}/tests/targets/${program}_openmpi)
    set(name mpi_split.ompi_abi.openmpi_to_mpich.${short}_restart)
    add_test(NAME ${name}
             COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/split_restart.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                     ${STASIS_OPENMPI_RUN} 2 ${native} ${native} ${steps} 200 ${STASIS_MPICH_RUN} mpich)
    set_tests_properties(${name} PROPERTIES TIMEOUT 400 LABELS "mpi;mpi_split" RESOURCE_LOCK mpi_ports)
  endforeach()
endif()
# The Open MPI ABI front: programs built with Open MPI's own mpicc as split processes.
include(${MPI_SPLIT_DIR}/ompi_abi/tests.cmake)
# The issue's held-in program (README.md, Tests): soak_everything (splits, derived types, messages
# and a nonblocking collective in flight between steps, persistent requests, Ssend, RMA fence and
# passive epochs, a second thread calling MPI) checkpointed live once a second for 60 s, without a
# deadlock, printing the native output; an early, a middle and the last checkpoint restarted, each
# to the native output (split_soak.py). Open MPI; restarts under MPICH where it is.
add_executable(soak_everything_split ${MPI_SPLIT_DIR}/tests/soak_everything.c)
target_link_libraries(soak_everything_split PRIVATE stasis_mpi Threads::Threads)
set_target_properties(soak_everything_split PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/targets)
if(STASIS_OPENMPI_CC AND STASIS_OPENMPI_RUN)
  set(native ${CMAKE_BINARY_DIR}/tests/targets/soak_everything_openmpi)
  add_custom_command(OUTPUT ${native}
                     COMMAND ${STASIS_OPENMPI_CC} -O2 -pthread -o ${native} ${MPI_SPLIT_DIR}/tests/soak_everything.c
                     DEPENDS ${MPI_SPLIT_DIR}/tests/soak_everything.c ${MPI_SPLIT_DIR}/tests/split_test_common.h VERBATIM)
  add_custom_target(soak_everything_openmpi ALL DEPENDS ${native})
  set(cross)
  if(STASIS_MPICH_RUN)
    set(cross ${STASIS_MPICH_RUN} mpich)
  endif()
  add_test(NAME mpi_split.openmpi.soak_everything
           COMMAND ${STASIS_TEST_PYTHON} ${MPI_SPLIT_DIR}/tests/split_soak.py ${STASIS_BIN} ${SPLIT_MPI_RUN}
                   ${STASIS_OPENMPI_RUN} 2 ${native} $<TARGET_FILE:soak_everything_split> 700 100 60 ${cross})
  set_tests_properties(mpi_split.openmpi.soak_everything PROPERTIES TIMEOUT 600 LABELS "mpi;mpi_split"
                       RESOURCE_LOCK mpi_ports)
else()
  stasis_skipped_group(mpi_split.openmpi.soak_everything "needs mpicc.openmpi and mpirun.openmpi")
endif()
