// libstasis_gl_front.so: what an SDL program loads as its libGL (SDL_OPENGL_LIBRARY, set by the
// plugin's constructor). SDL dlopens its libGL without adding it to the global scope and takes
// every GLX entry point with dlsym on that handle, which never sees a preloaded library. This
// object has no code: it needs the plugin first and libGL second, so a dlsym on its handle finds
// the plugin's wrappers (glXGetProcAddressARB, glXMakeCurrent...) and libGL's functions for the rest.
int stasis_gl_front_marker;
