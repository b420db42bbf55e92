# Files' own cases, included by tests/CMakeLists.txt (which defines the functions and tools they
# use). The checkpoint-kill-restart cases of plain output files are in tests/CMakeLists.txt
# (ckpt.file_output.*).
#
# Output files shared with a process outside the computation (README.md, Output files): a job
# script writes to the log its program writes to, through the program's description
# (`./job.sh > log 2>&1`, `>> log`) or through one of its own; checkpoint, kill and restart twice
# (restart_elsewhere: `stasis restart` writes elsewhere, the program appends to the log).
foreach(mode truncate append own_description restart_elsewhere)
  add_test(NAME files.outside_writer.${mode}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/outside_writer.sh ${STASIS_BIN} $<TARGET_FILE:counter> ${mode})
  set_tests_properties(files.outside_writer.${mode} PROPERTIES TIMEOUT 150 LABELS ckpt)
endforeach()
# The README's demo, its output redirected to a file.
add_test(NAME files.demo_to_file COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/demo_to_file.sh ${CMAKE_BINARY_DIR})
set_tests_properties(files.demo_to_file PROPERTIES TIMEOUT 150 LABELS ckpt)
# The program writes `> out` while its job holds `out` open for writing: restart refuses, leaves
# the file as it is, and names the size to cut it to; cut so, the restart gives the exact output.
add_test(NAME files.outside_writer.refused
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/outside_writer_refused.sh ${STASIS_BIN} $<TARGET_FILE:counter>)
set_tests_properties(files.outside_writer.refused PROPERTIES TIMEOUT 150 LABELS ckpt)
# A log the job holds open for writing, inherited by the program, deleted before the checkpoint:
# the job's stream (restart connects its own, or /dev/null), never refused as a deleted file.
add_test(NAME files.outside_writer.deleted
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/outside_deleted.sh ${STASIS_BIN} $<TARGET_FILE:counter>)
set_tests_properties(files.outside_writer.deleted PROPERTIES TIMEOUT 150 LABELS ckpt)

# ---- files -----------------------------------------------------------------------------------
set(FILE_OUTPUT_EXACT --compare-file records.out --compare-file stream.out --compare-file random.bin
    --compare-file input.dat)
stasis_ckpt_test(ckpt.file_output ARGS --wait-lines 15 ${FILE_OUTPUT_EXACT} --append-file append.log
                 PROGRAM file_output {dir} 60 50)
stasis_ckpt_test(ckpt.file_output.ckpt_kill ARGS --mode file --kill ckpt-kill --wait-lines 15
                 ${FILE_OUTPUT_EXACT} --compare-file append.log PROGRAM file_output {dir} 60 50)
stasis_ckpt_test(ckpt.file_output.other_cwd ARGS --restart-cwd other --wait-lines 15 ${FILE_OUTPUT_EXACT}
                 --append-file append.log PROGRAM file_output {dir} 60 50)
stasis_ckpt_test(ckpt.file_output.chain2 TIMEOUT 200 ARGS --mode file --kill ckpt-kill --chain 2 --between-lines 12
                 ${FILE_OUTPUT_EXACT} --compare-file append.log PROGRAM file_output {dir} 60 50)
