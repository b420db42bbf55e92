#include "restart/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace stasis::restart {
namespace {

bool is_generation_name(const std::string& name) {
  return !name.empty() && name.size() <= 18 && std::all_of(name.begin(), name.end(), ::isdigit);
}

// Checks one field of MANIFEST.json at a time; every refusal names the file, the field (as a
// JSON path: processes[2].image) and what it should hold.
class ManifestFields {
 public:
  explicit ManifestFields(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void refuse(const std::string& field, const std::string& expected, const json& found) const {
    std::string shown = found.is_discarded() ? "it is missing"
                        : found.is_null()    ? "it is null"
                                             : fmt::format("it is the {} {}", found.type_name(), short_dump(found));
    throw Error(fmt::format("{} is not a usable checkpoint manifest: '{}' must be {}, but {}", file_, field,
                            expected, shown));
  }

  const json& field(const json& object, const std::string& path, const char* key, bool required,
                    const std::string& expected) const {
    static const json kMissing(json::value_t::discarded);
    auto it = object.find(key);
    if (it == object.end()) {
      if (required) refuse(path + key, expected, kMissing);
      return kMissing;
    }
    return *it;
  }

  std::string text(const json& object, const std::string& path, const char* key, bool required) const {
    const json& value = field(object, path, key, required, "a string");
    if (value.is_discarded()) return "";
    if (!value.is_string()) refuse(path + key, "a string", value);
    return value.get<std::string>();
  }

  uint64_t unsigned_number(const json& object, const std::string& path, const char* key, bool required,
                           uint64_t max = UINT64_MAX) const {
    std::string expected =
        max == UINT64_MAX ? std::string("an unsigned integer") : fmt::format("an integer from 0 to {}", max);
    const json& value = field(object, path, key, required, expected);
    if (value.is_discarded()) return 0;
    if (!value.is_number_unsigned() || value.get<uint64_t>() > max) refuse(path + key, expected, value);
    return value.get<uint64_t>();
  }

  void number(const json& object, const std::string& path, const char* key) const {
    const json& value = field(object, path, key, false, "a number");
    if (!value.is_discarded() && !value.is_number()) refuse(path + key, "a number", value);
  }

  const std::string& file() const { return file_; }

 private:
  // Never the whole value: an array nested a million deep would overflow the stack of the
  // (recursive) serializer.
  static std::string short_dump(const json& value) {
    auto count = [](size_t n, const char* what) { return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"); };
    if (value.is_array()) return value.empty() ? "[]" : fmt::format("[...] ({})", count(value.size(), "element"));
    if (value.is_object()) return value.empty() ? "{}" : fmt::format("{{...}} ({})", count(value.size(), "field"));
    if (value.is_string()) {
      const std::string& text = value.get_ref<const std::string&>();
      std::string shown = json(text.substr(0, 57)).dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace);
      return text.size() > 57 ? shown + "..." : shown;
    }
    return value.dump();
  }
  std::string file_;
};

// Where an image of the manifest may be: a plain file name inside the generation directory.
bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

std::string read_manifest_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(fmt::format("cannot read {}", path.string()));
  return text.str();
}

}  // namespace

Checkpoint parse_manifest(std::string_view text, const fs::path& dir) {
  const ManifestFields fields((dir / "MANIFEST.json").string());
  const std::string& file = fields.file();
  json manifest;
  try {
    manifest = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    std::string what = e.what();  // "[json.exception.parse_error.101] parse error at ...": keep the text
    if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos)
      what = what.substr(what.find("] ") + 2);
    throw Error(fmt::format("{} is not valid JSON: {}", file, what));
  }
  if (!manifest.is_object())
    throw Error(fmt::format("{} is not a usable checkpoint manifest: it holds a JSON {}, not an object", file,
                            manifest.type_name()));
  if (fields.text(manifest, "", "format", true) != "stasis-checkpoint")
    fields.refuse("format", "\"stasis-checkpoint\"", manifest["format"]);
  if (fields.unsigned_number(manifest, "", "version", true) != 1)
    fields.refuse("version", "1 (the only manifest version this stasis reads)", manifest["version"]);
  const json& complete = fields.field(manifest, "", "complete", true, "true");
  if (!complete.is_boolean() || !complete.get<bool>())
    throw Error(fmt::format("{} does not describe a complete Stasis checkpoint ('complete' is {})", file,
                            complete.dump()));

  Checkpoint ckpt;
  ckpt.dir = dir;
  ckpt.generation = fields.unsigned_number(manifest, "", "generation", true);
  if (ckpt.generation == 0) fields.refuse("generation", "a generation number from 1", manifest["generation"]);
  fields.number(manifest, "", "unix_time");
  fields.number(manifest, "", "seconds");
  if (manifest.contains("coordinator")) {
    const json& coordinator = manifest["coordinator"];
    if (!coordinator.is_object()) fields.refuse("coordinator", "an object", coordinator);
    fields.text(coordinator, "coordinator.", "host", false);
    fields.unsigned_number(coordinator, "coordinator.", "port", false, 65535);
  }
  if (manifest.contains("parents")) {
    const json& parents = manifest["parents"];
    if (!parents.is_array()) fields.refuse("parents", "an array of generation numbers", parents);
    for (size_t i = 0; i < parents.size(); i++)
      if (!parents[i].is_number_unsigned())
        fields.refuse(fmt::format("parents[{}]", i), "a generation number", parents[i]);
  }

  const json& processes = fields.field(manifest, "", "processes", true, "a non-empty array of processes");
  if (!processes.is_array() || processes.empty())
    fields.refuse("processes", "a non-empty array of processes", processes);
  std::set<std::string> seen;
  for (size_t i = 0; i < processes.size(); i++) {
    const json& process = processes[i];
    std::string at = fmt::format("processes[{}].", i);
    if (!process.is_object()) fields.refuse(fmt::format("processes[{}]", i), "an object", process);
    std::string image = fields.text(process, at, "image", true);
    if (!is_plain_file_name(image))
      fields.refuse(at + "image", fmt::format("the name of an image file in {}", dir.string()), process["image"]);
    if (!seen.insert(image).second)
      fields.refuse(at + "image", "an image no other process names", process["image"]);
    fields.unsigned_number(process, at, "pid", false, UINT32_MAX);
    fields.unsigned_number(process, at, "original_pid", false, UINT32_MAX);
    fields.unsigned_number(process, at, "image_bytes", false);
    fields.unsigned_number(process, at, "memory_bytes", false);
    fields.unsigned_number(process, at, "parent_generation", false);
    fields.text(process, at, "program", false);
    std::string host = fields.text(process, at, "host", false);
    std::string address = fields.text(process, at, "address", false);
    std::string pid_space = fields.text(process, at, "pid_space", false);
    if (pid_space.find_first_of("@,") != std::string::npos || pid_space.find('\0') != std::string::npos)
      fields.refuse(at + "pid_space", "a pid space name (no '@', ',' or NUL)", process["pid_space"]);
    std::pair<uint32_t, uint32_t> srun{0, 0};
    if (process.contains("srun")) {
      const json& of = process["srun"];
      if (!of.is_object()) fields.refuse(at + "srun", "an object (srun's vpid and parent)", of);
      srun = {static_cast<uint32_t>(fields.unsigned_number(of, at + "srun.", "vpid", true, UINT32_MAX)),
              static_cast<uint32_t>(fields.unsigned_number(of, at + "srun.", "parent", true, UINT32_MAX))};
      if (srun.first == 0 || srun.second == 0) fields.refuse(at + "srun", "two process numbers above 0", of);
    }
    ckpt.sruns.push_back(srun);
    ckpt.images.push_back(dir / image);
    ckpt.hosts.push_back(address.empty() ? host : address);
    ckpt.pid_spaces.push_back(pid_space);
  }
  return ckpt;
}

Checkpoint load_checkpoint(const fs::path& given) {
  fs::path dir = given;
  if (!fs::exists(dir)) throw Error(fmt::format("{} does not exist", given.string()));
  if (fs::is_regular_file(dir) && dir.extension() == ".stasis")
    throw Error(fmt::format("{} is an image; pass its checkpoint directory ({})", given.string(),
                            dir.parent_path().string()));
  if (!fs::exists(dir / "MANIFEST.json")) {
    fs::path newest;
    if (fs::exists(dir / "latest") && fs::exists(dir / "latest" / "MANIFEST.json")) {
      newest = fs::canonical(dir / "latest");
    } else {
      uint64_t best = 0;
      for (const auto& entry : fs::directory_iterator(dir)) {
        std::string name = entry.path().filename().string();
        if (!is_generation_name(name) || !fs::exists(entry.path() / "MANIFEST.json")) continue;
        if (std::stoull(name) >= best) best = std::stoull(name), newest = entry.path();
      }
    }
    if (newest.empty())
      throw Error(fmt::format("no complete checkpoint in {} (no generation directory has a MANIFEST.json)",
                              given.string()));
    dir = newest;
  }
  dir = fs::absolute(dir).lexically_normal();
  return parse_manifest(read_manifest_text(dir / "MANIFEST.json"), dir);
}

}  // namespace stasis::restart
