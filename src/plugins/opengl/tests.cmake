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
