# Virtual machines and what a VM monitor needs of a checkpointer (docs/vms.md), registered by
# tests/CMakeLists.txt. QEMU cases skip (77) with the reason when QEMU or a guest kernel is absent.

# Nothing of Stasis's on the program's own stdout/stderr (for QEMU: the guest's serial console).
stasis_test_target(signal_flood ${CMAKE_CURRENT_LIST_DIR}/signal_flood.c)
add_test(NAME vm.quiet_streams
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/quiet_streams.py
                 ${STASIS_BIN} "signals are queued; the rest are not saved" $<TARGET_FILE:signal_flood> 60 50)
set_tests_properties(vm.quiet_streams PROPERTIES TIMEOUT 120 LABELS vm SKIP_RETURN_CODE 77)

# A small Linux guest under QEMU's TCG, launched as an ordinary program (tcg_guest.sh): checkpoint
# while it works, kill, restart; it goes on where it was (no second boot, the same progress lines
# and final hash as an uninterrupted run, status 0 at power-off). ~45 s each here (two boots).
set(STASIS_VM_CACHE ${CMAKE_CURRENT_BINARY_DIR}/vm-guest)
function(stasis_tcg_guest_test variant)
  add_test(NAME vm.tcg.${variant}
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/tcg_guest_test.sh ${STASIS_BIN} ${STASIS_VM_CACHE}
                   ${ARGN})
  set_tests_properties(vm.tcg.${variant} PROPERTIES TIMEOUT 400 LABELS vm SKIP_RETURN_CODE 77
                       RESOURCE_LOCK stasis_vm_cache)
endfunction()
# The console on QEMU's stdout, a pipe; killed with SIGKILL after a (forked) checkpoint.
stasis_tcg_guest_test(stdio stdio 30 200000 --wait-lines 5 --timeout 150)
# The console on a terminal (as in an interactive shell); `checkpoint --kill`.
stasis_tcg_guest_test(tty stdio 30 200000 --mode tty --kill ckpt-kill --wait-lines 5 --timeout 150)
# The console to a file (-serial file:), progress also on a second port on stdout.
stasis_tcg_guest_test(file file 30 200000 --wait-lines 5 --timeout 150 --compare-file console.txt)
# The console on a pty QEMU makes (-serial pty), read by a cat of the computation into console.txt:
# QEMU's pty master and cat's slave come back as one new pty (progress also on stdout).
stasis_tcg_guest_test(pty pty 30 200000 --wait-lines 5 --timeout 150 --compare-file console.txt)
# A virtio disk the guest writes (a qcow2 overlay): what the guest reads back, and the disk
# QEMU leaves, equal an uninterrupted run's.
stasis_tcg_guest_test(disk disk 30 100000 --wait-lines 8 --timeout 150
                      --after-check "qemu-img compare -q {dir}/disk.qcow2 {dir}/../ref/disk.qcow2")
# User-mode networking (-nic user): every step fetches a file from QEMU's own TFTP server.
stasis_tcg_guest_test(net net 30 100000 --wait-lines 8 --timeout 150)

# ---- the computation's monotonic clocks across a restart (docs/vms.md, Time) ---------------------
# `stasis restart --clock=continue` 3 s after the checkpoint: the clocks resume from their
# checkpoint values (no gap between two steps) and absolute waits keep their meaning.
stasis_test_target(clock_continue ${CMAKE_CURRENT_LIST_DIR}/clock_continue.c)
stasis_ckpt_test(vm.clock_continue ARGS --wait-lines 10 --before-restart "sleep 3"
                 --restart-arg=--clock=continue PROGRAM clock_continue 40 100)
# Restarted twice, with a checkpoint of the restarted program in between: offsets add up.
stasis_ckpt_test(vm.clock_continue.chain2 TIMEOUT 200 ARGS --wait-lines 10 --chain 2 --between-lines 8
                 --before-restart "sleep 3" --restart-arg=--clock=continue PROGRAM clock_continue 50 100)
stasis_plain_test(clock_continue PROGRAM clock_continue 20 50)
# A guest restarted 12 s after its checkpoint with --clock=continue sees no jump of its clock
# (it prints one when /proc/uptime advances more than 5 s in a step; with the default it says
# "the clock jumped 13 s"). Gaps above 21 s go unseen by this guest's HPET clocksource (its
# 32-bit counter reads them as negative), so 12 s it is.
stasis_tcg_guest_test(clock_continue clock 40 200000 --wait-lines 5 --timeout 150
                      --before-restart "sleep 12" --restart-arg=--clock=continue)
