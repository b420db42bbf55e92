# The threads tests, registered by tests/CMakeLists.txt (see "each kind of state's own tests"
# there for the functions); their target programs are in tests/targets, fpu_state's in tests/ here.
# ---- threads ---------------------------------------------------------------------------------
stasis_ckpt_test(ckpt.threads_condvar ARGS --wait-lines 20 PROGRAM threads_condvar 12 30 8)
stasis_ckpt_test(ckpt.threads_condvar.file ARGS --mode file --wait-lines 30 PROGRAM threads_condvar 12 30 8)
stasis_ckpt_test(ckpt.threads_condvar.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 16 PROGRAM threads_condvar 14 30 8)
stasis_ckpt_test(ckpt.threads_condvar.64 ARGS --wait-lines 60 PROGRAM threads_condvar 3 10 64)
stasis_ckpt_test(ckpt.thread_churn ARGS --wait-lines 15 PROGRAM thread_churn 60 30 4)
stasis_ckpt_test(ckpt.thread_churn.chain3 TIMEOUT 200 ARGS --wait-lines 10 --chain 3 --between-lines 10 PROGRAM thread_churn 70 30 4)
stasis_ckpt_test(ckpt.blocked_threads ARGS --wait-lines 15 --stdin-after "waiting for input"
                 PROGRAM blocked_threads 60 50 30 100)
stasis_ckpt_test(ckpt.blocked_threads.file ARGS --mode file --wait-lines 15 --stdin-after "waiting for input"
                 PROGRAM blocked_threads 60 50 30 100)
stasis_ckpt_test(ckpt.blocked_threads.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 10 --stdin-after "waiting for input"
                 PROGRAM blocked_threads 60 50 30 100)
stasis_ckpt_test(ckpt.tls_rseq ARGS --wait-lines 15 PROGRAM tls_rseq 50 50 4)
stasis_ckpt_test(ckpt.tls_rseq.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 10 PROGRAM tls_rseq 60 50 4)

# ---- registers: x87/SSE/AVX state of every thread ----------------------------------------------
stasis_test_target(fpu_state ${CMAKE_CURRENT_LIST_DIR}/tests/fpu_state.c)
target_link_libraries(fpu_state PRIVATE m)
stasis_ckpt_test(ckpt.fpu_state ARGS --wait-lines 8 PROGRAM fpu_state 40 10000000 20)
stasis_ckpt_test(ckpt.fpu_state.chain3 TIMEOUT 200 ARGS --wait-lines 5 --chain 3 --between-lines 6 PROGRAM fpu_state 40 10000000 20)
