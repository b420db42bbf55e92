# ssh sessions (README.md): a driver on one test host reading workers on the other through real
# OpenSSH, checkpointed and restarted on the same hosts and on swapped hosts. Needs root (network
# namespaces) and openssh-server/-client; skipped (77) without them. Run under
# `flock /run/stasis-multihost.lock` like every multihost.* test.
stasis_test_target(ssh_driver ${CMAKE_CURRENT_LIST_DIR}/tests/ssh_driver.c)
foreach(mode same_hosts swap options_loop three_clients chain chain3 chain3_rotated)
  add_test(NAME multihost.ssh.${mode}
           COMMAND ${STASIS_TEST_PYTHON} ${PROJECT_SOURCE_DIR}/tests/multihost/ssh_session_test.py --${mode}
                   --stasis ${STASIS_BIN} --driver $<TARGET_FILE:ssh_driver> --worker $<TARGET_FILE:counter>)
  set_tests_properties(multihost.ssh.${mode} PROPERTIES TIMEOUT 300 LABELS ckpt SKIP_RETURN_CODE 77 RESOURCE_LOCK test_hosts)
endforeach()

# MPI across the two hosts with the starters' default agent, OpenSSH (tests/multihost/mpi_test.py
# --real-ssh, no --rsh at restart): restarted on its hosts, swapped, and swapped then on its hosts
# again from the same checkpoint. Open MPI (plm_rsh_agent ssh, TCP BTL) runs the ring; MPICH
# (Hydra's -launcher ssh, UCX over TCP) mpi_shm without MPI_Finalize. The programs are built by
# tests/CMakeLists.txt's MPI section (find_program is cached: the same lookups).
find_program(STASIS_OPENMPI_CC mpicc.openmpi)
find_program(STASIS_OPENMPI_RUN mpirun.openmpi)
find_program(STASIS_MPICH_CC mpicc.mpich)
find_program(STASIS_MPICH_RUN mpirun.mpich)
set(SSH_MPI_STARTERS)
if(STASIS_OPENMPI_CC AND STASIS_OPENMPI_RUN)
  list(APPEND SSH_MPI_STARTERS openmpi)
else()
  stasis_skipped_group(multihost.ssh.openmpi "no mpicc.openmpi and mpirun.openmpi (Debian: openmpi-bin libopenmpi-dev)")
endif()
if(STASIS_MPICH_CC AND STASIS_MPICH_RUN)
  list(APPEND SSH_MPI_STARTERS mpich)
else()
  stasis_skipped_group(multihost.ssh.mpich "no mpicc.mpich and mpirun.mpich (Debian: mpich libmpich-dev)")
endif()
foreach(starter IN LISTS SSH_MPI_STARTERS)
  if(starter STREQUAL "mpich")
    set(SSH_MPI_ARGS --mpich --mpirun ${STASIS_MPICH_RUN} --program ${CMAKE_BINARY_DIR}/tests/targets/mpi_shm_mpich)
  else()
    set(SSH_MPI_ARGS --mpirun ${STASIS_OPENMPI_RUN} --program ${CMAKE_BINARY_DIR}/tests/targets/mpi_ring_openmpi)
  endif()
  foreach(mode same_hosts swap swap_then_same_hosts)
    add_test(NAME multihost.ssh.${starter}.${mode}
             COMMAND ${STASIS_TEST_PYTHON} ${PROJECT_SOURCE_DIR}/tests/multihost/mpi_test.py --real-ssh --mode ${mode}
                     --stasis ${STASIS_BIN} ${SSH_MPI_ARGS})
    set_tests_properties(multihost.ssh.${starter}.${mode} PROPERTIES TIMEOUT 400 LABELS "ckpt;mpi" SKIP_RETURN_CODE 77
                         RESOURCE_LOCK test_hosts)
  endforeach()
endforeach()

# NWChem (Debian's nwchem, built with Open MPI) across the two hosts, mpirun over real ssh: the
# energies after a restart on its hosts and a swapped one equal an uninterrupted run's
# (tests/multihost/nwchem_test.py, its input beside it; exits 77 without nwchem).
if(STASIS_OPENMPI_RUN)
  add_test(NAME multihost.ssh.openmpi.nwchem
           COMMAND ${STASIS_TEST_PYTHON} ${PROJECT_SOURCE_DIR}/tests/multihost/nwchem_test.py
                   --stasis ${STASIS_BIN} --mpirun ${STASIS_OPENMPI_RUN})
  set_tests_properties(multihost.ssh.openmpi.nwchem PROPERTIES TIMEOUT 400 LABELS "ckpt;mpi" SKIP_RETURN_CODE 77
                       RESOURCE_LOCK test_hosts)
endif()
