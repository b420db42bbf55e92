# X11 connections (README.md): registered by tests/CMakeLists.txt. Skipped (77) without Xvfb,
# glxgears and xdpyinfo (Debian: xvfb mesa-utils x11-utils).
add_test(NAME x11.connection COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/x11_connection.sh ${STASIS_BIN})
set_tests_properties(x11.connection PROPERTIES TIMEOUT 120 LABELS ckpt SKIP_RETURN_CODE 77)
# `stasis launch --x11` (README.md, The X proxy): glxgears restarted on new Xvfb servers, screenshots
# compared. Skipped (77) without Xvfb, glxgears, xdpyinfo, xwd or python3.
add_test(NAME x11.proxy_glxgears COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/x11_proxy_glxgears.sh ${STASIS_BIN})
set_tests_properties(x11.proxy_glxgears PROPERTIES TIMEOUT 180 LABELS ckpt SKIP_RETURN_CODE 77)
