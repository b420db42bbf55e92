// A checkpoint as `stasis restart` finds it: the generation directory named (or the newest
// complete one of a checkpoint root), its MANIFEST.json, and the images it lists.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stasis::restart {

struct Checkpoint {
  std::filesystem::path dir;
  uint64_t generation = 0;
  std::vector<std::filesystem::path> images;
  std::vector<std::string> hosts;  // of each image: the address it reached the coordinator from
  // Of each image: the pid space its virtual pid belongs to ("" in manifests older than pid
  // spaces, which had one space for the whole computation).
  std::vector<std::string> pid_spaces;
  // Of each image: for a task of an srun that a process of the computation ran, srun's virtual
  // pid and that process's (MANIFEST.json's "srun"); {0, 0} for any other process.
  std::vector<std::pair<uint32_t, uint32_t>> sruns;
};

// `given`: a generation directory, or a checkpoint root (then `latest`, else the highest
// numbered generation with a MANIFEST.json). Throws stasis::Error naming what is missing.
Checkpoint load_checkpoint(const std::filesystem::path& given);

// The checkpoint that the text of `dir`/MANIFEST.json describes. Every field restart relies on is
// checked (type and value); a malformed manifest throws stasis::Error naming the file, the field
// and what it should hold.
Checkpoint parse_manifest(std::string_view text, const std::filesystem::path& dir);

}  // namespace stasis::restart
