// The image records of this folder's kinds. Directories and devices keep nothing in kind_data
// (path, flags and offset say it all); a regular file keeps whether a process outside the
// computation had it open for writing (RegularFileData: restart cuts only files it had not);
// a descriptor from outside keeps a StasisExternalData (image/format.h, as the image reader
// writes one too; asserted in image/kind_data.h), and an outside stream that is a regular file
// says so in OutsideFileData.
#pragma once
#include <stdint.h>

#include "image/kind_data.h"

namespace stasis {

// kind_data of a STASIS_FD_REGULAR record (images from before this have zeros: then restart
// knows nothing about other writers and never cuts the file).
struct RegularFileData {
  uint64_t checked;  // [0] kOutsideWritersChecked: `outside_writer` below was looked for
  // [1] 1: a process outside the computation had the file open for writing (through a
  // description of its own) at the checkpoint, so bytes after the checkpoint size may be its.
  uint64_t outside_writer;
};
constexpr uint64_t kOutsideWritersChecked = 0x4b43454843525753ull;  // "SWRCHECK"
STASIS_KIND_FIELD(RegularFileData, checked, 0);
STASIS_KIND_FIELD(RegularFileData, outside_writer, 1);

// kind_data of a STASIS_FD_EXTERNAL record whose description is a regular file shared with a
// process outside the computation: restart connects its own descriptor there when that is the
// same file, and otherwise appends to the file at `path`; it never cuts it.
struct OutsideFileData {
  uint64_t launch_fd_plus_one;  // [0] as StasisExternalData
  uint64_t regular_file;        // [1] kOutsideRegularFile (a mark: other kinds' words differ)
};
constexpr uint64_t kOutsideRegularFile = 0x454c494652454753ull;  // "SGERFILE"
STASIS_KIND_FIELD(OutsideFileData, launch_fd_plus_one, 0);
STASIS_KIND_FIELD(OutsideFileData, regular_file, 1);
inline bool is_outside_regular_file(const StasisFdRecord& rec) {
  return rec.kind == STASIS_FD_EXTERNAL && kind_data_of<OutsideFileData>(rec).regular_file == kOutsideRegularFile;
}

}  // namespace stasis
