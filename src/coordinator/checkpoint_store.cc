#include "coordinator/checkpoint_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string_view>

#include "common/error.h"
#include "coordinator/command_environment.h"
#include "image/framing.h"

namespace fs = std::filesystem;

namespace stasis::coordinator {
namespace {

bool all_digits(const std::string& name) {
  return !name.empty() &&
         std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Generation numbers of the all-digit directories in ckpt_dir (unsorted).
std::vector<uint64_t> generation_dirs(const std::string& ckpt_dir) {
  std::vector<uint64_t> generations;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(ckpt_dir, error)) {
    std::string name = entry.path().filename().string();
    if (!all_digits(name) || name.size() > 18 || !entry.is_directory(error)) continue;
    generations.push_back(std::stoull(name));
  }
  return generations;
}

void fsync_dir(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  fsync(fd);
  close(fd);
}

std::string parent_dir(const std::string& path) {
  std::string parent = fs::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

// The generations whose images a generation's incremental images build on. An unreadable manifest
// names none (that generation is no complete checkpoint, so nothing it names is needed either).
std::vector<uint64_t> manifest_parents(const std::string& ckpt_dir, uint64_t generation) {
  std::ifstream in(fmt::format("{}/{}/MANIFEST.json", ckpt_dir, generation_name(generation)));
  nlohmann::json manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  std::vector<uint64_t> parents;
  if (!manifest.is_object() || !manifest.contains("parents") || !manifest["parents"].is_array())
    return parents;
  for (const auto& parent : manifest["parents"])
    if (parent.is_number_unsigned()) parents.push_back(parent.get<uint64_t>());
  return parents;
}

}  // namespace

std::string resolve_ckpt_dir(const std::string& option) {
  std::string dir = option;
  if (dir.empty()) dir = CommandEnvironment::read().ckpt_dir;
  if (dir.empty()) dir = "stasis-ckpt";
  return fs::absolute(dir).lexically_normal().string();
}

void make_private_dirs(const std::string& path) {
  fs::path absolute = fs::absolute(path);
  fs::path current;
  for (const auto& part : absolute) {
    current /= part;
    if (mkdir(current.c_str(), 0700) == 0 || errno == EEXIST) continue;
    throw Error(fmt::format("cannot create directory {}: {}", current.string(), strerror(errno)));
  }
  if (!fs::is_directory(absolute)) throw Error(fmt::format("{} is not a directory", path));
}

std::string generation_name(uint64_t generation) { return fmt::format("{:06}", generation); }

uint64_t next_generation(const std::string& ckpt_dir) {
  std::vector<uint64_t> generations = generation_dirs(ckpt_dir);
  if (generations.empty()) return 1;
  return *std::max_element(generations.begin(), generations.end()) + 1;
}

void write_file_durably(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw Error(fmt::format("cannot create {}: {}", tmp, strerror(errno)));
  size_t written = 0;
  while (written < content.size()) {
    ssize_t n = write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int saved = errno;
      close(fd);
      unlink(tmp.c_str());
      throw Error(fmt::format("cannot write {}: {}", tmp, strerror(saved)));
    }
    written += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    int saved = errno;
    unlink(tmp.c_str());
    throw Error(fmt::format("cannot write {}: {}", tmp, strerror(saved)));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    unlink(tmp.c_str());
    throw Error(fmt::format("cannot rename {} to {}: {}", tmp, path, strerror(saved)));
  }
  fsync_dir(parent_dir(path));
}

namespace {

// A JSON string as nlohmann's dump writes it. Plain ASCII (every host, program and image name
// in practice) is copied as is; anything else (quotes, control characters, UTF-8, bytes that
// are not UTF-8, which become U+FFFD rather than a manifest restart cannot parse) is left to
// nlohmann.
void append_json_string(std::string& out, std::string_view text) {
  bool plain = std::all_of(text.begin(), text.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (plain) {
    out += '"';
    out += text;
    out += '"';
    return;
  }
  out += nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void append_field(std::string& out, const char* indent, const char* key, std::string_view text,
                  bool last = false) {
  fmt::format_to(std::back_inserter(out), "{}\"{}\": ", indent, key);
  append_json_string(out, text);
  out += last ? "\n" : ",\n";
}

}  // namespace

// Tens of thousands of processes: written straight into one buffer, not built as a JSON tree
// (the coordinator's largest per-process cost at commit). The text is what nlohmann's dump(2)
// of the same object gives (keys sorted, two-space indent): checkpoint_store_test compares.
std::string manifest_text(const Manifest& manifest) {
  std::set<uint64_t> parents;
  for (const ManifestProcess& p : manifest.processes)
    if (p.parent_generation != 0) parents.insert(p.parent_generation);
  std::string out;
  out.reserve(512 + manifest.processes.size() * 400);
  auto to = std::back_inserter(out);
  out += "{\n  \"complete\": true,\n  \"coordinator\": {\n";
  append_field(out, "    ", "host", manifest.coordinator_host);
  fmt::format_to(to, "    \"port\": {}\n  }},\n", manifest.coordinator_port);
  fmt::format_to(to, "  \"format\": \"stasis-checkpoint\",\n  \"generation\": {},\n", manifest.generation);
  if (parents.empty()) {
    out += "  \"parents\": [],\n";
  } else {
    out += "  \"parents\": [\n";
    for (auto it = parents.begin(); it != parents.end(); ++it)
      fmt::format_to(to, "    {}{}\n", *it, std::next(it) == parents.end() ? "" : ",");
    out += "  ],\n";
  }
  out += manifest.processes.empty() ? "  \"processes\": [],\n" : "  \"processes\": [\n";
  for (size_t i = 0; i < manifest.processes.size(); i++) {
    const ManifestProcess& p = manifest.processes[i];
    out += "    {\n";
    append_field(out, "      ", "address", p.address);
    append_field(out, "      ", "host", p.host);
    append_field(out, "      ", "image", p.image);
    fmt::format_to(to,
                   "      \"image_bytes\": {},\n      \"image_checksum\": \"{:016x}\",\n"
                   "      \"memory_bytes\": {},\n      \"original_pid\": {},\n"
                   "      \"parent_generation\": {},\n      \"pid\": {},\n",
                   p.image_bytes, p.image_checksum, p.memory_bytes, p.original_pid,
                   p.parent_generation, p.pid);
    if (!p.pid_space.empty()) append_field(out, "      ", "pid_space", p.pid_space);
    append_field(out, "      ", "program", p.program, p.srun_vpid == 0);
    if (p.srun_vpid != 0)
      fmt::format_to(to, "      \"srun\": {{\n        \"parent\": {},\n        \"vpid\": {}\n      }}\n",
                     p.srun_parent_vpid, p.srun_vpid);
    out += i + 1 == manifest.processes.size() ? "    }\n  ],\n" : "    },\n";
  }
  // A double as nlohmann writes it (1.0, not fmt's 1).
  fmt::format_to(to, "  \"seconds\": {},\n  \"unix_time\": {},\n  \"version\": 1\n}}\n",
                 nlohmann::json(manifest.seconds).dump(), manifest.unix_time);
  return out;
}

std::string image_fault(const std::string& path, uint64_t bytes, uint64_t checksum) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return fmt::format("{}: {}", path, strerror(errno));
  if (!S_ISREG(st.st_mode)) return fmt::format("{} is not a regular file", path);
  if (static_cast<uint64_t>(st.st_size) != bytes)
    return fmt::format("{} holds {} bytes, not the {} its process wrote", path, st.st_size, bytes);
  struct {
    StasisRecordHeader header;
    StasisEndRecord end;
  } tail;
  static_assert(sizeof tail == sizeof(StasisRecordHeader) + sizeof(StasisEndRecord));
  if (bytes < sizeof tail) return fmt::format("{} is too short for an image ({} bytes)", path, bytes);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fmt::format("cannot open {}: {}", path, strerror(errno));
  ssize_t got = pread(fd, &tail, sizeof tail, static_cast<off_t>(bytes - sizeof tail));
  int saved = errno;
  close(fd);
  if (got != static_cast<ssize_t>(sizeof tail))
    return fmt::format("cannot read the end of {}: {}", path, got < 0 ? strerror(saved) : "short read");
  if (tail.header.type != STASIS_REC_END || !image::record_header_sound(tail.header) ||
      tail.header.stored_size != sizeof tail.end || !image::payload_sound(tail.header, &tail.end))
    return fmt::format("{} does not end with a sound END record", path);
  if (tail.end.headers_checksum != checksum)
    return fmt::format("{} is not the image its process wrote (checksum {:016x}, expected {:016x})",
                       path, tail.end.headers_checksum, checksum);
  return "";
}

std::string manifest_fault(const std::string& ckpt_dir, const Manifest& manifest) {
  std::string dir = fmt::format("{}/{}", ckpt_dir, generation_name(manifest.generation));
  if (manifest.processes.empty()) return fmt::format("{}: no process in the checkpoint", dir);
  std::set<std::string> names;
  std::set<uint64_t> complete_parents;
  for (const ManifestProcess& p : manifest.processes) {
    if (p.image.empty() || p.image.find('/') != std::string::npos || p.image == "." ||
        p.image == "..")
      return fmt::format("process {} ({}) named no image file of {}", p.pid, p.program, dir);
    if (!names.insert(p.image).second)
      return fmt::format("two processes name the same image {}/{}", dir, p.image);
    if (!p.image_checked) {
      std::string fault = image_fault(dir + "/" + p.image, p.image_bytes, p.image_checksum);
      if (!fault.empty()) return fault;
    }
    if (p.parent_generation == 0 || complete_parents.count(p.parent_generation)) continue;
    std::string parent_manifest =
        fmt::format("{}/{}/MANIFEST.json", ckpt_dir, generation_name(p.parent_generation));
    struct stat st;
    if (p.parent_generation >= manifest.generation || stat(parent_manifest.c_str(), &st) != 0)
      return fmt::format("{}/{} builds on generation {}, which is not a complete checkpoint",
                         dir, p.image, p.parent_generation);
    complete_parents.insert(p.parent_generation);  // one look per parent, not per process
  }
  return "";
}

void write_manifest(const std::string& ckpt_dir, const Manifest& manifest) {
  std::string path =
      fmt::format("{}/{}/MANIFEST.json", ckpt_dir, generation_name(manifest.generation));
  write_file_durably(path, manifest_text(manifest));
}

void point_latest(const std::string& ckpt_dir, uint64_t generation) {
  std::string latest = ckpt_dir + "/latest";
  std::string tmp = ckpt_dir + "/.latest.tmp";
  unlink(tmp.c_str());
  if (symlink(generation_name(generation).c_str(), tmp.c_str()) != 0) {
    throw Error(fmt::format("cannot create {}: {}", tmp, strerror(errno)));
  }
  if (rename(tmp.c_str(), latest.c_str()) != 0) {
    int saved = errno;
    unlink(tmp.c_str());
    throw Error(fmt::format("cannot update {}: {}", latest, strerror(saved)));
  }
  fsync_dir(ckpt_dir);
}

bool remove_tree(const std::string& path) {
  std::error_code error;
  fs::remove_all(path, error);
  return !error;
}

std::vector<uint64_t> prune_generations(const std::string& ckpt_dir, unsigned keep) {
  std::vector<uint64_t> removed;
  if (keep == 0) return removed;
  std::vector<uint64_t> complete;
  for (uint64_t generation : generation_dirs(ckpt_dir)) {
    std::error_code error;
    std::string manifest =
        fmt::format("{}/{}/MANIFEST.json", ckpt_dir, generation_name(generation));
    if (fs::exists(manifest, error)) complete.push_back(generation);
  }
  std::sort(complete.begin(), complete.end(), std::greater<>());
  std::set<uint64_t> needed(complete.begin(), complete.begin() + std::min<size_t>(keep, complete.size()));
  for (std::vector<uint64_t> next(needed.begin(), needed.end()); !next.empty();) {
    uint64_t generation = next.back();
    next.pop_back();
    for (uint64_t parent : manifest_parents(ckpt_dir, generation))
      if (needed.insert(parent).second) next.push_back(parent);
  }
  for (uint64_t generation : complete) {
    if (needed.count(generation) == 0 &&
        remove_tree(fmt::format("{}/{}", ckpt_dir, generation_name(generation)))) {
      removed.push_back(generation);
    }
  }
  return removed;
}

int lock_generation(const std::string& generation_dir) {
  int fd = open(generation_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool generation_being_written(const std::string& generation_dir) {
  int fd = lock_generation(generation_dir);
  if (fd < 0) return true;
  close(fd);
  return false;
}

std::vector<uint64_t> prune_incomplete_generations(const std::string& ckpt_dir, unsigned keep) {
  std::vector<uint64_t> removed;
  if (keep == 0) return removed;
  std::vector<uint64_t> generations = generation_dirs(ckpt_dir);
  std::vector<uint64_t> incomplete;
  uint64_t newest_complete = 0;
  for (uint64_t generation : generations) {
    std::error_code error;
    std::string dir = fmt::format("{}/{}", ckpt_dir, generation_name(generation));
    if (fs::exists(dir + "/MANIFEST.json", error)) {
      newest_complete = std::max(newest_complete, generation);
    } else {
      incomplete.push_back(generation);
    }
  }
  std::sort(incomplete.begin(), incomplete.end());
  for (uint64_t generation : incomplete) {
    std::string dir = fmt::format("{}/{}", ckpt_dir, generation_name(generation));
    if (generation < newest_complete && !generation_being_written(dir) && remove_tree(dir))
      removed.push_back(generation);
  }
  return removed;
}

std::optional<nlohmann::json> read_latest_manifest(const std::string& ckpt_dir) {
  std::ifstream in(ckpt_dir + "/latest/MANIFEST.json");
  if (!in) return std::nullopt;
  nlohmann::json manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.is_object()) return std::nullopt;
  // What the coordinator reads of it must have its type (a damaged manifest is no last checkpoint;
  // `stasis restart` names what is wrong with it).
  auto typed = [&](const char* key, bool (nlohmann::json::*is)() const noexcept) {
    auto it = manifest.find(key);
    return it == manifest.end() || ((*it).*is)();
  };
  if (!typed("generation", &nlohmann::json::is_number_unsigned) ||
      !typed("unix_time", &nlohmann::json::is_number_integer) || !typed("seconds", &nlohmann::json::is_number))
    return std::nullopt;
  return manifest;
}

}  // namespace stasis::coordinator
