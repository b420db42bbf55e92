# X11 connections (README.md): registered by tests/CMakeLists.txt. Skipped (77) without Xvfb,
# glxgears and xdpyinfo (Debian: xvfb mesa-utils x11-utils).
add_test(NAME x11.connection COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/x11_connection.sh ${STASIS_BIN})
set_tests_properties(x11.connection PROPERTIES TIMEOUT 120 LABELS ckpt SKIP_RETURN_CODE 77)
