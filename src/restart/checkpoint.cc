#include "restart/checkpoint.h"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace fs = std::filesystem;

namespace stasis::restart {
namespace {

bool is_generation_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), ::isdigit);
}

}  // namespace

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
  Checkpoint ckpt;
  ckpt.dir = fs::absolute(dir).lexically_normal();
  nlohmann::json manifest;
  try {
    std::ifstream in(dir / "MANIFEST.json");
    manifest = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}/MANIFEST.json is unreadable: {}", dir.string(), e.what()));
  }
  if (manifest.value("format", "") != "stasis-checkpoint" || !manifest.value("complete", false))
    throw Error(fmt::format("{}/MANIFEST.json does not describe a complete Stasis checkpoint", dir.string()));
  ckpt.generation = manifest.value("generation", 0ull);
  for (const auto& process : manifest.at("processes")) {
    ckpt.images.push_back(ckpt.dir / process.at("image").get<std::string>());
    std::string address = process.value("address", "");
    ckpt.hosts.push_back(address.empty() ? process.value("host", "") : address);
  }
  return ckpt;
}

}  // namespace stasis::restart
