# The memory tests, registered by tests/CMakeLists.txt (see "each kind of state's own tests"
# there for the functions); their target programs are in tests/targets.
# ---- memory ----------------------------------------------------------------------------------
# mmap_ops grows B at step 10, moves it at 20, shrinks it at 35: check before, between and after.
stasis_ckpt_test(ckpt.mmap_ops ARGS --wait-lines 25 PROGRAM mmap_ops {dir} 60 50)
stasis_ckpt_test(ckpt.mmap_ops.chain3 TIMEOUT 200 ARGS --wait-lines 5 --chain 3 --between-lines 10 PROGRAM mmap_ops {dir} 60 50)
# 8 GiB mapping with 128 pages written: the image must not hold the holes
stasis_ckpt_test(ckpt.sparse_memory ARGS --wait-lines 10 --max-image-mb 64 PROGRAM sparse_memory 8 40 50)
stasis_ckpt_test(ckpt.big_memory ARGS --wait-lines 5 PROGRAM big_memory 64 20 100 5)
stasis_ckpt_test(ckpt.big_memory.256.none TIMEOUT 200 ARGS --wait-lines 4 --compress none PROGRAM big_memory 256 16 150 4)
stasis_ckpt_test(ckpt.big_memory.256.zstd TIMEOUT 200 ARGS --wait-lines 4 --compress zstd PROGRAM big_memory 256 16 150 4)
stasis_ckpt_test(ckpt.big_memory.256.lz4 TIMEOUT 200 ARGS --wait-lines 4 --compress lz4 PROGRAM big_memory 256 16 150 4)
# zero pages, patterns, doubles and noise: what compression and zero-page skipping are for
stasis_ckpt_test(ckpt.mixed_memory.zstd ARGS --wait-lines 3 --max-image-mb 70 PROGRAM mixed_memory 128 12 100)
stasis_ckpt_test(ckpt.mixed_memory.none ARGS --wait-lines 3 --compress none --max-image-mb 100 PROGRAM mixed_memory 128 12 100)
# The acceptance case: 1 GiB of memory (zstd; random data is stored as is, chunk by chunk).
stasis_ckpt_test(ckpt.big_memory.1gib TIMEOUT 300 ARGS --wait-lines 3 PROGRAM big_memory 1024 8 150 4)

# Memory a forked child would not see (MADV_WIPEONFORK, MADV_DONTFORK) comes back as it was ...
stasis_ckpt_test(ckpt.wipe_on_fork ARGS --wait-lines 10 PROGRAM wipe_on_fork 40 50)
# ... and keeps its marks through restarts (image format 5): the restarted program's own children
# see zeros where MADV_WIPEONFORK, nothing where MADV_DONTFORK, and smaps shows every mark (the
# DONTDUMP one too). Uncompressed, the restart would map those pages from the image file, where
# the kernel refuses MADV_WIPEONFORK: they are copied instead. In place as well.
stasis_ckpt_test(ckpt.wipe_on_fork.children ARGS --wait-lines 10 --chain 2 --between-lines 12
                 PROGRAM wipe_on_fork 40 50 children)
# Three live checkpoints of one run: the second and third find the fork marks without reading
# smaps in the pause (fork_exclusions.h); restarted from the third, the marks and contents hold.
stasis_ckpt_test(ckpt.wipe_on_fork.children.three ARGS --wait-lines 10 --checkpoints 3 --between-lines 6
                 PROGRAM wipe_on_fork 60 50 children)
stasis_ckpt_test(ckpt.wipe_on_fork.children.none ARGS --wait-lines 10 --compress none
                 PROGRAM wipe_on_fork 30 50 children)
stasis_ckpt_test(ckpt.inplace.wipe_on_fork.children ARGS --wait-lines 10 PROGRAM wipe_on_fork 30 50 children)
set_tests_properties(ckpt.inplace.wipe_on_fork.children PROPERTIES ENVIRONMENT STASIS_FORKED_CHECKPOINT=0)

# Images written in place (STASIS_FORKED_CHECKPOINT=0) rather than by a forked writer.
stasis_ckpt_test(ckpt.inplace.threads_condvar ARGS --wait-lines 20 PROGRAM threads_condvar 12 30 8)
stasis_ckpt_test(ckpt.inplace.big_memory TIMEOUT 200 ARGS --wait-lines 4 --checkpoints 2 --between-lines 2
                 PROGRAM big_memory 256 16 150 4)
stasis_ckpt_test(ckpt.inplace.signals_timer ARGS --wait-lines 15 PROGRAM signals_timer 60 50)
set_tests_properties(ckpt.inplace.threads_condvar ckpt.inplace.big_memory ckpt.inplace.signals_timer
                     PROPERTIES ENVIRONMENT STASIS_FORKED_CHECKPOINT=0)

# ---- incremental checkpoints (src/plugins/memory/README.md, Incremental checkpoints) ----------------
stasis_ckpt_test(ckpt.incremental.chain ARGS --checkpoints 4 --between-lines 3 --wait-lines 3
                 PROGRAM incremental_memory 64 30 100 3 10)
stasis_ckpt_test(ckpt.incremental.after_restart ARGS --checkpoints 3 --between-lines 3 --wait-lines 3
                 --chain 2 PROGRAM incremental_memory 32 40 100 3 8)
set_tests_properties(ckpt.incremental.chain ckpt.incremental.after_restart PROPERTIES
                     ENVIRONMENT "STASIS_INCREMENTAL=1;STASIS_FULL_EVERY=3")
add_test(NAME restart.incremental
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/incremental_checks.py
                 ${STASIS_BIN} $<TARGET_FILE:incremental_memory>)
set_tests_properties(restart.incremental PROPERTIES TIMEOUT 240 LABELS restart)
# Live checkpoints, --kill and restarts, full images and increments in one long chain: every
# checkpoint reported complete names images that are there (MANIFEST.json once named an earlier one).
add_test(NAME restart.checkpoint_chains
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint_chains.py
                 ${STASIS_BIN} $<TARGET_FILE:incremental_memory>)
set_tests_properties(restart.checkpoint_chains PROPERTIES TIMEOUT 240 LABELS restart)
# --keep removes generations a coordinator killed mid-checkpoint left, never one being written.
add_test(NAME restart.keep_incomplete
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/keep_incomplete.py
                 ${STASIS_BIN} $<TARGET_FILE:counter>)
set_tests_properties(restart.keep_incomplete PROPERTIES TIMEOUT 120 LABELS restart)
# POSIX record, flock and OFD locks are taken back by the restarted process (a child checks).
stasis_ckpt_test(ckpt.file_locks ARGS --wait-lines 5 PROGRAM file_locks {dir} 40 50)
stasis_ckpt_test(ckpt.file_locks.late ARGS --wait-lines 25 PROGRAM file_locks {dir} 40 50)
stasis_ckpt_test(ckpt.file_locks.chain2 TIMEOUT 200 ARGS --wait-lines 5 --chain 2 --between-lines 15
                 PROGRAM file_locks {dir} 45 50)
stasis_plain_test(file_locks PROGRAM file_locks {dir} 20 10)
stasis_ckpt_test(ckpt.file_locks.lease_refused ARGS --wait-lines 5 --expect-refusal "holds a lock or lease of a kind"
                 PROGRAM file_locks {dir} 30 50 lease)

# Real programs: make -j2 building a small C project (checkpointed mid-build), sqlite3 running a
# loop of transactions fed through a pipe (checkpointed mid-transaction, holding its locks).
stasis_ckpt_test(interp.make.j2 TIMEOUT 200 LABELS interp ARGS --wait-regex "step first object built"
                 PROGRAM ${SCRIPTS}/make_build.sh {dir} 16 0.4)
find_program(STASIS_TEST_SQLITE3 sqlite3)
if(STASIS_TEST_SQLITE3)
  stasis_ckpt_test(interp.sqlite3 TIMEOUT 200 LABELS interp ARGS --wait-lines 8
                   PROGRAM ${SCRIPTS}/sqlite_transactions.sh {dir} 30 0.2)
  stasis_ckpt_test(interp.sqlite3.chain2 TIMEOUT 200 LABELS interp ARGS --wait-lines 6 --chain 2 --between-lines 8
                   PROGRAM ${SCRIPTS}/sqlite_transactions.sh {dir} 36 0.2)
else()
  stasis_skipped_group(interp.sqlite3 "no sqlite3 (Debian: sqlite3)")
endif()
# ... and it is a forked writer that writes them, the program's marks kept (fork_exclusions.cc).
add_test(NAME memory.fork_marks
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/tests/fork_marks.py ${STASIS_BIN}
                 $<TARGET_FILE:wipe_on_fork>)
set_tests_properties(memory.fork_marks PROPERTIES TIMEOUT 60 LABELS ckpt)
# A fork mark set through syscall(), which the pause's kept marks miss: that checkpoint fails
# naming it, the next one reads smaps again and restarts to the uninterrupted output.
add_test(NAME memory.fork_marks.unseen
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/tests/unseen_marks.py ${STASIS_BIN}
                 $<TARGET_FILE:wipe_on_fork>)
set_tests_properties(memory.fork_marks.unseen PROPERTIES TIMEOUT 120 LABELS ckpt)

# ---- shared temporary files: saved without their holes (named_shm.cc) -------------------------
add_executable(sparse_shm ${CMAKE_CURRENT_LIST_DIR}/tests/sparse_shm.c)
set_target_properties(sparse_shm PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/targets)
# A 64 MiB file in /dev/shm with 16 pages written, uncompressed: the image holds the 16 pages, and
# the restarted program finds them at their offsets and zeros between them.
stasis_ckpt_test(ckpt.sparse_shm ARGS --wait-lines 10 --compress none --max-image-mb 8 PROGRAM sparse_shm 40 50 64)
# 16 files of 16 MiB, each with 400 pages 40 KiB apart (as an Open MPI vader segment has a page
# every 32 KiB): 6,400 extents, more than the 4,096 saved contents an image's list starts with,
# each kept apart (joined across 64 KiB, they were 16 files of 16 MiB, over 200 MiB).
stasis_ckpt_test(ckpt.sparse_shm.many_extents ARGS --wait-lines 10 --compress none --max-image-mb 40
                 PROGRAM sparse_shm 40 50 16 16 400)

# ---- memory a plugin leaves out (left_out_memory.h; the split MPI mode's lower half) ------------
add_executable(left_out_memory ${CMAKE_CURRENT_LIST_DIR}/tests/left_out_memory.c)
target_include_directories(left_out_memory PRIVATE ${PROJECT_SOURCE_DIR}/include)
set_target_properties(left_out_memory PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/targets)
# The middle of one mapping is left out: the restarted process has only the two parts around it.
stasis_ckpt_test(ckpt.left_out_memory ARGS --wait-lines 5 PROGRAM left_out_memory 30 50)
stasis_ckpt_test(ckpt.left_out_memory.chain2 TIMEOUT 200 ARGS --wait-lines 5 --chain 2 --between-lines 5
                 PROGRAM left_out_memory 40 50)
