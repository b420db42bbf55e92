# Pseudo-terminals' checkpoint-kill-restart cases,
# included by tests/CMakeLists.txt (which defines stasis_test_target, stasis_ckpt_test,
# stasis_plain_test and the tools they use).
stasis_test_target(pty_pair ${CMAKE_CURRENT_LIST_DIR}/tests/pty_pair.c)
# A pty between two processes: answers left unread in the master, termios, window size, the
# child's controlling terminal and foreground group, all across a restart.
stasis_ckpt_test(ckpt.pty.pair ARGS --wait-lines 8 PROGRAM pty_pair 40 100)
stasis_ckpt_test(ckpt.pty.pair.chain2 TIMEOUT 200 ARGS --wait-lines 5 --chain 2 --between-lines 10
                 PROGRAM pty_pair 45 100)
stasis_plain_test(pty_pair PROGRAM pty_pair 30 5)
# A real program in a pty: bash under script(1), whose stdin ends at once (an end-of-file left
# unread in the pty).
stasis_ckpt_test(interp.pty.script LABELS interp ARGS --wait-lines 10
                 PROGRAM /usr/bin/script -qfec "/bin/bash ${SCRIPTS}/loop.sh 60 10000" /dev/null)
# Commands forked in the session after the restart need the controlling terminal back, and cat
# needs that end-of-file.
stasis_ckpt_test(interp.pty.script_session LABELS interp ARGS --wait-lines 10
                 PROGRAM /usr/bin/script -qfec "/bin/bash ${CMAKE_CURRENT_LIST_DIR}/tests/pty_session.sh 40" /dev/null)
# Input the slave's reader has not read cannot be saved without taking it from the program.
stasis_ckpt_test(ckpt.refuse.pty_unread_input ARGS --wait-lines 5
                 --expect-refusal "pseudo-terminal descriptor [0-9]+ .* has 12 bytes of input its reader has not read"
                 PROGRAM pty_pair 30 50 unread)
