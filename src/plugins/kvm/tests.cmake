# The KVM tests, registered by tests/CMakeLists.txt (README.md here says what they prove).
add_test(NAME kvm.refused_at_once
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/tests/kvm_refused.py ${STASIS_BIN})
set_tests_properties(kvm.refused_at_once PROPERTIES TIMEOUT 120 LABELS vm SKIP_RETURN_CODE 77)

# A VM of the test's own monitor (tests/kvm_counter.c) checkpointed, killed and restarted by the
# driver (or, with --plain, run twice without Stasis); skipped (77) without a /dev/kvm this user
# can open.
stasis_test_target(kvm_counter ${CMAKE_CURRENT_LIST_DIR}/tests/kvm_counter.c)
function(stasis_kvm_test name)
  cmake_parse_arguments(T "" "LABELS" "ARGS;PROGRAM" ${ARGN})
  if(NOT T_LABELS)
    set(T_LABELS "ckpt;vm")
  endif()
  set(under_stasis --stasis ${STASIS_BIN})
  if("--plain" IN_LIST T_ARGS)
    set(under_stasis "")
  endif()
  add_test(NAME ${name}
           COMMAND sh -c "[ -r /dev/kvm ] && [ -w /dev/kvm ] || { echo 'SKIP: no /dev/kvm this user can open'; exit 77; }; exec \"$@\""
                   sh ${STASIS_TEST_PYTHON} ${DRIVER} ${under_stasis} --name ${name} ${T_ARGS}
                   -- $<TARGET_FILE:kvm_counter> ${T_PROGRAM})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 LABELS "${T_LABELS}" SKIP_RETURN_CODE 77)
endfunction()
# The driver's waits for the cases added with the QEMU increment: generous (a loaded machine
# slows a VM's steps, not their order).
set(KVM_PATIENT --step-timeout 90 --timeout 120)
# The monitor without Stasis, twice: its output is the same (what the other cases compare with).
stasis_kvm_test(determinism.kvm_counter ARGS --plain LABELS selfcheck PROGRAM 100 0)
stasis_kvm_test(kvm.counter ARGS --wait-lines 40 PROGRAM 400 20)
stasis_kvm_test(kvm.counter.chain2 ARGS --wait-lines 40 --chain 2 --between-lines 40 PROGRAM 400 20)
stasis_kvm_test(kvm.counter.ckpt_kill ARGS --wait-lines 40 --kill ckpt-kill PROGRAM 400 20)
# In-kernel irqchip, the LAPIC timer periodic: each step waits for a tick (no pacing by the monitor).
stasis_kvm_test(kvm.timer ARGS --wait-lines 40 PROGRAM 300 0 timer)
stasis_kvm_test(kvm.timer.chain2 ARGS --wait-lines 40 --chain 2 --between-lines 40 PROGRAM 300 0 timer)
# The in-kernel PIT through the PIC (its state, and the PIC's, saved and set again).
stasis_kvm_test(kvm.pit ARGS --wait-lines 40 PROGRAM 300 0 pit)
stasis_kvm_test(kvm.pit.chain2 ARGS --wait-lines 40 --chain 2 --between-lines 40 PROGRAM 300 0 pit)
# Two vCPUs, each in its own thread: both stopped, saved and rebuilt; vCPU 1's final hash printed.
stasis_kvm_test(kvm.two_vcpus ARGS --wait-lines 40 PROGRAM 300 20 2vcpus)
stasis_kvm_test(kvm.two_vcpus.chain2 ARGS --wait-lines 40 --chain 2 --between-lines 40 PROGRAM 300 20 2vcpus)
# Interrupts through an irqfd and an MSI route, a doorbell ioeventfd, coalesced PIO, a KVM_RUN
# signal mask and an enabled capability: all made again at restart.
stasis_kvm_test(kvm.irqfd ARGS --wait-lines 40 ${KVM_PATIENT} PROGRAM 300 0 irqfd)
stasis_kvm_test(kvm.irqfd.chain2 ARGS --wait-lines 40 ${KVM_PATIENT} --chain 2 --between-lines 40 PROGRAM 300 0 irqfd)
# Checkpointed mostly while the monitor answers a port read: the restart runs the new vCPU into the
# same read, which the monitor's answer completes (no read lost or made twice).
stasis_kvm_test(kvm.reads ARGS --wait-lines 40 ${KVM_PATIENT} PROGRAM 150 20 reads)
# What the kind does not restore is refused at checkpoint, naming it; the VM runs on to the end.
stasis_kvm_test(kvm.refused_guest_debug ARGS --wait-lines 20 --expect-refusal "KVM_SET_GUEST_DEBUG" PROGRAM 200 0 refused)

# A guest image of the suite's own, assembled to a flat binary that runs from its first byte.
function(stasis_flat_guest name mode origin)
  add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${name}.bin
                     COMMAND ${CMAKE_C_COMPILER} ${mode} -nostdlib -static -Wl,-Ttext=${origin} -Wl,-e,${origin}
                             -Wl,--oformat=binary -Wl,--build-id=none -o ${CMAKE_CURRENT_BINARY_DIR}/${name}.bin
                             ${CMAKE_CURRENT_LIST_DIR}/tests/${name}.S
                     DEPENDS ${CMAKE_CURRENT_LIST_DIR}/tests/${name}.S
                     COMMENT "the KVM tests' guest ${name}")
  add_custom_target(kvm_${name} ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/${name}.bin)
endfunction()
stasis_flat_guest(qemu_guest -m32 0)

# A guest in 64-bit long mode (tests/long_guest.S: 4-level page tables, GDT with ring-3 segments,
# TSS, IDT, user mode and back through an exception, SYSEXIT, its LAPIC timer, MSRs it checks at
# each system call, a counter in xmm0), on one vCPU and on two; checkpointed, killed, restarted,
# and checkpointed and killed again.
stasis_flat_guest(long_guest -m64 0x1000)
set(LONG_GUEST ${CMAKE_CURRENT_BINARY_DIR}/long_guest.bin)
stasis_kvm_test(determinism.kvm_long ARGS --plain LABELS selfcheck PROGRAM 100 0 long ${LONG_GUEST})
stasis_kvm_test(kvm.long.chain2 ARGS --wait-lines 40 ${KVM_PATIENT} --chain 2 --between-lines 40 PROGRAM 300 0 long ${LONG_GUEST})
stasis_kvm_test(kvm.long.smp2.chain2 ARGS --wait-lines 40 ${KVM_PATIENT} --chain 2 --between-lines 40 --kill ckpt-kill
                PROGRAM 300 0 long2 ${LONG_GUEST})

# QEMU with -accel kvm running a firmware of the suite's own (tests/qemu_guest.S, built here:
# real mode, in-kernel PIC and PIT, "step N hash H" on the serial port): QEMU builds its VM with
# KVM_ENABLE_CAP, KVM_SET_GSI_ROUTING, KVM_IOEVENTFD, coalesced MMIO/PIO zones, an MSR filter,
# KVM_X86_SETUP_MCE and others, which the restart makes again. Skipped (77) without QEMU or a
# /dev/kvm this user can open.
function(stasis_kvm_qemu_test name)
  cmake_parse_arguments(T "" "" "ARGS;QEMU_ARGS" ${ARGN})
  add_test(NAME ${name}
           COMMAND sh -c "command -v qemu-system-x86_64 >/dev/null || { echo 'SKIP: no qemu-system-x86_64 (Debian: qemu-system-x86)'; exit 77; }; [ -r /dev/kvm ] && [ -w /dev/kvm ] || { echo 'SKIP: no /dev/kvm this user can open'; exit 77; }; exec \"$@\""
                   sh ${STASIS_TEST_PYTHON} ${DRIVER} --stasis ${STASIS_BIN} --name ${name} ${T_ARGS}
                   -- qemu-system-x86_64 -accel kvm -nodefaults -no-reboot -display none -m 16 -serial stdio
                   -bios ${CMAKE_CURRENT_BINARY_DIR}/qemu_guest.bin ${T_QEMU_ARGS})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 LABELS "ckpt;vm" SKIP_RETURN_CODE 77)
endfunction()
stasis_kvm_qemu_test(kvm.qemu ARGS --wait-lines 40 ${KVM_PATIENT})
# Two vCPUs (the second waits for a start-up IPI that never comes), checkpointed with --kill twice.
stasis_kvm_qemu_test(kvm.qemu.smp2.chain2 ARGS --wait-lines 40 ${KVM_PATIENT} --chain 2 --between-lines 40 --kill ckpt-kill
                     QEMU_ARGS -smp 2)

# A computation holding a KVM VM continues its monotonic clocks after a restart without
# --clock (3 s after the checkpoint: with 'elapsed' the step across the restart shows the gap).
add_test(NAME kvm.clock_default
         COMMAND sh -c "[ -r /dev/kvm ] && [ -w /dev/kvm ] || { echo 'SKIP: no /dev/kvm this user can open'; exit 77; }; exec \"$@\""
                 sh ${STASIS_TEST_PYTHON} ${DRIVER} --stasis ${STASIS_BIN} --name kvm.clock_default
                 --wait-lines 10 --before-restart "sleep 3" -- $<TARGET_FILE:clock_continue> 40 100 vm)
set_tests_properties(kvm.clock_default PROPERTIES TIMEOUT 120 LABELS "ckpt;vm" SKIP_RETURN_CODE 77)
