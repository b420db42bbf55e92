# Real programs whose processes join through the host relay (`launch --relay` starts it before
# the program), many while a checkpoint is under way. The after-check proves they did (the coordinator logs a
# relayed process as "from ADDR:PORT (relay)"), so a relay that silently fell back to direct
# connections fails these tests.
set(RELAY_USED "grep -q ' (relay)' {dir}/../stasis-ckpt/coordinator.log")
# bash: pipelines, command substitution, a background job; every command a new process
stasis_ckpt_test(ckpt.relay.bash.pipeline.chain2 TIMEOUT 200 LABELS interp
                 ARGS --launch-arg=--relay --chain 2 --between-lines 8 --after-check "${RELAY_USED}"
                 PROGRAM ${SCRIPTS}/pipeline.sh)
# python3 subprocess children, started before and after each restart (after one, the restarted
# processes and their new children join the new coordinator directly: only a launched process
# starts a relay)
stasis_ckpt_test(ckpt.relay.python3.subprocess.chain2 TIMEOUT 200 LABELS interp
                 ARGS --launch-arg=--relay --chain 2 --between-lines 4 --wait-lines 5
                      --after-check "${RELAY_USED}"
                 PROGRAM /usr/bin/python3 ${SCRIPTS}/subprocess_loop.py 20)
# a tree of forked processes, every one joined through the relay `launch --relay` started
stasis_ckpt_test(ckpt.relay.tree.fork.chain2 TIMEOUT 200
                 ARGS --launch-arg=--relay --chain 2 --between-lines 10 --after-check "${RELAY_USED}"
                 PROGRAM fork_tree 70 50)
