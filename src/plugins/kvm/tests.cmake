# The KVM tests, registered by tests/CMakeLists.txt (README.md here says what they prove).
add_test(NAME kvm.refused_at_once
         COMMAND ${STASIS_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/tests/kvm_refused.py ${STASIS_BIN})
set_tests_properties(kvm.refused_at_once PROPERTIES TIMEOUT 120 LABELS vm SKIP_RETURN_CODE 77)
