# System V IPC and POSIX message queues: checkpoint-kill-restart cases,
# included by tests/CMakeLists.txt (which defines stasis_test_target, stasis_ckpt_test,
# stasis_plain_test and the tools they use).
foreach(t sysv_shm sysv_shared sysv_nattch sysv_sem sysv_msg posix_mq)
  stasis_test_target(${t} ${CMAKE_CURRENT_LIST_DIR}/tests/${t}.c)
endforeach()
# System V objects and POSIX queues outlive the processes that made them, and the killed run of
# every case leaves its own behind: each case runs in an IPC namespace of its own (unshare), which
# the kernel destroys with everything in it when the case ends, passed or failed.
if(STASIS_UNSHARE)
  set(IPC_PYTHON_OUTSIDE ${STASIS_TEST_PYTHON})
  if(STASIS_TEST_UID STREQUAL "0")
    set(STASIS_TEST_PYTHON ${STASIS_UNSHARE} --ipc ${STASIS_TEST_PYTHON})
  else()
    set(STASIS_TEST_PYTHON ${STASIS_UNSHARE} --user --map-root-user --ipc ${STASIS_TEST_PYTHON})
  endif()
  stasis_ckpt_test(ckpt.ipc.sysv_shm ARGS --wait-lines 15 PROGRAM sysv_shm 40 50)
  stasis_ckpt_test(ckpt.ipc.sysv_shm.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 10 PROGRAM sysv_shm 50 50)
  # Four live checkpoints: while each forked writer lives on after "resume", the program reads its
  # segment's shm_nattch every 2 ms and prints any reading other than its own 3 mappings.
  stasis_ckpt_test(ckpt.ipc.sysv_nattch ARGS --wait-lines 5 --checkpoints 4 --between-lines 4
                   PROGRAM sysv_nattch 30 25)
  # The segment attached at each step goes through syscall(SYS_shmat) (the capture table's syscall
  # rows hand it to the ipc kind, which translates the id after the restart).
  stasis_ckpt_test(ckpt.ipc.sysv_shm.syscall ARGS --wait-lines 15 PROGRAM sysv_shm 40 50 0x5157a001 syscall)
  # Segments two processes attach by ids passed through pipes, one marked for removal, one attached
  # by the child only after the restart (60 steps: the checkpoint comes well before that step).
  stasis_ckpt_test(ckpt.ipc.sysv_shared ARGS --wait-lines 10 PROGRAM sysv_shared 60 50)
  stasis_ckpt_test(ckpt.ipc.sysv_shared.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 10 PROGRAM sysv_shared 70 50)
  # A segment a process outside the computation has attached too: refused, the program runs on.
  stasis_ckpt_test(ckpt.ipc.refuse.sysv_outsider ARGS --wait-lines 6
                   --expect-refusal "System V shared memory segment id [0-9]+ has [0-9]+ attachments, of which the computation's processes hold [0-9]+: a process outside the computation"
                   PROGRAM sysv_shared 30 50 outsider)
  stasis_ckpt_test(ckpt.ipc.sysv_sem ARGS --wait-lines 15 PROGRAM sysv_sem 40 50)
  stasis_ckpt_test(ckpt.ipc.sysv_sem.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 10 PROGRAM sysv_sem 50 50)
  stasis_ckpt_test(ckpt.ipc.sysv_msg ARGS --wait-lines 15 PROGRAM sysv_msg 40 50)
  stasis_ckpt_test(ckpt.ipc.sysv_msg.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 10 PROGRAM sysv_msg 50 50)
  stasis_ckpt_test(ckpt.ipc.posix_mq ARGS --wait-lines 15 PROGRAM posix_mq 40 50)
  stasis_ckpt_test(ckpt.ipc.posix_mq.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 10 PROGRAM posix_mq 50 50)
  # SEM_UNDO adjustments live in the kernel only: refused, and the program runs on.
  stasis_ckpt_test(ckpt.ipc.refuse.sem_undo ARGS --wait-lines 10 --expect-refusal "SEM_UNDO"
                   PROGRAM sysv_sem 40 50 0x5157a002 1)
  stasis_plain_test(sysv_shm PROGRAM sysv_shm 30 5)
  stasis_plain_test(sysv_shared PROGRAM sysv_shared 30 5)
  stasis_plain_test(sysv_sem PROGRAM sysv_sem 30 5)
  stasis_plain_test(sysv_msg PROGRAM sysv_msg 30 5)
  stasis_plain_test(posix_mq PROGRAM posix_mq 30 5)
  set(STASIS_TEST_PYTHON ${IPC_PYTHON_OUTSIDE})
else()
  stasis_skipped_group(ckpt.ipc "no unshare(1) for the IPC namespace of each case (Debian: util-linux)")
endif()
