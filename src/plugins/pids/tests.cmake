# Process trees under back-to-back checkpoints (tests/soak_driver.py): no checkpoint may kill a
# process of the computation or lose a child, and the last one restarts to the same output as
# an uninterrupted run. Included by tests/CMakeLists.txt (which defines STASIS_TEST_PYTHON,
# STASIS_BIN and the functions used here).
set(STASIS_SOAK_DRIVER ${PROJECT_SOURCE_DIR}/tests/soak_driver.py)
# stasis_soak_test(NAME CHECKPOINTS MIN_SUCCESS TIMEOUT PROGRAM args...)
function(stasis_soak_test name checkpoints min_success timeout)
  set(argv ${ARGN})
  list(POP_FRONT argv prog)
  if(TARGET ${prog})
    set(prog $<TARGET_FILE:${prog}>)
  endif()
  add_test(NAME ${name}
           COMMAND ${STASIS_TEST_PYTHON} ${STASIS_SOAK_DRIVER} --stasis ${STASIS_BIN} --name ${name}
                   --checkpoints ${checkpoints} --min-success ${min_success} -- ${prog} ${argv})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout} LABELS "ckpt;soak")
endfunction()

# A shell under `set -e` running /bin/true three at a time: the checkpoint signal, pending in a
# process as it exec'd, killed the new program ("Real-time signal 28") and with it the script.
stasis_soak_test(ckpt.soak.exec_under_set_e 200 0.99 240 ${CMAKE_CURRENT_LIST_DIR}/tests/exec_loop.sh 400)

# Threads starting children in every way (fork, fork+exec, vfork+exec, posix_spawn, system,
# popen), each waited for and its status checked, while checkpoints run back to back.
stasis_test_target(fork_soak ${CMAKE_CURRENT_LIST_DIR}/tests/fork_soak.c)
# After the restart in the middle, a vfork's pid was not made virtual, and a system(), popen()
# or waitpid() blocked across a restart waited for the child's old kernel pid (ECHILD).
stasis_soak_test(ckpt.soak.fork_threads 150 0.99 240 fork_soak 300 4 3)

# ---- virtual pids: every call that takes or returns a pid, across restarts --------------------
stasis_ckpt_test(ckpt.vpid.proc_paths ARGS --wait-lines 10 PROGRAM vpid_proc 50 50)
stasis_ckpt_test(ckpt.vpid.proc_paths.chain2 TIMEOUT 200 ARGS --wait-lines 8 --chain 2 --between-lines 10
                 PROGRAM vpid_proc 60 50)
stasis_ckpt_test(ckpt.vpid.signals ARGS --wait-lines 10 PROGRAM vpid_signals 50 50)
stasis_ckpt_test(ckpt.vpid.signals.chain2 TIMEOUT 200 ARGS --wait-lines 8 --chain 2 --between-lines 10
                 PROGRAM vpid_signals 60 50)
stasis_plain_test(vpid_proc PROGRAM vpid_proc 20 5)
stasis_plain_test(vpid_signals PROGRAM vpid_signals 20 5)
# A new process whose kernel pid is a pid the computation already uses: the kernel is made to hand
# it out (ns_last_pid), which needs a pid namespace of its own and root in it.
if(STASIS_UNSHARE)
  set(VPID_PYTHON_OUTSIDE ${STASIS_TEST_PYTHON})
  if(STASIS_TEST_UID STREQUAL "0")
    set(STASIS_TEST_PYTHON ${STASIS_UNSHARE} --pid --fork --mount-proc ${STASIS_TEST_PYTHON})
  else()
    set(STASIS_TEST_PYTHON ${STASIS_UNSHARE} --user --map-root-user --pid --fork --mount-proc ${STASIS_TEST_PYTHON})
  endif()
  stasis_ckpt_test(ckpt.vpid.clash ARGS --wait-lines 5
                   --restart-stderr "kernel pid is ours(.|\n)*kernel tid is our pid|kernel tid is our pid(.|\n)*kernel pid is ours"
                   PROGRAM vpid_clash 40 50)
  stasis_ckpt_test(ckpt.vpid.clash.chain2 TIMEOUT 200 ARGS --wait-lines 5 --chain 2 --between-lines 8
                   --restart-stderr "kernel pid is ours" PROGRAM vpid_clash 50 50)
  add_test(NAME restart.tid_in_pointer_range
           COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/restart/tid_in_pointer_range.py
                   ${STASIS_BIN} $<TARGET_FILE:signals_timer>)
  set_tests_properties(restart.tid_in_pointer_range PROPERTIES TIMEOUT 120 LABELS restart)
  set(STASIS_TEST_PYTHON ${VPID_PYTHON_OUTSIDE})
else()
  stasis_skipped_group(ckpt.vpid.clash "no unshare(1) for a pid namespace of its own (Debian: util-linux)")
endif()
# Two copies of one checkpoint restarted at the same time: two computations, two pid tables.
foreach(coord own shared)
  add_test(NAME restart.vpid.side_by_side.${coord}
           COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/restart/vpid_side_by_side.py
                   ${STASIS_BIN} $<TARGET_FILE:vpid_signals> ${coord})
  set_tests_properties(restart.vpid.side_by_side.${coord} PROPERTIES TIMEOUT 200 LABELS restart)
endforeach()
# Two hosts with pid namespaces of their own whose processes have the same virtual pids (issue 16):
# keyed by pid space, restarted on the same hosts, swapped and both onto one host. Real OpenSSH
# between the hosts (ssh_driver is src/plugins/ssh's); run under `flock /run/stasis-multihost.lock`.
add_test(NAME multihost.pids.same_vpids
         COMMAND ${STASIS_TEST_PYTHON} ${PROJECT_SOURCE_DIR}/tests/multihost/same_pids_test.py
                 --stasis ${STASIS_BIN} --driver $<TARGET_FILE:ssh_driver> --worker $<TARGET_FILE:counter>)
set_tests_properties(multihost.pids.same_vpids PROPERTIES TIMEOUT 240 LABELS ckpt SKIP_RETURN_CODE 77 RESOURCE_LOCK test_hosts)

# ---- process trees: fork, pipes between processes, zombies, pids seen across a restart --------
foreach(t fork_tree scale_tree shared_memory)
  stasis_test_target(${t} ${CMAKE_CURRENT_LIST_DIR}/tests/${t}.c)
endforeach()
stasis_ckpt_test(ckpt.tree.fork ARGS --wait-lines 15 PROGRAM fork_tree 60 50)
stasis_ckpt_test(ckpt.tree.fork.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 10 PROGRAM fork_tree 70 50)
# 64 real processes (a parent and 63 children with 16 KiB of changing memory each), checkpointed
# twice and restarted as one tree: the coordinator and the restart at scale (issue 5).
stasis_ckpt_test(ckpt.tree.scale64 TIMEOUT 240 ARGS --checkpoints 2 --between-lines 5 --wait-lines 10
                 --timeout 120 --step-timeout 90 --ckpt-timeout 90 PROGRAM scale_tree 64 80 100 16)
# A child that closes the pid table's descriptor with a raw close (past the runtime's wrappers)
# and execs: after the restart the new program must still find the table (its parent's virtual pid,
# the restarted coordinator), which the exec wrapper puts back at its descriptor.
stasis_test_target(exec_closed_table ${CMAKE_CURRENT_LIST_DIR}/tests/exec_closed_table.c)
stasis_ckpt_test(ckpt.tree.exec_closed_table.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 5 --wait-lines 5
                 PROGRAM exec_closed_table 24 100)
# bash: pipelines, command substitution, a background job waited for; every command a new process
stasis_ckpt_test(interp.bash.pipeline LABELS interp ARGS --wait-lines 10 PROGRAM ${SCRIPTS}/pipeline.sh)
stasis_ckpt_test(interp.bash.pipeline.chain3 TIMEOUT 200 LABELS interp ARGS --chain 3 --between-lines 8
                 PROGRAM ${SCRIPTS}/pipeline.sh)
stasis_ckpt_test(interp.bash.outside_copy.chain2 TIMEOUT 200 LABELS interp ARGS --chain 2 --between-lines 10
                 --wait-lines 10 PROGRAM ${SCRIPTS}/outside_copy.sh 25)
stasis_ckpt_test(interp.bash.foreground_wait.chain2 TIMEOUT 200 LABELS interp ARGS --chain 2 --between-lines 5
                 --wait-lines 8 PROGRAM ${SCRIPTS}/foreground_sleep.sh 30)
# memory shared between processes (shared anonymous, sem_open+unlink, memfd without a descriptor):
# one copy in the checkpoint, one object again after restart (the turn-taking hangs otherwise)
stasis_ckpt_test(ckpt.tree.shared_memory ARGS --wait-lines 10 PROGRAM shared_memory 60 40)
stasis_ckpt_test(ckpt.tree.shared_memory.chain3 TIMEOUT 200 ARGS --chain 3 --between-lines 8
                 PROGRAM shared_memory 70 40)
stasis_ckpt_test(ckpt.tree.shared_memory.in_place ARGS --kill ckpt-kill --wait-lines 10
                 PROGRAM shared_memory 60 40)
# python3: a multiprocessing pool of 4 workers (semaphores in shared memory, pipes) and subprocess
stasis_ckpt_test(interp.python3.pool LABELS interp ARGS --wait-lines 10 PROGRAM /usr/bin/python3 ${SCRIPTS}/pool.py 40)
# python3: a multiprocessing Manager (server process behind a named Unix socket), its proxies in
# two worker processes, and Pipes (socketpairs) back to the parent
stasis_ckpt_test(interp.python3.manager LABELS interp ARGS --wait-lines 10 PROGRAM /usr/bin/python3 ${SCRIPTS}/manager.py 40)
stasis_ckpt_test(interp.python3.manager.chain2 TIMEOUT 200 LABELS interp ARGS --chain 2 --between-lines 8
                 PROGRAM /usr/bin/python3 ${SCRIPTS}/manager.py 50)
# python3 subprocess children (descriptors closed before exec) started after a restart still join
stasis_ckpt_test(interp.python3.subprocess.chain2 TIMEOUT 200 LABELS interp ARGS --chain 2 --between-lines 4
                 --wait-lines 5 PROGRAM /usr/bin/python3 ${SCRIPTS}/subprocess_loop.py 20)
stasis_ckpt_test(interp.python3.pool.chain2 TIMEOUT 200 LABELS interp ARGS --chain 2 --between-lines 10
                 PROGRAM /usr/bin/python3 ${SCRIPTS}/pool.py 50)

# Processes checkpointed in the first 20 ms of their lives, before they have joined (a process
# defers its join: src/runtime/README.md, Joining): the "children" barrier waits for them, so
# each checkpoint holds every one and the restarts finish the script as an uninterrupted run.
# The after-check asks that some checkpoint held a child (every child lives 0-20 ms, so one it
# holds was taken in before it had joined), so the test cannot pass by missing them all.
stasis_ckpt_test(ckpt.tree.unjoined_children TIMEOUT 200 ARGS --wait-lines 20 --checkpoints 3 --between-lines 10
                 --chain 2 --after-check "${CMAKE_CURRENT_LIST_DIR}/tests/some_checkpoint_held_a_child.sh {dir}/../stasis-ckpt"
                 PROGRAM ${CMAKE_CURRENT_LIST_DIR}/tests/join_storm.sh 150)
