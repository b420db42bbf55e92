// The definition dlsym(RTLD_NEXT, name) would return from the runtime, found without the dynamic
// linker's generic lookup (next_symbols.cc says how, and when it leaves a name to dlsym).
#pragma once

namespace stasis::rt {

// The next definition of `name` after the object holding this code, or nullptr when none is found
// by reading the objects' symbol tables (then the caller asks dlsym, which also handles what this
// leaves out: GNU indirect functions, objects without a GNU hash table).
void* find_next_definition(const char* name);

// find_next_definition, else dlsym(RTLD_NEXT) from the runtime (one call out of line, so each
// wrapper file's constructor stays small: its code pages are faulted in at every start).
void* resolve_next_definition(const char* name);

}  // namespace stasis::rt
