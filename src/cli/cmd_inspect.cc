// `stasis inspect IMAGE [--json]`: decode an image and verify every checksum.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "image/reader.h"

namespace stasis::cli {
namespace {

std::string prot_text(uint32_t prot) {
  return fmt::format("{}{}{}", prot & 1 ? 'r' : '-', prot & 2 ? 'w' : '-', prot & 4 ? 'x' : '-');
}

nlohmann::json to_json(const image::Image& img) {
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
                   {"compression", image::compression_name(h.compression)}};
  out["process"] = {{"pid", p.pid},   {"original_pid", p.original_pid}, {"ppid", p.ppid},
                    {"comm", p.comm}, {"exe", p.exe},                   {"cwd", p.cwd},
                    {"hostname", p.hostname}, {"uid", p.uid},           {"umask", fmt::format("{:04o}", p.umask)},
                    {"generation", p.generation}, {"checkpoint_signal", p.checkpoint_signal},
                    {"brk", fmt::format("{:#x}", p.mm.brk)}};
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
  json regions = json::array();
  uint64_t memory = 0;
  for (const auto& region : img.regions()) {
    const auto& r = region.record;
    uint64_t stored = 0;
    for (const auto& pg : region.pages) stored += pg.stored_size;
    memory += r.saved_bytes;
    regions.push_back({{"start", fmt::format("{:#x}", r.start)},
                       {"end", fmt::format("{:#x}", r.end)},
                       {"size", r.end - r.start},
                       {"prot", prot_text(r.prot)},
                       {"kind", image::region_kind_name(r.kind)},
                       {"path", r.path},
                       {"saved_bytes", r.saved_bytes},
                       {"stored_bytes", stored}});
  }
  out["regions"] = regions;
  out["memory_bytes"] = memory;
  json fds = json::array();
  for (const auto& f : img.fds())
    fds.push_back({{"fd", f.fd},
                   {"kind", image::fd_kind_name(f.kind)},
                   {"path", f.path},
                   {"flags", fmt::format("{:#o}", f.flags)},
                   {"offset", f.offset}});
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
    nlohmann::json j = to_json(img);
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
    fmt::print("cpu        xcr0 {:#x}, xsave area {} bytes\n", h.xcr0, h.xsave_size);
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
    }
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
