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
stasis_soak_test(ckpt.soak.exec_under_set_e 200 0.99 240 ${CMAKE_CURRENT_LIST_DIR}/tests/exec_loop.sh 2400)

# Threads starting children in every way (fork, fork+exec, vfork+exec, posix_spawn, system,
# popen), each waited for and its status checked, while checkpoints run back to back.
stasis_test_target(fork_soak ${CMAKE_CURRENT_LIST_DIR}/tests/fork_soak.c)
# After the restart in the middle, a vfork's pid was not made virtual, and a system(), popen()
# or waitpid() blocked across a restart waited for the child's old kernel pid (ECHILD).
stasis_soak_test(ckpt.soak.fork_threads 150 0.99 240 fork_soak 3000 4 3)
