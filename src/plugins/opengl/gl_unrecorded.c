// Entry points the plugin does not record, asked for through glXGetProcAddress while a context is
// recorded (README.md, "Refused"): the program gets a thunk that notes the call and jumps to
// libGL's function, so the checkpoint is refused only when one was called, not merely asked for
// (Qt and GLEW ask for many they never call). The thunks take any signature: they touch no
// argument register and leave the return to libGL's function. x86-64 only; elsewhere, and when
// the thunks run out, asking is enough to refuse, as before.
#include <stdio.h>
#include <string.h>

#include "gl_plugin.h"

#if defined(__x86_64__)
enum { THUNKS = 4096, NAME_CAP = 64 };  // GLEW asks for some 3000 names
__attribute__((visibility("hidden"))) void* gl_thunk_target[THUNKS];
__attribute__((visibility("hidden"))) volatile unsigned char gl_thunk_called[THUNKS];
extern char gl_thunks[] __attribute__((visibility("hidden")));
// Thunk k, 16 bytes from gl_thunks + 16k: movb $1, called[k]; jmp *target[k].
__asm__(".pushsection .text\n"
        ".balign 16\n"
        ".globl gl_thunks\n"
        ".hidden gl_thunks\n"
        "gl_thunks:\n"
        ".set thunk_k, 0\n"
        ".rept 4096\n"
        ".balign 16\n"
        "movb $1, gl_thunk_called+thunk_k(%rip)\n"
        "jmp *gl_thunk_target+8*thunk_k(%rip)\n"
        ".set thunk_k, thunk_k+1\n"
        ".endr\n"
        ".popsection\n");
static char g_names[THUNKS][NAME_CAP];
static unsigned g_used;

void* gl_unrecorded_thunk(const char* name, void* real) {
  if (!real) return NULL;
  for (unsigned k = 0; k < g_used; k++)
    if (strcmp(g_names[k], name) == 0) return gl_thunks + 16 * k;
  if (g_used == THUNKS || strlen(name) >= NAME_CAP) return NULL;
  snprintf(g_names[g_used], NAME_CAP, "%s", name);
  gl_thunk_target[g_used] = real;
  return gl_thunks + 16 * g_used++;
}

// The first noted entry point that was called, or NULL. No allocation: from the checkpoint thread.
const char* gl_unrecorded_called(void) {
  for (unsigned k = 0; k < g_used; k++)
    if (gl_thunk_called[k]) return g_names[k];
  return NULL;
}
#else
void* gl_unrecorded_thunk(const char* name, void* real) { (void)name, (void)real; return NULL; }
const char* gl_unrecorded_called(void) { return NULL; }
#endif
