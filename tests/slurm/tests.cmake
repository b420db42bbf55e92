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
                       RUN_SERIAL TRUE)
endforeach()

# A batch job longer than its 1-minute time limit, checkpointed on Slurm's warning and requeued by
# docs/examples/slurm-requeue.sbatch until it ends (about 2 minutes: Slurm checks time limits
# every 30 s).
add_test(NAME slurm.nodes.requeue
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/requeue_test.py
                 --stasis ${STASIS_BIN} --task $<TARGET_FILE:slurm_task> --conf ${STASIS_SLURM_CONF_IN})
set_tests_properties(slurm.nodes.requeue PROPERTIES TIMEOUT 300 LABELS "ckpt;slurm" SKIP_RETURN_CODE 77
                     RUN_SERIAL TRUE)

# --checkpoint-on-signal of launch and restart, without Slurm (no daemons: no lock needed).
add_test(NAME slurm.checkpoint-on-signal
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/signal_test.py
                 --stasis ${STASIS_BIN} --task $<TARGET_FILE:slurm_task>)
set_tests_properties(slurm.checkpoint-on-signal PROPERTIES TIMEOUT 120 LABELS ckpt)
