# Pipes' checkpoint-kill-restart cases: bytes in flight saved (tee, not consumed) and put back,
# included by tests/CMakeLists.txt (which defines stasis_test_target, stasis_ckpt_test,
# stasis_plain_test and the tools they use).
stasis_test_target(pipe_inflight ${CMAKE_CURRENT_LIST_DIR}/tests/pipe_inflight.c)
stasis_ckpt_test(ckpt.pipe.inflight ARGS --wait-lines 20 PROGRAM pipe_inflight 80 40)
stasis_ckpt_test(ckpt.pipe.inflight.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 15 PROGRAM pipe_inflight 80 40)
stasis_ckpt_test(ckpt.pipe.one_process ARGS --wait-lines 10 PROGRAM self_echo pipe 40 50)
