# MPI jobs on one host (docs/mpi.md): their target programs are in this folder. Included by
# tests/CMakeLists.txt, which defines the functions used here; what this file sets (STASIS_OPENMPI_*,
# STASIS_MPICH_*, MPICH_SHM, STASIS_NO_OPENMPI) the multi-host and Slurm tests there use too.
set(STASIS_MPI_TESTS_DIR ${CMAKE_CURRENT_LIST_DIR})
stasis_test_target(mpi_cma ${STASIS_MPI_TESTS_DIR}/mpi_cma.c)
# mpi_cma: cross-memory attach (process_vm_readv/writev) to a parent named by its virtual pid.
stasis_ckpt_test(ckpt.mpi.cma LABELS ckpt mpi ARGS --wait-lines 10 PROGRAM mpi_cma 60 50)
stasis_ckpt_test(ckpt.mpi.cma.chain2 TIMEOUT 200 LABELS ckpt mpi ARGS --chain 2 --between-lines 10
                 PROGRAM mpi_cma 70 50)
# Real MPI jobs, run where Open MPI is installed (Debian: openmpi-bin libopenmpi-dev, and
# python3-mpi4py for the mpi4py one), skipped otherwise. mpi_ring is built with the MPI's own
# compiler wrapper. They share one lock: the ranks' TCP listeners take the lowest free ports from
# 1024, and a concurrent job could take a killed job's port before its restart listens there again.
function(stasis_mpi_program name compiler source)
  set(out ${CMAKE_BINARY_DIR}/tests/targets/${name})
  add_custom_command(OUTPUT ${out}
                     COMMAND ${compiler} -O2 -D_GNU_SOURCE -I${PROJECT_SOURCE_DIR}/tests/targets -o ${out}
                             ${STASIS_MPI_TESTS_DIR}/${source}
                     DEPENDS ${STASIS_MPI_TESTS_DIR}/${source} ${PROJECT_SOURCE_DIR}/tests/targets/target_common.h
                             ${STASIS_MPI_TESTS_DIR}/mpi_common.h VERBATIM)
  add_custom_target(${name} ALL DEPENDS ${out})
endfunction()
function(stasis_mpi_test name)
  stasis_ckpt_test(${name} TIMEOUT 200 LABELS mpi ${ARGN})
  set_tests_properties(${name} PROPERTIES RESOURCE_LOCK mpi_ports)
endfunction()
set(MPI_RING ${CMAKE_BINARY_DIR}/tests/targets/mpi_ring)
find_program(STASIS_OPENMPI_CC mpicc.openmpi)
find_program(STASIS_OPENMPI_RUN mpirun.openmpi)
if(STASIS_OPENMPI_CC AND STASIS_OPENMPI_RUN)
  stasis_mpi_program(mpi_ring_openmpi ${STASIS_OPENMPI_CC} mpi_ring.c)
  stasis_mpi_program(mpi_shm_openmpi ${STASIS_OPENMPI_CC} mpi_shm.c)
  set(OPENMPI_TCP ${SCRIPTS}/mpi_run.sh ${STASIS_OPENMPI_RUN} -np 2 --mca btl tcp,self --)
  stasis_mpi_test(mpi.openmpi.tcp ARGS --wait-lines 10 PROGRAM ${OPENMPI_TCP} ${MPI_RING}_openmpi 60 50)
  stasis_mpi_test(mpi.openmpi.tcp.chain2 ARGS --chain 2 --between-lines 10
                  PROGRAM ${OPENMPI_TCP} ${MPI_RING}_openmpi 70 50)
  # Default transports: shared memory (vader, its segments in /dev/shm) with CMA single copy.
  # mpi_shm keeps messages in the segments at the checkpoint; before each restart the segments are
  # zeroed (as a run that went on would have changed them): restart must bring back their bytes.
  set(MPI_SHM ${CMAKE_BINARY_DIR}/tests/targets/mpi_shm_openmpi)
  set(SHM_SCRIBBLE --before-restart "${SCRIPTS}/mpi_scribble_shm.sh ${STASIS_BIN}")
  stasis_mpi_test(mpi.openmpi.shm ARGS --wait-lines 10 ${SHM_SCRIBBLE}
                  PROGRAM ${SCRIPTS}/mpi_run.sh ${STASIS_OPENMPI_RUN} -np 2 -- ${MPI_SHM} 60 50)
  stasis_mpi_test(mpi.openmpi.shm.np4 ARGS --wait-lines 10 ${SHM_SCRIBBLE}
                  PROGRAM ${SCRIPTS}/mpi_run.sh ${STASIS_OPENMPI_RUN} -np 4 --oversubscribe -- ${MPI_SHM} 60 50)
  stasis_mpi_test(mpi.openmpi.shm.chain2 ARGS --chain 2 --between-lines 10 ${SHM_SCRIBBLE}
                  PROGRAM ${SCRIPTS}/mpi_run.sh ${STASIS_OPENMPI_RUN} -np 2 -- ${MPI_SHM} 70 50)
  stasis_mpi_test(mpi.openmpi.shm.np4.chain2 ARGS --chain 2 --between-lines 10 ${SHM_SCRIBBLE}
                  PROGRAM ${SCRIPTS}/mpi_run.sh ${STASIS_OPENMPI_RUN} -np 4 --oversubscribe -- ${MPI_SHM} 70 50)
  # Issue 15: one checkpoint restarted twice, each run to the end. The first restarted mpirun
  # removes its session directory (/tmp/ompi.HOST.UID/pid.N: PMIx's dstore segments the ranks map
  # shared, hwloc.sm, a FIFO) when it ends: the second restart needs them from the checkpoint.
  stasis_mpi_test(mpi.openmpi.shm.restart_twice ARGS --wait-lines 10 --restart-twice ${SHM_SCRIBBLE}
                  PROGRAM ${SCRIPTS}/mpi_run.sh ${STASIS_OPENMPI_RUN} -np 2 -- ${MPI_SHM} 60 50)
  stasis_mpi_test(mpi.openmpi.tcp.restart_twice ARGS --wait-lines 10 --restart-twice
                  PROGRAM ${OPENMPI_TCP} ${MPI_RING}_openmpi 60 50)
  execute_process(COMMAND ${STASIS_TEST_PYTHON} -c "import mpi4py.MPI" RESULT_VARIABLE STASIS_MPI4PY_IMPORT
                  OUTPUT_QUIET ERROR_QUIET)
  if(STASIS_MPI4PY_IMPORT EQUAL 0)
    stasis_mpi_test(mpi.mpi4py.tcp ARGS --wait-lines 10
                    PROGRAM ${OPENMPI_TCP} ${STASIS_TEST_PYTHON} ${SCRIPTS}/mpi_ring.py 50 50)
  else()
    stasis_skipped_group(mpi.mpi4py "${STASIS_TEST_PYTHON} cannot import mpi4py (Debian: python3-mpi4py)")
  endif()
  # Real applications with the default transports, their shared memory zeroed before the restart.
  # The mpi4py Jacobi solver (tests/scripts/jacobi.py; needs python3-numpy) prints a checksum of
  # its grid every 10000 iterations; LAMMPS (Debian: lammps) prints its thermo lines.
  set(STASIS_JACOBI_PY ${SCRIPTS}/jacobi.py)
  execute_process(COMMAND ${STASIS_TEST_PYTHON} -c "import mpi4py.MPI, numpy" RESULT_VARIABLE STASIS_NUMPY_IMPORT
                  OUTPUT_QUIET ERROR_QUIET)
  if(STASIS_NUMPY_IMPORT EQUAL 0)
    stasis_mpi_test(mpi.openmpi.jacobi ARGS --progress-regex "^iter " --wait-lines 4 --timeout 90 ${SHM_SCRIBBLE}
                    PROGRAM ${SCRIPTS}/mpi_run.sh ${STASIS_OPENMPI_RUN} -np 2 -- ${STASIS_TEST_PYTHON}
                            ${STASIS_JACOBI_PY} 20000 100000 10000)
  else()
    stasis_skipped_group(mpi.openmpi.jacobi
                         "${STASIS_TEST_PYTHON} cannot import mpi4py and numpy (Debian: python3-mpi4py python3-numpy)")
  endif()
  find_program(STASIS_LAMMPS lmp)
  if(STASIS_LAMMPS)
    stasis_mpi_test(mpi.openmpi.lammps ARGS --progress-regex "^ +[0-9]+ " --wait-lines 5 --timeout 90 ${SHM_SCRIBBLE}
                    PROGRAM ${SCRIPTS}/mpi_lammps.sh ${STASIS_OPENMPI_RUN} 2 16 600)
  else()
    stasis_skipped_group(mpi.openmpi.lammps "no lmp (Debian: lammps)")
  endif()
else()
  set(STASIS_NO_OPENMPI "no mpicc.openmpi and mpirun.openmpi (Debian: openmpi-bin libopenmpi-dev)")
  stasis_skipped_group(mpi.openmpi "${STASIS_NO_OPENMPI}")
  stasis_skipped_group(mpi.mpi4py "${STASIS_NO_OPENMPI}")
endif()
# MPICH 4.0 (Debian: mpich libmpich-dev, device ch4:ucx). Its default transport between ranks of
# one host is UCX's shared memory: its ranks signal each other through named Unix datagram sockets
# and share System V segments, each made by one rank and attached by the others by id (saved once
# per host, made again once at restart). Those jobs run in an IPC namespace of their own, as the
# IPC tests do. With UCX_TLS=tcp,self they talk over TCP (and share MPICH's own one-page segment).
# mpi_shm ends without MPI_Finalize there (FINALIZE=0): MPICH over UCX's TCP hangs in it in about
# one run in ten, without Stasis too.
find_program(STASIS_MPICH_CC mpicc.mpich)
find_program(STASIS_MPICH_RUN mpirun.mpich)
if(STASIS_MPICH_CC AND STASIS_MPICH_RUN)
  stasis_mpi_program(mpi_shm_mpich ${STASIS_MPICH_CC} mpi_shm.c)
  set(MPICH_SHM ${CMAKE_BINARY_DIR}/tests/targets/mpi_shm_mpich)
  set(MPICH_TCP env UCX_TLS=tcp,self ${SCRIPTS}/mpi_run.sh ${STASIS_MPICH_RUN} -np 2 --)
  stasis_mpi_test(mpi.mpich.tcp ARGS --wait-lines 10 PROGRAM ${MPICH_TCP} ${MPICH_SHM} 60 50 12 0)
  stasis_mpi_test(mpi.mpich.tcp.chain2 ARGS --chain 2 --between-lines 10
                  PROGRAM ${MPICH_TCP} ${MPICH_SHM} 70 50 12 0)
  if(STASIS_UNSHARE AND STASIS_TEST_UID STREQUAL "0")
    set(MPI_PYTHON_OUTSIDE ${STASIS_TEST_PYTHON})
    set(STASIS_TEST_PYTHON ${STASIS_UNSHARE} --ipc ${STASIS_TEST_PYTHON})
    set(MPICH_DEFAULT ${SCRIPTS}/mpi_run.sh ${STASIS_MPICH_RUN})
    stasis_mpi_test(mpi.mpich.shm ARGS --wait-lines 10 PROGRAM ${MPICH_DEFAULT} -np 2 -- ${MPICH_SHM} 60 50)
    stasis_mpi_test(mpi.mpich.shm.chain2 ARGS --chain 2 --between-lines 10
                    PROGRAM ${MPICH_DEFAULT} -np 2 -- ${MPICH_SHM} 70 50)
    stasis_mpi_test(mpi.mpich.shm.np4 ARGS --wait-lines 10 PROGRAM ${MPICH_DEFAULT} -np 4 -- ${MPICH_SHM} 60 50)
    stasis_mpi_test(mpi.mpich.shm.np4.chain2 ARGS --chain 2 --between-lines 10
                    PROGRAM ${MPICH_DEFAULT} -np 4 -- ${MPICH_SHM} 70 50)
    set(STASIS_TEST_PYTHON ${MPI_PYTHON_OUTSIDE})
  elseif(NOT STASIS_TEST_UID STREQUAL "0")
    stasis_skipped_group(mpi.mpich.shm "needs root (each job runs in an IPC namespace of its own)")
  else()
    stasis_skipped_group(mpi.mpich.shm "no unshare(1) for an IPC namespace per job (Debian: util-linux)")
  endif()
else()
  stasis_skipped_group(mpi.mpich "no mpicc.mpich and mpirun.mpich (Debian: mpich libmpich-dev)")
endif()
