# The OpenGL plugin (README.md): registered by tests/CMakeLists.txt. glxgears with indirect GLX on
# an Xvfb +iglx (its GL state in the X server), restarted twice on new Xvfb servers: the gears are
# drawn again from the plugin's replay. The Xvfb gets tests/iglx_dispatch.c preloaded (why: there).
# Skipped (77) without Xvfb, glxgears, glxinfo, xdpyinfo, xwd, python3 (Debian: xvfb mesa-utils
# x11-utils x11-apps), or without libGLdispatch and libglapi to build the shim.
find_library(STASIS_LIBGLDISPATCH NAMES GLdispatch libGLdispatch.so.0)
find_library(STASIS_LIBGLAPI NAMES glapi libglapi.so.0)
set(STASIS_IGLX_DISPATCH "none")
if(STASIS_LIBGLDISPATCH AND STASIS_LIBGLAPI)
  add_library(stasis_iglx_dispatch SHARED ${CMAKE_CURRENT_LIST_DIR}/tests/iglx_dispatch.c)
  target_link_libraries(stasis_iglx_dispatch PRIVATE ${STASIS_LIBGLDISPATCH} ${STASIS_LIBGLAPI})
  set(STASIS_IGLX_DISPATCH $<TARGET_FILE:stasis_iglx_dispatch>)
endif()
add_test(NAME opengl.indirect_gears
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/gl_indirect_gears.sh ${STASIS_BIN} ${STASIS_IGLX_DISPATCH})
set_tests_properties(opengl.indirect_gears PROPERTIES TIMEOUT 300 LABELS ckpt SKIP_RETURN_CODE 77)
# A GL 1.x program of the suite's own (tests/gl_textures.c: a mipmapped texture, a display list,
# a light, a material, the matrices), indirect on Xvfb +iglx, through the X driver (two restarts,
# each on a new Xvfb): every frame's checksum equal to an uninterrupted run's.
find_library(STASIS_GL_LIBGL GL)
find_library(STASIS_GL_LIBX11 X11)
set(STASIS_GL_TEXTURES "")
if(STASIS_GL_LIBGL AND STASIS_GL_LIBX11 AND STASIS_GL_INCLUDE)
  stasis_test_target(gl_textures ${CMAKE_CURRENT_LIST_DIR}/tests/gl_textures.c)
  target_link_libraries(gl_textures PRIVATE ${STASIS_GL_LIBGL} ${STASIS_GL_LIBX11})
  set(STASIS_GL_TEXTURES $<TARGET_FILE:gl_textures>)
endif()
if(STASIS_LIBGLDISPATCH AND STASIS_LIBGLAPI)
  add_test(NAME opengl.textures
           COMMAND env LIBGL_ALWAYS_INDIRECT=1 XVFB_ARGS=+iglx XVFB_PRELOAD=${STASIS_IGLX_DISPATCH}
                   ${PROJECT_SOURCE_DIR}/src/plugins/x11/tests/x11_driver.sh ${STASIS_BIN} ${STASIS_TEST_PYTHON}
                   ${DRIVER} opengl.textures "${STASIS_GL_TEXTURES}" 300 20)
  set_tests_properties(opengl.textures PROPERTIES TIMEOUT 240 LABELS ckpt SKIP_RETURN_CODE 77)
endif()
# The same program asking glXGetProcAddress for an entry point the plugin does not record: the
# checkpoint is refused naming it, the program runs on, its output as an uninterrupted run's.
if(STASIS_LIBGLDISPATCH AND STASIS_LIBGLAPI)
  add_test(NAME opengl.refuse_unrecorded
           COMMAND env LIBGL_ALWAYS_INDIRECT=1 XVFB_ARGS=+iglx XVFB_PRELOAD=${STASIS_IGLX_DISPATCH}
                   "X11_EXPECT_REFUSAL=opengl: .*glPointParameterfARB, which the plugin does not record"
                   ${PROJECT_SOURCE_DIR}/src/plugins/x11/tests/x11_driver.sh ${STASIS_BIN} ${STASIS_TEST_PYTHON}
                   ${DRIVER} opengl.refuse_unrecorded "${STASIS_GL_TEXTURES}" 100 20 unrecorded)
  set_tests_properties(opengl.refuse_unrecorded PROPERTIES TIMEOUT 180 LABELS ckpt SKIP_RETURN_CODE 77)
endif()
# A direct OpenGL 3.3 core context (../x11/tests/gl33_frames.c: VAOs, FBO render-to-texture, GLSL
# programs, a UBO; "trails": the texture never cleared, so its read-back at the checkpoint
# matters) recorded and, after each restart on a new Xvfb, replayed into a fresh context
# (STASIS_GL_REPLAY=fresh: llvmpipe's old context would still work, a GPU's would not): every
# frame's checksum equal to an uninterrupted run's, the plugin's line saying it replayed. The
# same with nothing replayed into the fresh context (fresh-empty) must not (gl_fresh_empty.sh).
if(STASIS_GL_LIBGL AND STASIS_GL_LIBX11 AND STASIS_GL_INCLUDE)
  add_test(NAME opengl.fresh_gl33
           COMMAND env STASIS_GL_REPLAY=fresh STASIS_GL_VERBOSE=1 "X11_RESTART_STDERR=replayed into a fresh context"
                   ${PROJECT_SOURCE_DIR}/src/plugins/x11/tests/x11_driver.sh ${STASIS_BIN} ${STASIS_TEST_PYTHON}
                   ${DRIVER} opengl.fresh_gl33 $<TARGET_FILE:gl33_frames> 100 10 trails)
  set_tests_properties(opengl.fresh_gl33 PROPERTIES TIMEOUT 240 LABELS ckpt SKIP_RETURN_CODE 77)
  add_test(NAME opengl.fresh_empty
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/gl_fresh_empty.sh ${PROJECT_SOURCE_DIR}/src/plugins/x11/tests/x11_driver.sh
                   ${STASIS_BIN} ${STASIS_TEST_PYTHON} ${DRIVER} opengl.fresh_empty $<TARGET_FILE:gl33_frames> 100 10 trails)
  set_tests_properties(opengl.fresh_empty PROPERTIES TIMEOUT 240 LABELS ckpt SKIP_RETURN_CODE 77)
endif()
# A GL 1.x program's layers in a direct context replayed into a fresh one (tests/gl_textures.c
# `layers`: a 3D texture and a cube map on units 1 and 2 with texture generation and texture
# matrices, a sampler object, fog, a query read a frame late; a texel and a cube face rewritten
# every frame, so only the read-back keeps them): every frame's checksum and query result equal
# to an uninterrupted run's after each restart on a new Xvfb.
if(STASIS_GL_LIBGL AND STASIS_GL_LIBX11 AND STASIS_GL_INCLUDE)
  add_test(NAME opengl.fresh_layers
           COMMAND env STASIS_GL_REPLAY=fresh STASIS_GL_VERBOSE=1 "X11_RESTART_STDERR=replayed into a fresh context"
                   ${PROJECT_SOURCE_DIR}/src/plugins/x11/tests/x11_driver.sh ${STASIS_BIN} ${STASIS_TEST_PYTHON}
                   ${DRIVER} opengl.fresh_layers "${STASIS_GL_TEXTURES}" 120 10 layers)
  set_tests_properties(opengl.fresh_layers PROPERTIES TIMEOUT 240 LABELS ckpt SKIP_RETURN_CODE 77)
endif()
