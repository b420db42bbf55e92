# Virtual machines and what a VM monitor needs of a checkpointer (docs/vms.md), registered by
# tests/CMakeLists.txt. QEMU cases skip (77) with the reason when QEMU or a guest kernel is absent.

# Nothing of Stasis's on the program's own stdout/stderr (for QEMU: the guest's serial console).
add_test(NAME vm.quiet_streams
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/quiet_streams.py
                 ${STASIS_BIN} $<TARGET_FILE:wipe_on_fork> 60 50)
set_tests_properties(vm.quiet_streams PROPERTIES TIMEOUT 120 LABELS vm SKIP_RETURN_CODE 77)
