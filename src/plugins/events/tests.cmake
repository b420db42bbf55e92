# The event descriptors' checkpoint-kill-restart cases, included by tests/CMakeLists.txt (which
# defines stasis_test_target, stasis_ckpt_test and stasis_plain_test).
# epoll interest lists (ET, one-shot fired and re-armed, exclusive, nested epoll); signalfd masks
# with signals pending across the checkpoint; timerfd remaining time, intervals, absolute deadlines
# and unread expirations; inotify watches with their numbers.
foreach(t epoll_ops signalfd_ops timerfd_ops inotify_ops)
  stasis_test_target(${t} ${CMAKE_CURRENT_LIST_DIR}/tests/${t}.c)
endforeach()
target_include_directories(inotify_ops PRIVATE ${PROJECT_SOURCE_DIR}/include)  # stasis_delay_checkpoints
stasis_ckpt_test(ckpt.epoll ARGS --wait-lines 15 PROGRAM epoll_ops 60 50)
stasis_ckpt_test(ckpt.epoll.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 12 PROGRAM epoll_ops 70 50)
stasis_ckpt_test(ckpt.refuse.epoll_stale ARGS --wait-lines 5 --expect-refusal "epoll descriptor [0-9]+ .*closed or reused"
                 PROGRAM epoll_ops 40 50 stale)
stasis_ckpt_test(ckpt.signalfd ARGS --wait-lines 15 PROGRAM signalfd_ops 60 50)
stasis_ckpt_test(ckpt.timerfd ARGS --wait-lines 15 PROGRAM timerfd_ops 70 30)
stasis_ckpt_test(ckpt.timerfd.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 10 PROGRAM timerfd_ops 80 30)
stasis_ckpt_test(ckpt.inotify ARGS --wait-lines 15 PROGRAM inotify_ops {dir} 60 50)
stasis_ckpt_test(ckpt.inotify.other_cwd ARGS --wait-lines 15 --restart-cwd other PROGRAM inotify_ops {dir} 60 50)
stasis_ckpt_test(ckpt.refuse.inotify_unread ARGS --wait-lines 5 --expect-refusal "inotify descriptor [0-9]+ has [0-9]+ bytes of events"
                 PROGRAM inotify_ops {dir} 40 50 unread)
stasis_ckpt_test(ckpt.refuse.inotify_moved ARGS --wait-lines 5 --expect-refusal "inotify descriptor [0-9]+: watch 4 .*no longer names"
                 PROGRAM inotify_ops {dir} 40 50 moved)
stasis_plain_test(epoll_ops PROGRAM epoll_ops 30 5)
stasis_plain_test(signalfd_ops PROGRAM signalfd_ops 30 5)
stasis_plain_test(timerfd_ops PROGRAM timerfd_ops 60 20)
stasis_plain_test(inotify_ops PROGRAM inotify_ops {dir} 45 5)
