# The saved_files tests, registered by tests/CMakeLists.txt (see "each kind of state's own tests"
# there for the functions); their target programs are in tests/targets.
# ---- saved files: contents in the image (deleted while open, memfd, launch --save-files) -------
stasis_ckpt_test(ckpt.saved_file.deleted ARGS --wait-lines 15 PROGRAM deleted_file {dir} 60 50)
stasis_ckpt_test(ckpt.saved_file.deleted.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 10
                 PROGRAM deleted_file {dir} 70 50)
stasis_ckpt_test(ckpt.saved_file.memfd ARGS --wait-lines 15 PROGRAM memfd_file 60 50)
stasis_ckpt_test(ckpt.saved_file.memfd.chain2 TIMEOUT 200 ARGS --chain 2 --between-lines 10
                 PROGRAM memfd_file 70 50)
stasis_ckpt_test(ckpt.saved_file.memfd.compress_none ARGS --compress none --wait-lines 15 PROGRAM memfd_file 60 50)
# The input is deleted (then changed) after the kill: restart puts the saved contents back and
# says so; notes.txt, rewritten by the killed run after the checkpoint, comes back as it was.
stasis_ckpt_test(ckpt.saved_file.named.deleted ARGS --wait-lines 15 --before-restart "rm {dir}/input.txt"
                 --restart-stderr "input.txt \\(descriptor [0-9]+\\) was missing.*recreated it"
                 --compare-file notes.txt --compare-file progress.txt PROGRAM saved_files {dir} 60 50)
stasis_ckpt_test(ckpt.saved_file.named.changed ARGS --wait-lines 15 --before-restart "echo changed > {dir}/input.txt"
                 --restart-stderr "input.txt \\(descriptor [0-9]+\\) differed from the checkpoint.*recreated it"
                 --compare-file notes.txt --compare-file progress.txt PROGRAM saved_files {dir} 60 50)
set_tests_properties(ckpt.saved_file.named.deleted ckpt.saved_file.named.changed PROPERTIES
                     ENVIRONMENT "STASIS_SAVE_FILES=*.txt")
# Not saved: a file changed between the checkpoint and the restart is reported.
stasis_ckpt_test(ckpt.changed_file.warning ARGS --wait-lines 15 --before-restart "echo tampered >> {dir}/input.dat"
                 --restart-stderr "warning: .*input.dat \\(descriptor [0-9]+\\) changed since the checkpoint"
                 --append-file append.log PROGRAM file_output {dir} 60 50)
# Temporary files open write-only (a compiler's assembly in /tmp, a deleted scratch file): their
# bytes go with the checkpoint. Removed after the kill, as the killed run going on would have:
# restart makes asm.s again; kept, the lines the killed run added after the checkpoint are cut.
stasis_ckpt_test(ckpt.temp_output.removed ARGS --wait-lines 15 --before-restart "rm {dir}/asm.s"
                 PROGRAM temp_output {dir} 50 50)
stasis_ckpt_test(ckpt.temp_output.kept ARGS --wait-lines 15 PROGRAM temp_output {dir} 50 50)
stasis_plain_test(temp_output PROGRAM temp_output {dir} 40 5)
stasis_plain_test(deleted_file PROGRAM deleted_file {dir} 40 5)
stasis_plain_test(memfd_file PROGRAM memfd_file 40 5)
stasis_plain_test(saved_files ARGS --compare-file notes.txt PROGRAM saved_files {dir} 40 5)
