// Preloaded into the tests' Xvfb (XVFB_PRELOAD in ../../x11/tests/xvfb_lib.sh) so that its
// indirect GLX contexts render. Debian 12's Xvfb calls GL through libglvnd's libGL, whose entry
// points jump through libGLdispatch's current table; Mesa's swrast driver, which the server's GLX
// loads, makes its contexts current in Mesa's own libglapi, so nobody sets that table and every GL
// call of the server does nothing (glGetString answers "", nothing is drawn). This makes the
// table current once, filled with libglapi's entry points, which dispatch to whatever context
// the driver made current. A test-only shim: nothing of Stasis runs inside the X server.
#include <stddef.h>

struct glvnd_thread_state {  // libglvnd's __GLdispatchThreadState
  void (*destroyed)(struct glvnd_thread_state*);
  void* priv;
};
extern void __glDispatchInit(void);
extern void* __glDispatchCreateTable(void* (*get_proc_address)(const char*, void*), void* param);
extern unsigned char __glDispatchMakeCurrent(struct glvnd_thread_state*, void* table, int vendor, const void* patch);
extern int __glDispatchNewVendorID(void);
extern void* _glapi_get_proc_address(const char* name);

static void* mesa_entry_point(const char* name, void* param) {
  (void)param;
  return _glapi_get_proc_address(name);
}

static struct glvnd_thread_state g_state;

__attribute__((constructor)) static void make_mesa_dispatch_current(void) {
  __glDispatchInit();
  void* table = __glDispatchCreateTable(mesa_entry_point, NULL);
  if (table) __glDispatchMakeCurrent(&g_state, table, __glDispatchNewVendorID(), NULL);
}
