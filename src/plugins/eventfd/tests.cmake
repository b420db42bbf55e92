# eventfd's checkpoint-kill-restart cases (counters and modes), included by tests/CMakeLists.txt.
stasis_test_target(eventfd_ops ${CMAKE_CURRENT_LIST_DIR}/tests/eventfd_ops.c)
stasis_ckpt_test(ckpt.eventfd ARGS --wait-lines 15 PROGRAM eventfd_ops 60 50)
stasis_plain_test(eventfd_ops PROGRAM eventfd_ops 30 5)
