# The InfiniBand plugin's checkpoint-kill-restart cases over softib (docs/infiniband.md). Included by
# tests/CMakeLists.txt, which defines the functions used here and gives every ckpt.ib.* case the
# busy_polling_verbs lock. Its target program, ib_sendrecv, links softib (src/softib).
if(TARGET softib_verbs)
  add_executable(ib_sendrecv ${CMAKE_CURRENT_LIST_DIR}/tests/ib_sendrecv.c)
  target_compile_definitions(ib_sendrecv PRIVATE _GNU_SOURCE)
  target_include_directories(ib_sendrecv PRIVATE ${PROJECT_SOURCE_DIR}/tests/targets)  # target_common.h
  target_link_libraries(ib_sendrecv PRIVATE softib_verbs)
  set_target_properties(ib_sendrecv PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/targets)
endif()
# The plugin (`launch --ib=soft`) drains, tears down and re-creates the verbs objects of two
# processes talking RC send/receive: several checkpoints of the live pair, then two restarts.
if(TARGET ib_sendrecv AND TARGET stasis_ib)
  stasis_ckpt_test(ckpt.ib.sendrecv LABELS "ckpt;ib" ARGS --launch-arg=--ib=soft --wait-lines 5
                   --checkpoints 2 --between-lines 4 --chain 2 PROGRAM ib_sendrecv 30 60)
  # RDMA writes (with immediate) into the peer's buffer and reads back, with the rkey the client
  # cached at start: after each restart it must name the peer's re-registered buffer.
  stasis_ckpt_test(ckpt.ib.rdma LABELS "ckpt;ib" ARGS --launch-arg=--ib=soft --wait-lines 5
                   --checkpoints 2 --between-lines 4 --chain 2 PROGRAM ib_sendrecv 30 60 rdma)
  # Without the plugin a verbs context cannot be checkpointed: refused, the pair runs on.
  stasis_ckpt_test(ckpt.ib.refused_without_plugin LABELS "ckpt;ib" ARGS --wait-lines 3
                   --expect-refusal "InfiniBand verbs device context softib0 is open"
                   PROGRAM ib_sendrecv 12 60)
  # Both sides wait on a completion channel (ibv_get_cq_event): its descriptor number, armed
  # notifications and events pending at the checkpoint carry over the re-creations.
  stasis_ckpt_test(ckpt.ib.sendrecv_events LABELS "ckpt;ib" ARGS --launch-arg=--ib=soft --wait-lines 5
                   --checkpoints 2 --between-lines 4 --chain 2 PROGRAM ib_sendrecv 30 60 events)
  # The same, waiting in epoll_wait on the channel's descriptor: its registration must follow.
  stasis_ckpt_test(ckpt.ib.sendrecv_epoll LABELS "ckpt;ib" ARGS --launch-arg=--ib=soft --wait-lines 5
                   --checkpoints 2 --between-lines 4 --chain 2 PROGRAM ib_sendrecv 30 60 epoll)
  # Receives (send with immediate) through shared receive queues, still posted on them at each
  # checkpoint: re-posted on the re-created SRQ. With and without completion channels.
  stasis_ckpt_test(ckpt.ib.srq LABELS "ckpt;ib" ARGS --launch-arg=--ib=soft --wait-lines 5
                   --checkpoints 3 --between-lines 3 --chain 2 PROGRAM ib_sendrecv 30 60 srq)
  # What the plugin cannot drain is refused, naming the object; the pair runs on.
  stasis_ckpt_test(ckpt.ib.refused_unsignaled LABELS "ckpt;ib" ARGS --launch-arg=--ib=soft --wait-lines 3
                   --expect-refusal "InfiniBand queue pair [0-9]+ posts unsignaled sends"
                   PROGRAM ib_sendrecv 12 60 unsignaled)
  stasis_ckpt_test(ckpt.ib.srq_events LABELS "ckpt;ib" ARGS --launch-arg=--ib=soft --wait-lines 5
                   --checkpoints 2 --between-lines 4 --chain 2 PROGRAM ib_sendrecv 30 60 srq events)
  # Debian's unmodified ibv_rc_pingpong, server and client under one launch; the images must hold
  # both (the checkpoint came while they were exchanging messages).
  # NAME TOOL ITERS [TOOL options]: tests/softib/pingpong_pair.sh under one launch.
  function(stasis_ib_pingpong_test name tool iters)
    find_program(IBV_TOOL_${tool} ${tool})
    if(IBV_TOOL_${tool})
      stasis_ckpt_test(${name} LABELS "ckpt;ib" TIMEOUT 400
                       ARGS --launch-arg=--ib=soft --wait-regex "pingpong running" --timeout 180
                       --before-restart "ls \"$STASIS_CKPT_DIR\"/0*/ibv_*-*.stasis | wc -l | grep -qx 2"
                       PROGRAM ${CMAKE_SOURCE_DIR}/tests/softib/pingpong_pair.sh ${tool} ${CMAKE_BINARY_DIR}/lib/softib
                       {dir} ${iters} ${ARGN})
    else()
      stasis_skipped_group(${name} "no ${tool} (Debian: ibverbs-utils)")
    endif()
  endfunction()
  # Iterations: several seconds on a quiet machine (20-25 us per round trip), so that the checkpoint
  # that follows "pingpong running" comes well before the end.
  stasis_ib_pingpong_test(ckpt.ib.rc_pingpong ibv_rc_pingpong 200000 -s 64)
  stasis_ib_pingpong_test(ckpt.ib.rc_pingpong_events ibv_rc_pingpong 60000 -s 64 -e)
  stasis_ib_pingpong_test(ckpt.ib.srq_pingpong ibv_srq_pingpong 300000 -s 64)
  stasis_ib_pingpong_test(ckpt.ib.srq_pingpong_events ibv_srq_pingpong 300000 -s 64 -e)
  # UD: address handles, remote QPNs in each send, source QPs and LIDs in completions; the
  # datagrams in flight at the checkpoint are awaited by count (docs/infiniband.md).
  stasis_ib_pingpong_test(ckpt.ib.ud_pingpong ibv_ud_pingpong 200000 -s 64)
  stasis_ib_pingpong_test(ckpt.ib.ud_pingpong_events ibv_ud_pingpong 60000 -s 64 -e)
  if(IBV_TOOL_ibv_rc_pingpong)
    # Checkpointed while the pair talks over softib's Unix sockets, restarted with TCP forced
    # (`restart --setenv SOFTIB_TRANSPORT=tcp`, applied before the plugin opens the device again).
    # Their SOFTIB_TRACE lines name what each socket really is. checkpoint --kill: no connection is
    # made after the checkpoint by the first run.
    stasis_ckpt_test(ckpt.ib.rc_pingpong_restart_over_tcp LABELS "ckpt;ib" TIMEOUT 400
                     ARGS --launch-arg=--ib=soft --wait-regex "pingpong running" --timeout 180 --kill ckpt-kill
                     --restart-arg=--setenv=SOFTIB_TRANSPORT=tcp
                     --after-check "${CMAKE_SOURCE_DIR}/tests/softib/transport_switched.sh {dir} unix tcp"
                     PROGRAM ${CMAKE_SOURCE_DIR}/tests/softib/pingpong_pair.sh ibv_rc_pingpong
                     ${CMAKE_BINARY_DIR}/lib/softib {dir} 200000 -s 64)
    set_tests_properties(ckpt.ib.rc_pingpong_restart_over_tcp PROPERTIES ENVIRONMENT SOFTIB_TRACE=1)
    # Issue 7: restart over another verbs library than the image's (`stasis restart --ib=PATH`),
    # as a host without InfiniBand restarts a hardware image over softib. A copy of softib stands
    # for the other library: the image maps the original file, the restarted tools must load the
    # copy (each logs that it re-created its objects over it, a line in the coordinator's log: the
    # runtime's lines never go to the program's own streams) and finish every iteration.
    set(other_verbs_dir ${CMAKE_BINARY_DIR}/tests/ib-other-verbs)
    set(reloaded_line "InfiniBand: re-creating over ${other_verbs_dir}/libibverbs.so.1 (the image used ${CMAKE_BINARY_DIR}/lib/softib/libibverbs.so.1)")
    stasis_ckpt_test(ckpt.ib.rc_pingpong_restart_over_other_library LABELS "ckpt;ib" TIMEOUT 400
                     ARGS --launch-arg=--ib=soft --wait-regex "pingpong running" --timeout 180 --kill ckpt-kill
                     --before-restart "rm -rf ${other_verbs_dir} && mkdir -p ${other_verbs_dir} && cp ${CMAKE_BINARY_DIR}/lib/softib/libibverbs.so.1 ${other_verbs_dir}/"
                     --restart-arg=--ib=${other_verbs_dir}/libibverbs.so.1
                     --after-check "test $(grep -cF '${reloaded_line}' \"$STASIS_CKPT_DIR\"/coordinator.log) -eq 2"
                     PROGRAM ${CMAKE_SOURCE_DIR}/tests/softib/pingpong_pair.sh ibv_rc_pingpong
                     ${CMAKE_BINARY_DIR}/lib/softib {dir} 200000 -s 64)
    # Issue 7: two million round trips, checkpointed twice mid-run (launch --interval), killed,
    # restarted: both sides end as an uninterrupted run does. 40 s per run at 20 us per round trip,
    # but a busy-polling pair slows down tenfold when other work shares the 2 cores: generous
    # limits, and alone in its ctest run.
    stasis_ckpt_test(ckpt.ib.rc_pingpong_long LABELS "ckpt;ib" TIMEOUT 3000
                     ARGS --launch-arg=--ib=soft --wait-regex "pingpong running" --interval 8 --timeout 1200
                     --step-timeout 300
                     --before-restart "ls \"$STASIS_CKPT_DIR\"/latest/ibv_*-*.stasis | wc -l | grep -qx 2"
                     PROGRAM ${CMAKE_SOURCE_DIR}/tests/softib/pingpong_pair.sh ibv_rc_pingpong
                     ${CMAKE_BINARY_DIR}/lib/softib {dir} 2000000 -s 64)
    set_tests_properties(ckpt.ib.rc_pingpong_long PROPERTIES RUN_SERIAL TRUE)
  else()
    foreach(name restart_over_tcp restart_over_other_library long)
      stasis_skipped_group(ckpt.ib.rc_pingpong_${name} "no ibv_rc_pingpong (Debian: ibverbs-utils)")
    endforeach()
  endif()
else()
  # softib, the InfiniBand plugin and their tests are built only with the verbs headers.
  set(STASIS_NO_VERBS "no infiniband/verbs.h, so no softib and no InfiniBand plugin (Debian: libibverbs-dev)")
  stasis_skipped_group(ckpt.ib "${STASIS_NO_VERBS}")
endif()
