# ssh sessions (README.md): a driver on one test host reading workers on the other through real
# OpenSSH, checkpointed and restarted on the same hosts and on swapped hosts. Needs root (network
# namespaces) and openssh-server/-client; skipped (77) without them. Run under
# `flock /run/stasis-multihost.lock` like every multihost.* test.
stasis_test_target(ssh_driver ${CMAKE_CURRENT_LIST_DIR}/tests/ssh_driver.c)
foreach(mode same_hosts swap options_loop three_clients)
  add_test(NAME multihost.ssh.${mode}
           COMMAND ${STASIS_TEST_PYTHON} ${PROJECT_SOURCE_DIR}/tests/multihost/ssh_session_test.py --${mode}
                   --stasis ${STASIS_BIN} --driver $<TARGET_FILE:ssh_driver> --worker $<TARGET_FILE:counter>)
  set_tests_properties(multihost.ssh.${mode} PROPERTIES TIMEOUT 300 LABELS ckpt SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endforeach()
