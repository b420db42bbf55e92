// `stasis inspect IMAGE [--json]`: decode an image and verify every checksum.
#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "plugins/threads/restore_xsave.h"
#include "image/reader.h"
#include "plugins/files/restore.h"

namespace stasis::cli {
namespace {

std::string prot_text(uint32_t prot) {
  return fmt::format("{}{}{}", prot & 1 ? 'r' : '-', prot & 2 ? 'w' : '-', prot & 4 ? 'x' : '-');
}

// The madvise names of StasisMemoryMarkBits, e.g. "dontfork wipeonfork".
std::string memory_marks_text(uint32_t marks) {
  static const std::pair<uint32_t, const char*> kNames[] = {
      {STASIS_MARK_DONTFORK, "dontfork"},   {STASIS_MARK_WIPEONFORK, "wipeonfork"},
      {STASIS_MARK_DONTDUMP, "dontdump"},   {STASIS_MARK_HUGEPAGE, "hugepage"},
      {STASIS_MARK_NOHUGEPAGE, "nohugepage"}, {STASIS_MARK_MERGEABLE, "mergeable"}};
  std::string text;
  for (const auto& [bit, name] : kNames)
    if (marks & bit) text += (text.empty() ? "" : " ") + std::string(name);
  return text;
}

// Where an increment's region gets its bytes: per generation of the chain, and its holes.
struct RegionSources {
  std::map<uint64_t, uint64_t> bytes_by_generation;  // newest first when printed
  uint64_t hole_bytes = 0;
};

RegionSources region_sources(const image::Image& img, const std::vector<image::Image>& ancestors,
                             const image::Region& region) {
  RegionSources out;
  for (const auto& piece : image::region_pieces(img, ancestors, region))
    out.bytes_by_generation[piece.image->process().generation] += piece.len;
  for (const auto& hole : region.holes) out.hole_bytes += hole.len;
  return out;
}

std::string sources_text(const RegionSources& sources) {
  std::string text;
  for (auto it = sources.bytes_by_generation.rbegin(); it != sources.bytes_by_generation.rend(); ++it)
    text += fmt::format("{}gen {}: {} bytes", text.empty() ? "" : ", ", it->first, it->second);
  if (sources.hole_bytes) text += fmt::format("{}holes (zero): {} bytes", text.empty() ? "" : ", ", sources.hole_bytes);
  return text.empty() ? "no pages" : text;
}

// The chain an increment builds on, newest first: this image, then each parent.
nlohmann::json chain_json(const image::Image& img, const std::vector<image::Image>& ancestors) {
  nlohmann::json chain = nlohmann::json::array();
  auto member = [](const image::Image& image) {
    const StasisParentRecord* parent = image.parent();
    return nlohmann::json{{"generation", image.process().generation},
                          {"image", image.path()},
                          {"kind", parent ? "increment" : "full"},
                          {"depth", parent ? parent->depth : 0},
                          {"checksums", "verified"}};
  };
  chain.push_back(member(img));
  for (const auto& ancestor : ancestors) chain.push_back(member(ancestor));
  return chain;
}

nlohmann::json to_json(const image::Image& img, const std::vector<image::Image>& ancestors) {
  using nlohmann::json;
  const auto& h = img.header();
  const auto& p = img.process();
  json out;
  out["image"] = img.path();
  out["file_bytes"] = img.file_size();
  out["header"] = {{"format_version", h.format_version},
                   {"producer", h.producer},
                   {"arch", h.arch},
                   {"created_unix_ns", h.created_unix_ns},
                   {"xcr0", fmt::format("{:#x}", h.xcr0)},
                   {"xsave_size", h.xsave_size},
                   {"xfeatures_in_use", img.cpu_state() ? fmt::format("{:#x}", img.cpu_state()->xfeatures_in_use)
                                                        : fmt::format("{:#x}", h.xcr0)},
                   {"compression", image::compression_name(h.compression)}};
  out["process"] = {{"pid", p.pid},   {"original_pid", p.original_pid}, {"ppid", p.ppid},
                    {"comm", p.comm}, {"exe", p.exe},                   {"cwd", p.cwd},
                    {"hostname", p.hostname}, {"uid", p.uid},           {"umask", fmt::format("{:04o}", p.umask)},
                    {"generation", p.generation}, {"checkpoint_signal", p.checkpoint_signal},
                    {"brk", fmt::format("{:#x}", p.mm.brk)}};
  const StasisVdsoLayout& v = p.vdso;
  out["vdso"] = {{"vdso", fmt::format("{:#x}-{:#x}", v.vdso_start, v.vdso_end)},
                 {"vvar", fmt::format("{:#x}-{:#x}", v.vvar_start, v.vvar_end)},
                 {"vvar_vclock", fmt::format("{:#x}-{:#x}", v.vvar_vclock_start, v.vvar_vclock_end)},
                 {"checksum", fmt::format("{:#018x}", v.vdso_checksum)},
                 {"saved_bytes", img.vdso_text().size()}};
  json threads = json::array();
  for (const auto& t : img.threads())
    threads.push_back({{"tid", t.tid},
                       {"name", t.name},
                       {"leader", t.is_leader != 0},
                       {"checkpoint_thread", t.is_checkpoint_thread != 0},
                       {"fs_base", fmt::format("{:#x}", t.fs_base)},
                       {"rseq", t.rseq_addr ? fmt::format("{:#x}", t.rseq_addr) : ""},
                       {"blocked_syscall", t.blocked_syscall}});
  out["threads"] = threads;
  if (const StasisParentRecord* parent = img.parent()) {
    out["parent"] = {{"generation", parent->parent_generation},
                     {"image", parent->parent_image},
                     {"depth", parent->depth},
                     {"chain_id", fmt::format("{:#018x}", parent->chain_id)}};
    out["chain"] = chain_json(img, ancestors);
  }
  json regions = json::array();
  uint64_t memory = 0;
  for (const auto& region : img.regions()) {
    const auto& r = region.record;
    uint64_t stored = 0;
    json stored_as = json::object();  // PAGES records by compression
    for (const auto& pg : region.pages) {
      stored += pg.stored_size;
      const char* name = image::compression_name(pg.compression);
      stored_as[name] = stored_as.value(name, 0) + 1;
    }
    memory += r.saved_bytes;
    regions.push_back({{"start", fmt::format("{:#x}", r.start)},
                       {"end", fmt::format("{:#x}", r.end)},
                       {"size", r.end - r.start},
                       {"prot", prot_text(r.prot)},
                       {"kind", image::region_kind_name(r.kind)},
                       {"path", r.path},
                       {"saved_bytes", r.saved_bytes},
                       {"stored_bytes", stored},
                       {"stored_as", stored_as}});
    if (img.parent()) {
      RegionSources sources = region_sources(img, ancestors, region);
      json by_generation = json::array();
      for (auto it = sources.bytes_by_generation.rbegin(); it != sources.bytes_by_generation.rend(); ++it)
        by_generation.push_back({{"generation", it->first}, {"bytes", it->second}});
      regions.back()["inherited"] = region.inherited;
      regions.back()["sources"] = by_generation;
      regions.back()["hole_bytes"] = sources.hole_bytes;
    }
  }
  out["regions"] = regions;
  json marks = json::array();
  for (const StasisMemoryMark& m : img.memory_marks())
    marks.push_back({{"start", fmt::format("{:#x}", m.start)},
                     {"end", fmt::format("{:#x}", m.end)},
                     {"marks", memory_marks_text(m.marks)}});
  out["memory_marks"] = marks;
  out["memory_bytes"] = memory;
  json fds = json::array();
  for (const auto& f : img.fds()) {
    json fd = {{"fd", f.fd},
               {"kind", image::fd_kind_name(f.kind)},
               {"path", f.path},
               {"flags", fmt::format("{:#o}", f.flags)},
               {"offset", f.offset}};
    if (f.same_description_as >= 0) fd["same_description_as"] = f.same_description_as;
    fd["owner"] = {{"pid", f.owner_pid}, {"fd", f.owner_fd}};
    // The kind's own state by name (its folder's describe, through the restore table).
    if (json state = restore::describe_descriptor(img, f); !state.empty()) fd["state"] = state;
    fds.push_back(fd);
  }
  out["fds"] = fds;
  out["checksums"] = "verified";
  return out;
}

class InspectCommand : public Command {
 public:
  const char* name() const override { return "inspect"; }
  const char* summary() const override {
    return "Describe an image file and verify its checksums";
  }
  void configure(CLI::App& app) override {
    app.add_option("image", path_, "An image file (CKPT_DIR/<generation>/<program>-<pid>.stasis)")->required();
    app.add_flag("--json", json_, "Print JSON");
  }
  int run() override {
    image::Image img = image::Image::open(path_, /*verify_payloads=*/true);
    // An increment is only as good as its chain: every parent is verified too (a missing,
    // damaged or replaced one fails the command, naming it).
    std::vector<image::Image> ancestors = image::open_ancestors(img, /*verify_payloads=*/true);
    nlohmann::json j = to_json(img, ancestors);
    if (json_) {
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    const auto& h = img.header();
    fmt::print("image      {} ({} bytes, format {}, {}, {} compression)\n", img.path(), img.file_size(),
               h.format_version, h.producer, image::compression_name(h.compression));
    const auto& p = img.process();
    fmt::print("process    pid {} (launched as {}) {} exe {} cwd {}\n", p.pid, p.original_pid, p.comm,
               p.exe, p.cwd);
    fmt::print("cpu        xcr0 {:#x}, xsave area {} bytes; threads hold {}\n", h.xcr0, h.xsave_size,
               img.cpu_state() ? restore::xsave_feature_names(img.cpu_state()->xfeatures_in_use)
                               : "unrecorded (every feature of xcr0 needed)");
    fmt::print("vdso       {:#x}-{:#x}, checksum {:#018x}, {} bytes saved (restart under another kernel {})\n",
               p.vdso.vdso_start, p.vdso.vdso_end, p.vdso.vdso_checksum, img.vdso_text().size(),
               img.vdso_text().empty() ? "refused" : "possible");
    if (const StasisParentRecord* parent = img.parent()) {
      fmt::print("parent     generation {} ({}), increment depth {}, chain {:#018x}\n",
                 parent->parent_generation, parent->parent_image, parent->depth, parent->chain_id);
      std::string chain;
      for (const auto& member : j["chain"])
        chain += fmt::format("{}gen {} ({})", chain.empty() ? "" : " <- ",
                             member["generation"].get<uint64_t>(), member["kind"].get<std::string>());
      fmt::print("chain      {}: every image verified\n", chain);
    }
    fmt::print("threads    {}\n", img.threads().size());
    for (const auto& t : img.threads())
      fmt::print("  tid {:<8} {:<16}{}{}\n", t.tid, t.name, t.is_leader ? " main" : "",
                 t.is_checkpoint_thread ? " stasis-checkpoint-thread" : "");
    fmt::print("regions    {} ({} bytes of memory saved)\n", img.regions().size(),
               j["memory_bytes"].get<uint64_t>());
    for (const auto& region : img.regions()) {
      const auto& r = region.record;
      fmt::print("  {:#014x}-{:#014x} {} {:<12} {:>12} saved {}\n", r.start, r.end, prot_text(r.prot),
                 image::region_kind_name(r.kind), r.saved_bytes, r.path);
      if (region.inherited)  // pages of this image, of older ones, and holes
        fmt::print("      inherited: {}\n", sources_text(region_sources(img, ancestors, region)));
    }
    for (const StasisMemoryMark& m : img.memory_marks())
      fmt::print("  marked {:#014x}-{:#014x} {}\n", m.start, m.end, memory_marks_text(m.marks));
    fmt::print("fds        {}\n", img.fds().size());
    for (const auto& f : img.fds())
      fmt::print("  {:<4} {:<15} offset {:<10} {}\n", f.fd, image::fd_kind_name(f.kind), f.offset, f.path);
    fmt::print("checksums  verified\n");
    return 0;
  }

 private:
  std::string path_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_inspect_command() { return std::make_unique<InspectCommand>(); }

}  // namespace stasis::cli
