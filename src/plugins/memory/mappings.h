// The process's mappings as /proc/PID/maps lists them, parsed without allocating (checkpoint path).
#pragma once
#include "runtime/rt.h"

namespace stasis::rt {

struct Mapping {
  uint64_t start, end, offset, dev, inode;  // dev as stat() encodes it
  uint32_t prot;
  bool shared;
  const char* path;  // NUL-terminated, inside the maps text; "" for anonymous
};

// Reads `path` (a maps file) into the arena and splits it into mappings (paths are cut in place).
// A listing longer than `cap` is cut at its last whole line. Returns the count (0 = failed).
uint32_t read_mappings(Arena& arena, Mapping** out, LogLine& error,
                       const char* path = "/proc/self/maps", size_t cap = 8u << 20);

// A file no path leads to: deleted while open, or a memfd (shared anonymous memory shows as a
// deleted /dev/zero).
bool unnamed_file(const Mapping& m);

// Stasis's own memory, never part of the image: the checkpoint scratch arena and the pid table.
bool is_stasis_memory(const Mapping& m, const Arena& arena);

}  // namespace stasis::rt
