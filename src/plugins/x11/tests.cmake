# X11 connections (README.md): registered by tests/CMakeLists.txt. Skipped (77) without Xvfb,
# glxgears and xdpyinfo (Debian: xvfb mesa-utils x11-utils).
add_test(NAME x11.connection COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/x11_connection.sh ${STASIS_BIN})
set_tests_properties(x11.connection PROPERTIES TIMEOUT 240 LABELS ckpt SKIP_RETURN_CODE 77)
# `stasis launch --x11` (README.md, The X proxy): glxgears restarted on new Xvfb servers, screenshots
# compared. Skipped (77) without Xvfb, glxgears, xdpyinfo, xwd or python3.
add_test(NAME x11.proxy_glxgears COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/x11_proxy_glxgears.sh ${STASIS_BIN})
set_tests_properties(x11.proxy_glxgears PROPERTIES TIMEOUT 300 LABELS ckpt SKIP_RETURN_CODE 77)
# An OpenGL 3.3 core-profile program (tests/gl33_frames.c) restarted twice on new Xvfb servers
# through the driver: every frame's checksum equal to an uninterrupted run's. Built where libGL
# and libX11 are (Debian: libgl-dev libx11-dev); skipped (77) without them or without Xvfb.
find_library(STASIS_LIBGL GL)
find_library(STASIS_LIBX11 X11)
find_path(STASIS_GLX_INCLUDE GL/glx.h)
set(STASIS_GL33_FRAMES "")
set(STASIS_ROUND_TRIPS "")
if(STASIS_LIBGL AND STASIS_LIBX11 AND STASIS_GLX_INCLUDE)
  stasis_test_target(gl33_frames ${CMAKE_CURRENT_LIST_DIR}/tests/gl33_frames.c)
  target_link_libraries(gl33_frames PRIVATE ${STASIS_LIBGL} ${STASIS_LIBX11} m)
  set(STASIS_GL33_FRAMES $<TARGET_FILE:gl33_frames>)
endif()
if(STASIS_LIBX11)
  stasis_test_target(round_trips ${CMAKE_CURRENT_LIST_DIR}/tests/round_trips.c)
  target_link_libraries(round_trips PRIVATE ${STASIS_LIBX11})
  set(STASIS_ROUND_TRIPS $<TARGET_FILE:round_trips>)
endif()
add_test(NAME x11.gl33 COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/x11_driver.sh ${STASIS_BIN} ${STASIS_TEST_PYTHON}
                               ${DRIVER} x11.gl33 "${STASIS_GL33_FRAMES}" 200 15)
# A program of round trips (tests/round_trips.c): checkpoints with replies outstanding, and a log
# that stays short (under 10 requests) though the program sets its GC's colour at every step.
add_test(NAME x11.round_trips COMMAND env X11_REPLAYED=[0-9] ${CMAKE_CURRENT_LIST_DIR}/tests/x11_driver.sh ${STASIS_BIN}
                                      ${STASIS_TEST_PYTHON} ${DRIVER} x11.round_trips "${STASIS_ROUND_TRIPS}" 120)
set_tests_properties(x11.round_trips PROPERTIES TIMEOUT 240 LABELS ckpt SKIP_RETURN_CODE 77)
set_tests_properties(x11.gl33 PROPERTIES TIMEOUT 240 LABELS ckpt SKIP_RETURN_CODE 77)
# GPU state refused at checkpoint, naming it, the program running on (the driver's
# --expect-refusal): the Vulkan loader loaded (Debian: libvulkan1), a GPU device node held open
# (run where one exists: /dev/nvidiactl or /dev/dri/renderD128; skipped (77) elsewhere).
stasis_test_target(gpu_holder ${CMAKE_CURRENT_LIST_DIR}/tests/gpu_holder.c)
target_link_libraries(gpu_holder PRIVATE ${CMAKE_DL_LIBS})
find_library(STASIS_LIBVULKAN NAMES vulkan libvulkan.so.1)
if(STASIS_LIBVULKAN)
  stasis_ckpt_test(x11.refuse_vulkan ARGS --expect-refusal "Vulkan loader .*libvulkan" PROGRAM gpu_holder vulkan - 60)
else()
  stasis_skipped_group(x11.refuse_vulkan "no libvulkan.so.1 (Debian: libvulkan1)")
endif()
add_test(NAME x11.refuse_gpu_device
         COMMAND sh -c "for d in /dev/nvidiactl /dev/dri/renderD128; do [ -c $d ] && exec \"$0\" \"$1\" --stasis \"$2\" --name x11.refuse_gpu_device --expect-refusal \"GPU device node\" -- \"$3\" device $d 60; done; echo 'SKIP: no GPU device node (/dev/nvidiactl, /dev/dri/renderD128)'; exit 77"
                 ${STASIS_TEST_PYTHON} ${DRIVER} ${STASIS_BIN} $<TARGET_FILE:gpu_holder>)
set_tests_properties(x11.refuse_gpu_device PROPERTIES TIMEOUT 120 LABELS ckpt SKIP_RETURN_CODE 77)
# xlogo (Xt, Xaw: atoms, properties, core drawing, Expose) restarted on a new Xvfb: the screen
# pixel for pixel as before the checkpoint. Skipped (77) without xlogo (Debian: x11-apps).
add_test(NAME x11.proxy_xlogo COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/x11_proxy_xlogo.sh ${STASIS_BIN})
set_tests_properties(x11.proxy_xlogo PROPERTIES TIMEOUT 240 LABELS ckpt SKIP_RETURN_CODE 77)
# An X server resetting as its last client leaves closes, unanswered, a connection it accepted
# meanwhile: the proxy asks again and the program runs (made certain by stopping Xvfb; the CI
# failure of x11.proxy_glxgears and two of x11.proxy_xlogo). Skipped (77) without ss (iproute2).
add_test(NAME x11.proxy_server_reset COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/x11_proxy_server_reset.sh ${STASIS_BIN})
set_tests_properties(x11.proxy_server_reset PROPERTIES TIMEOUT 240 LABELS ckpt SKIP_RETURN_CODE 77)
# PyMOL (issue 19's acceptance): restarted mid-rotation on a new Xvfb, its OpenGL PNG byte for byte
# an uninterrupted run's. Skipped (77) without pymol (Debian: pymol).
add_test(NAME x11.pymol COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/x11_pymol.sh ${STASIS_BIN})
set_tests_properties(x11.pymol PROPERTIES TIMEOUT 300 LABELS ckpt SKIP_RETURN_CODE 77)
# Requests the old server never answered (it is stopped before the checkpoint) asked again of the
# new one: round_trips ends with an uninterrupted run's output.
add_test(NAME x11.unanswered COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/x11_unanswered.sh ${STASIS_BIN} "${STASIS_ROUND_TRIPS}")
set_tests_properties(x11.unanswered PROPERTIES TIMEOUT 240 LABELS ckpt SKIP_RETURN_CODE 77)
# OpenArena (issue 19's acceptance): a timedemo restarted mid-demo on a new Xvfb, its frame count
# and every frame it recorded as an uninterrupted run's. Skipped (77) without openarena (Debian:
# openarena). fixed_seed.so makes both runs' random effects alike.
add_library(fixed_seed MODULE ${CMAKE_CURRENT_LIST_DIR}/tests/fixed_seed.c)
target_link_libraries(fixed_seed PRIVATE ${CMAKE_DL_LIBS})
set_target_properties(fixed_seed PROPERTIES PREFIX "" LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
add_test(NAME x11.openarena COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/x11_openarena.sh ${STASIS_BIN} $<TARGET_FILE:fixed_seed>)
set_tests_properties(x11.openarena PROPERTIES TIMEOUT 300 LABELS ckpt SKIP_RETURN_CODE 77)
