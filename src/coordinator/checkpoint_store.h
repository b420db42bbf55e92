// The on-disk layout of checkpoints: D/<generation>/ directories, D/<generation>/MANIFEST.json
// marking one complete, and D/latest pointing at the newest complete one.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace stasis::coordinator {

// --ckpt-dir if given, else $STASIS_CKPT_DIR, else ./stasis-ckpt; made absolute.
std::string resolve_ckpt_dir(const std::string& option);

// mkdir -p; directories it creates get mode 0700. Throws stasis::Error.
void make_private_dirs(const std::string& path);

// "000003": the directory name of a generation.
std::string generation_name(uint64_t generation);

// 1 + the largest all-digit directory name in ckpt_dir (1 if there is none).
uint64_t next_generation(const std::string& ckpt_dir);

// Writes content to path so that a crash leaves either the old file or the whole new one:
// temporary file, fsync, rename, fsync of the directory. Throws stasis::Error.
void write_file_durably(const std::string& path, const std::string& content);

struct ManifestProcess {
  uint32_t pid = 0;
  uint32_t original_pid = 0;
  std::string host;
  std::string address;  // the address it reached the coordinator from (tells namespaces apart)
  std::string program;
  std::string image;  // file name inside the generation directory
  uint64_t image_bytes = 0;
  uint64_t memory_bytes = 0;
  uint64_t parent_generation = 0;  // an incremental image: it builds on that generation's (0: full)
  uint64_t image_checksum = 0;     // its END record's chain of every record header
  // A task of an srun that a process of the computation ran: srun's virtual pid and that
  // process's (the restart replaces srun with a new job step there). 0: any other process.
  uint32_t srun_vpid = 0;
  uint32_t srun_parent_vpid = 0;
  // Where original_pid names the process (StasisProcessInfo::virtual_pid_space): a virtual pid
  // is unique only within its pid space, and hosts (or pid namespaces) each have their own.
  std::string pid_space;
  // Not in MANIFEST.json: the process's host relay checked the file as image_fault does, so
  // manifest_fault does not open it again (the coordinator's CPU per checkpoint then follows
  // hosts, not processes).
  bool image_checked = false;
};

struct Manifest {
  uint64_t generation = 0;
  int64_t unix_time = 0;
  double seconds = 0;
  std::string coordinator_host;
  uint16_t coordinator_port = 0;
  std::vector<ManifestProcess> processes;
};

// MANIFEST.json's text (docs/image-format.md), ending with a newline.
std::string manifest_text(const Manifest& manifest);

// What is wrong with the image file at `path`, or "" when it holds `bytes` bytes and ends with a
// sound END record whose chain of record headers is `checksum` (the file the process wrote, and
// all of it; restart verifies every payload).
std::string image_fault(const std::string& path, uint64_t bytes, uint64_t checksum);

// What is wrong with a manifest about to be written, or "": every image it names must be a
// distinct file of its generation (image_fault), and every generation its increments build on
// a complete one. Checked before a checkpoint is reported complete.
std::string manifest_fault(const std::string& ckpt_dir, const Manifest& manifest);

// Writes <ckpt_dir>/<generation>/MANIFEST.json durably.
void write_manifest(const std::string& ckpt_dir, const Manifest& manifest);

// Atomically points <ckpt_dir>/latest at the generation's directory (a relative symlink).
void point_latest(const std::string& ckpt_dir, uint64_t generation);

// Removes a directory tree; returns false (and leaves what it could not remove) on failure.
bool remove_tree(const std::string& path);

// Keeps the newest `keep` complete generations, and every generation whose images one of those
// builds on (incremental images: the manifests' "parents", followed to full images), and removes
// the other complete ones. keep == 0 keeps everything. Returns the generations removed.
std::vector<uint64_t> prune_generations(const std::string& ckpt_dir, unsigned keep);

// A coordinator holds an exclusive flock(2) on the directory of the generation it is writing,
// from mkdir until the checkpoint ends (it is released when the coordinator dies): returns the
// descriptor holding it, or -1 (then nothing tells others it is being written; see below).
int lock_generation(const std::string& generation_dir);

// True unless the generation's lock can be taken at once, i.e. a live coordinator may be writing
// it; a file system that cannot tell (flock fails otherwise) counts as "may be".
bool generation_being_written(const std::string& generation_dir);

// With keep > 0: removes the incomplete generations (no MANIFEST.json) left by coordinators that
// died mid-checkpoint: only those older than the newest complete generation (a generation just
// created is always numbered above every existing one) and not being written. Returns them.
std::vector<uint64_t> prune_incomplete_generations(const std::string& ckpt_dir, unsigned keep);

// The manifest `latest` points at, if there is a readable one whose generation, unix_time and
// seconds (what the coordinator shows of it) have their types.
std::optional<nlohmann::json> read_latest_manifest(const std::string& ckpt_dir);

}  // namespace stasis::coordinator
