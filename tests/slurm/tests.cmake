# The Slurm tests (tests/slurm/), included by tests/CMakeLists.txt. Each runs a private cluster
# (slurm_cluster.py) and exits 77 (skipped) without slurm-wlm and munge or when not root.
# slurm_task: one task of a job step, its lines naming the task.
stasis_test_target(slurm_task ${CMAKE_CURRENT_LIST_DIR}/slurm_task.c)
# One node, this machine:
set(STASIS_SLURM_CONF_IN ${CMAKE_CURRENT_LIST_DIR}/slurm.conf.in)
foreach(mode launch-srun srun-launch)
  add_test(NAME slurm.${mode}
           COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/slurm_test.py --mode ${mode}
                   --stasis ${STASIS_BIN} --task $<TARGET_FILE:slurm_task> --conf ${STASIS_SLURM_CONF_IN})
  set_tests_properties(slurm.${mode} PROPERTIES TIMEOUT 400 LABELS "ckpt;slurm" SKIP_RETURN_CODE 77)
endforeach()
# MPI under Slurm's own PMI is refused at checkpoint (docs/clusters.md, Slurm).
if(TARGET mpi_shm_mpich)
  add_test(NAME slurm.mpich-pmi2-refused
           COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/slurm_test.py --mode mpich-pmi2-refused
                   --stasis ${STASIS_BIN} --task $<TARGET_FILE:slurm_task> --conf ${STASIS_SLURM_CONF_IN}
                   --mpi-program ${MPICH_SHM})
  set_tests_properties(slurm.mpich-pmi2-refused PROPERTIES TIMEOUT 400 LABELS "ckpt;slurm;mpi" SKIP_RETURN_CODE 77
                       RESOURCE_LOCK mpi_ports)
else()
  stasis_skipped_group(slurm.mpich-pmi2-refused "no mpicc.mpich and mpirun.mpich (Debian: mpich libmpich-dev)")
endif()

# Two nodes, each a test host of its own (slurm_nodes.py: network, mount and UTS namespaces, so
# its own address, /tmp, /dev/shm and host name). The hosts' names are machine-wide: one at a time,
# as the multihost.* tests. srun-launch-interval: no --coord, interval checkpoints, `stasis status`
# from node 2. launch-srun-moved: three nodes, restarted on nodes 2 and 3 after running on 1 and 2.
# script-srun: a launched script runs srun (srun is the script's child, outside the computation).
foreach(mode launch-srun launch-srun-moved script-srun srun-launch srun-launch-interval)
  add_test(NAME slurm.nodes.${mode}
           COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/nodes_test.py --mode ${mode}
                   --stasis ${STASIS_BIN} --task $<TARGET_FILE:slurm_task> --conf ${STASIS_SLURM_CONF_IN})
  set_tests_properties(slurm.nodes.${mode} PROPERTIES TIMEOUT 300 LABELS "ckpt;slurm" SKIP_RETURN_CODE 77
                       RESOURCE_LOCK test_hosts)
endforeach()

# A batch job longer than its 1-minute time limit, checkpointed on Slurm's warning and requeued by
# docs/examples/slurm-requeue.sbatch until it ends (about 2 minutes: Slurm checks time limits
# every 30 s).
add_test(NAME slurm.nodes.requeue
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/requeue_test.py
                 --stasis ${STASIS_BIN} --task $<TARGET_FILE:slurm_task> --conf ${STASIS_SLURM_CONF_IN})
set_tests_properties(slurm.nodes.requeue PROPERTIES TIMEOUT 300 LABELS "ckpt;slurm" SKIP_RETURN_CODE 77
                     RESOURCE_LOCK test_hosts)

# --checkpoint-on-signal of launch and restart, without Slurm (no daemons: no lock needed).
add_test(NAME slurm.checkpoint-on-signal
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/signal_test.py
                 --stasis ${STASIS_BIN} --task $<TARGET_FILE:slurm_task>)
set_tests_properties(slurm.checkpoint-on-signal PROPERTIES TIMEOUT 120 LABELS ckpt)

# Split-process MPI under srun (src/plugins/mpi_split/README.md, Slurm): four ranks of
# ring_in_flight on the two-node cluster, each `stasis launch --mpi` started by srun, checkpointed,
# cancelled, and restarted by `srun ... stasis restart --mpi-rank` in a new job on two nodes and on
# one, and (Open MPI) by mpirun outside Slurm. pmix: Open MPI; pmi2: MPICH.
set(STASIS_SLURM_SPLIT_MPI)
if(TARGET ring_in_flight_split AND TARGET ring_in_flight_openmpi)
  list(APPEND STASIS_SLURM_SPLIT_MPI "pmix:openmpi")
else()
  stasis_skipped_group(slurm.nodes.mpi_split.pmix "no mpicc.openmpi and mpirun.openmpi (Debian: openmpi-bin libopenmpi-dev)")
endif()
if(TARGET ring_in_flight_split AND TARGET ring_in_flight_mpich)
  list(APPEND STASIS_SLURM_SPLIT_MPI "pmi2:mpich")
else()
  stasis_skipped_group(slurm.nodes.mpi_split.pmi2 "no mpicc.mpich and mpirun.mpich (Debian: mpich libmpich-dev)")
endif()
foreach(pair IN LISTS STASIS_SLURM_SPLIT_MPI)
  string(REPLACE ":" ";" pair ${pair})
  list(GET pair 0 pmi)
  list(GET pair 1 implementation)
  set(mpirun_option)
  if(pmi STREQUAL "pmix")
    set(mpirun_option --mpirun ${STASIS_OPENMPI_RUN})
  endif()
  add_test(NAME slurm.nodes.mpi_split.${pmi}
           COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/mpi_split_test.py --stasis ${STASIS_BIN}
                   --conf ${STASIS_SLURM_CONF_IN} --mpi ${pmi} ${mpirun_option}
                   --native ${CMAKE_BINARY_DIR}/tests/targets/ring_in_flight_${implementation}
                   --split $<TARGET_FILE:ring_in_flight_split>)
  set_tests_properties(slurm.nodes.mpi_split.${pmi} PROPERTIES TIMEOUT 400 LABELS "ckpt;slurm;mpi;mpi_split"
                       SKIP_RETURN_CODE 77 RESOURCE_LOCK test_hosts)
endforeach()
