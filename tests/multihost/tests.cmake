# Multi-host tests (registered from tests/CMakeLists.txt): network namespaces as hosts, each
# with its own /tmp, /dev/shm and host name (hosts.py); nsrsh as the ssh stand-in where no ssh is
# involved (tests/multihost/bin). The real-ssh cases are in src/plugins/ssh/tests.cmake. Skipped
# (exit 77) without root or `ip netns`.

# ---- several hosts: network namespaces as hosts, nsrsh as ssh (skipped without root) ----------
set(STASIS_NSRSH ${CMAKE_CURRENT_LIST_DIR}/bin/nsrsh)  # the remote shell between namespaces
add_test(NAME multihost.ssh_join
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/multihost_test.py
                 --stasis ${STASIS_BIN} --counter $<TARGET_FILE:counter> --nsrsh ${STASIS_NSRSH})
set_tests_properties(multihost.ssh_join PROPERTIES TIMEOUT 240 LABELS ckpt SKIP_RETURN_CODE 77
                     RESOURCE_LOCK test_hosts)
# A TCP connection between two hosts, restarted with the hosts swapped.
add_test(NAME multihost.tcp_swap
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/tcp_swap_test.py
                 --stasis ${STASIS_BIN} --peer $<TARGET_FILE:tcp_peer> --nsrsh ${STASIS_NSRSH})
set_tests_properties(multihost.tcp_swap PROPERTIES TIMEOUT 300 LABELS ckpt SKIP_RETURN_CODE 77
                     RESOURCE_LOCK test_hosts)
add_test(NAME multihost.tcp_same_hosts
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/tcp_swap_test.py --same-hosts
                 --stasis ${STASIS_BIN} --peer $<TARGET_FILE:tcp_peer> --nsrsh ${STASIS_NSRSH})
set_tests_properties(multihost.tcp_same_hosts PROPERTIES TIMEOUT 300 LABELS ckpt SKIP_RETURN_CODE 77
                     RESOURCE_LOCK test_hosts)
add_test(NAME multihost.tcp_new_addresses
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/tcp_swap_test.py --new-addresses
                 --stasis ${STASIS_BIN} --peer $<TARGET_FILE:tcp_peer> --nsrsh ${STASIS_NSRSH})
set_tests_properties(multihost.tcp_new_addresses PROPERTIES TIMEOUT 300 LABELS ckpt SKIP_RETURN_CODE 77
                     RESOURCE_LOCK test_hosts)


# ---- an Open MPI job on two hosts (network namespaces), restarted on them and swapped ---------
if(STASIS_OPENMPI_CC AND STASIS_OPENMPI_RUN)
  # swap_then_same_hosts (issue 15): one checkpoint restarted swapped, then on its own hosts; each
  # host has its own /tmp, which the restarted mpirun and orted empty of their session files.
  foreach(mode same_hosts swap swap_then_same_hosts)
    set(MPI_HOSTS_ARGS)
    if(mode STREQUAL "swap")
      set(MPI_HOSTS_ARGS --swap)
    elseif(mode STREQUAL "swap_then_same_hosts")
      set(MPI_HOSTS_ARGS --swap --again-same-hosts)
    endif()
    add_test(NAME multihost.mpi.${mode}
             COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/mpi_test.py ${MPI_HOSTS_ARGS}
                     --stasis ${STASIS_BIN} --mpirun ${STASIS_OPENMPI_RUN}
                     --program ${CMAKE_BINARY_DIR}/tests/targets/mpi_ring_openmpi --nsrsh ${STASIS_NSRSH})
    set_tests_properties(multihost.mpi.${mode} PROPERTIES TIMEOUT 400 LABELS "ckpt;mpi" SKIP_RETURN_CODE 77
                         RESOURCE_LOCK test_hosts)
  endforeach()
  # Host relays (src/relay): each host's first process starts its relay, the ranks and daemons
  # after it join there; checkpointed, killed, restarted with the hosts swapped.
  add_test(NAME multihost.mpi.relay_swap
           COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/mpi_test.py --swap --relay
                   --stasis ${STASIS_BIN} --mpirun ${STASIS_OPENMPI_RUN}
                   --program ${CMAKE_BINARY_DIR}/tests/targets/mpi_ring_openmpi --nsrsh ${STASIS_NSRSH})
  set_tests_properties(multihost.mpi.relay_swap PROPERTIES TIMEOUT 400 LABELS "ckpt;mpi" SKIP_RETURN_CODE 77
                       RESOURCE_LOCK test_hosts)
else()
  stasis_skipped_group(multihost.mpi "${STASIS_NO_OPENMPI}")
endif()

# ---- a split-process MPI job on two hosts under mpirun's ssh launcher (src/plugins/mpi_split) ----
# `stasis launch --mpi -- mpirun --host H1:2,H2:2` (ring_in_flight, four ranks), checkpointed and
# killed, restarted by `mpirun ... stasis restart --mpi-rank` on both hosts and on host 1 alone;
# under MPICH's mpiexec with Hydra's ssh launcher (`-launcher ssh -hosts H1:2,H2:2`, --mpich) on
# both hosts only.
find_program(STASIS_MPICH_RUN mpirun.mpich)
set(STASIS_NO_MPICH "no mpicc.mpich and mpirun.mpich (Debian: mpich libmpich-dev)")
foreach(implementation openmpi mpich)
  if(implementation STREQUAL "openmpi")
    set(launcher ${STASIS_OPENMPI_RUN})
    set(which_mpi)
    set(missing "${STASIS_NO_OPENMPI}")
  else()
    set(launcher ${STASIS_MPICH_RUN})
    set(which_mpi --mpich)
    set(missing "${STASIS_NO_MPICH}")
  endif()
  if(TARGET ring_in_flight_split AND TARGET ring_in_flight_${implementation} AND launcher)
    add_test(NAME multihost.mpi_split.${implementation}
             COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/mpi_split_hosts_test.py ${which_mpi}
                     --stasis ${STASIS_BIN} --mpirun ${launcher} --nsrsh ${STASIS_NSRSH}
                     --native ${CMAKE_BINARY_DIR}/tests/targets/ring_in_flight_${implementation}
                     --split $<TARGET_FILE:ring_in_flight_split>)
    set_tests_properties(multihost.mpi_split.${implementation} PROPERTIES TIMEOUT 300 LABELS "ckpt;mpi;mpi_split"
                         SKIP_RETURN_CODE 77 RESOURCE_LOCK test_hosts)
  else()
    stasis_skipped_group(multihost.mpi_split.${implementation} "${missing}")
  endif()
endforeach()

# ---- InfiniBand verbs over softib (docs/infiniband.md) ----------------------------------------
# The InfiniBand plugin's own cases are in src/plugins/infiniband/tests.cmake.
if(TARGET ib_sendrecv AND TARGET stasis_ib)
  # Issue 7: server on host 1 under `launch --ib=soft`, client on host 2 through the ssh stand-in
  # (network namespaces), checkpointed mid-run, killed, restarted on the same hosts and with the
  # hosts swapped (every LID changes); identifiers exchanged through the coordinator's name service.
  foreach(tool rc ud srq)
    foreach(mode same_hosts swap)
      set(IB_HOSTS_MODE)
      if(mode STREQUAL "same_hosts")
        set(IB_HOSTS_MODE --same-hosts)
      endif()
      add_test(NAME multihost.ib.${tool}_pingpong_${mode}
               COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/ib_hosts_test.py
                       --stasis ${STASIS_BIN} --softib-lib ${CMAKE_BINARY_DIR}/lib/softib --nsrsh ${STASIS_NSRSH}
                       --tool ibv_${tool}_pingpong ${IB_HOSTS_MODE} -- -s 64)
      set_tests_properties(multihost.ib.${tool}_pingpong_${mode} PROPERTIES TIMEOUT 600 LABELS "ckpt;ib"
                           SKIP_RETURN_CODE 77 RESOURCE_LOCK "ib_hosts;test_hosts")
    endforeach()
  endforeach()
else()
  stasis_skipped_group(multihost.ib "${STASIS_NO_VERBS}")
endif()
