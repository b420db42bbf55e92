// User threads are stopped, maybe inside malloc or setenv: nothing here allocates from libc. The
// new environ array and its strings go to a private mapping the program keeps (like the strings
// given to putenv); glibc's setenv copies an environ array it did not allocate before growing it.
#include "runtime/restart_environment.h"

#include <sys/mman.h>

#include "runtime/rt.h"

extern char** environ;

namespace stasis::rt {

namespace {

size_t name_length(const char* assignment) {
  size_t n = 0;
  while (assignment[n] && assignment[n] != '=') n++;
  return n;
}

}  // namespace

void apply_restart_environment(const char* entries) {
  if (!entries[0]) return;
  size_t environ_count = 0;
  for (char** e = environ; e && *e; e++) environ_count++;
  size_t assignment_count = 0, string_bytes = 0;
  for (const char* a = entries; *a; a += str_len(a) + 1) {
    assignment_count++;
    string_bytes += str_len(a) + 1;
  }
  size_t array_bytes = (environ_count + assignment_count + 1) * sizeof(char*);
  long addr = STASIS_SYS6(SYS_mmap, 0, array_bytes + string_bytes, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (addr < 0 && addr > -4096) {
    LogLine error;
    (error << "restart --setenv: no memory for the new environment (" << -addr << "); it stays the checkpoint's")
        .emit();
    return;
  }
  auto** array = reinterpret_cast<char**>(addr);
  char* strings = reinterpret_cast<char*>(addr) + array_bytes;
  if (environ_count) __builtin_memcpy(array, environ, environ_count * sizeof(char*));
  size_t count = environ_count;
  for (const char* a = entries; *a; a += str_len(a) + 1) {
    size_t len = str_len(a) + 1;
    __builtin_memcpy(strings, a, len);
    array[count] = nullptr;  // the block ends here for the lookup
    char** entry = environment_entry(array, a, name_length(a));
    if (entry) {
      *entry = strings;
    } else {
      array[count++] = strings;
    }
    strings += len;
  }
  array[count] = nullptr;
  environ = array;
}

}  // namespace stasis::rt
