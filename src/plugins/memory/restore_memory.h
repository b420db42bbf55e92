// The restart half of the memory plugin: memory objects that several regions share.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "image/reader.h"

namespace stasis::restore {

using MemoryObjectKey = std::pair<uint64_t, uint64_t>;  // (dev, inode) of the saved object

// In `stasis restart`, before the process tree is forked: one memfd (close-on-exec, at or above
// the descriptor floor) for each unnamed shared memory object that several regions map, in one
// process or in several, filled with the bytes saved of it. Throws an Error when a region's bytes
// were left to an ancestor whose image does not hold them.
std::map<MemoryObjectKey, int> create_shared_memory(const std::vector<image::Image>& images);

// For each region of `img` that maps one of `objects`: its start address -> a descriptor of the
// object (inherited across exec, at or above `floor`) for the loader to map and close.
std::map<uint64_t, int> pass_shared_memory(const image::Image& img,
                                           const std::map<MemoryObjectKey, int>& objects, int floor);

// In `stasis restart`, before any region is checked or mapped: the named /dev/shm files the
// computation mapped shared (named_shm.h), written again at their paths with the bytes saved at
// the checkpoint (restore_named_shm.cc). Throws an Error naming a file that cannot be made.
// Returns their paths.
std::set<std::string> recreate_named_shm_files(const std::vector<image::Image>& images);

}  // namespace stasis::restore
