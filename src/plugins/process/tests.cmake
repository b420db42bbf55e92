# Process-wide state: signals, itimers, POSIX timers, clocks, process attributes. Included by
# tests/CMakeLists.txt (which defines stasis_test_target, stasis_ckpt_test and stasis_plain_test).
# signals_timer stays in tests/targets: the memory folder's in-place case runs it too.
foreach(t process_attrs posix_timers monotonic_clock itimers)
  stasis_test_target(${t} ${CMAKE_CURRENT_LIST_DIR}/tests/${t}.c)
endforeach()

# ---- signals, timers ---------------------------------------------------------------------------
# itimer armed at step 2 (fires ~step 42), signals pending from step 3 to 30..32.
stasis_ckpt_test(ckpt.signals_timer ARGS --wait-lines 15 PROGRAM signals_timer 60 50)
stasis_ckpt_test(ckpt.signals_timer.file ARGS --mode file --wait-lines 15 PROGRAM signals_timer 60 50)
stasis_ckpt_test(ckpt.signals_timer.chain2 TIMEOUT 200 ARGS --wait-lines 10 --chain 2 --between-lines 36 PROGRAM signals_timer 70 50)

# umask, rlimits, nice, cwd, process and thread names, /proc/self/{exe,comm,cmdline}, prctl flags
stasis_ckpt_test(ckpt.process_attrs ARGS --wait-lines 10 --restart-cwd other PROGRAM process_attrs {dir} 40 50)

# ---- timers and clocks -------------------------------------------------------------------------
# A POSIX timer (CLOCK_MONOTONIC, SIGRTMIN+1) armed at step 5 for 1.5 s, waited for at step 50.
stasis_ckpt_test(ckpt.posix_timer.signals_timer ARGS --wait-lines 15 PROGRAM signals_timer 60 50 1)
# Timers with ids, signal / thread / no notification, periodic ones still firing after restart.
stasis_ckpt_test(ckpt.posix_timer.kinds ARGS --wait-lines 15 PROGRAM posix_timers 60 50)
stasis_ckpt_test(ckpt.posix_timer.kinds.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 10 PROGRAM posix_timers 70 50)
stasis_ckpt_test(ckpt.refuse.posix_timer_sigev_thread ARGS --wait-lines 10 --expect-refusal "SIGEV_THREAD"
                 PROGRAM posix_timers 40 50 1)
# alarm() and ITIMER_VIRTUAL keep their remaining time (checkpoint at ~2 s of 6 s, 0.8 s of 1 s CPU).
stasis_ckpt_test(ckpt.itimers ARGS --wait-lines 40 PROGRAM itimers 140 50)
# Clocks never go backwards: on the same boot, and (test hook) with the clocks at restart an hour
# behind the checkpoint's, twice in a row.
stasis_ckpt_test(ckpt.monotonic_clock ARGS --wait-lines 15 PROGRAM monotonic_clock 60 50)
# The runtime must say it applies an offset (without one the program would see no difference).
set(CLOCK_OFFSET_APPLIED --restart-stderr "clocks run [0-9]+ ns \\(monotonic\\) and [0-9]+ ns \\(boot time\\) ahead")
stasis_ckpt_test(ckpt.monotonic_clock.behind ARGS --wait-lines 15 ${CLOCK_OFFSET_APPLIED}
                 PROGRAM monotonic_clock 60 50)
stasis_ckpt_test(ckpt.monotonic_clock.behind.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 10
                 ${CLOCK_OFFSET_APPLIED} PROGRAM monotonic_clock 70 50)
set_tests_properties(ckpt.monotonic_clock.behind ckpt.monotonic_clock.behind.chain2 PROPERTIES
                     ENVIRONMENT STASIS_TEST_CLOCK_SHIFT_NS=3600000000000)
stasis_plain_test(posix_timers PROGRAM posix_timers 30 20)
stasis_plain_test(monotonic_clock PROGRAM monotonic_clock 20 20)
stasis_plain_test(itimers PROGRAM itimers 140 50)
