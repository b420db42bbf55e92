#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "common/error.h"
#include "plugins/ssh/ssh_session.h"

namespace stasis::restore {

namespace {

constexpr const char* kRelayProgram = "stasis-ssh-relay";

// The bytes [start, end) of the process's memory as its image (and the images it builds on) hold them.
std::string saved_memory(const image::Image& img, uint64_t start, uint64_t end) {
  std::string out(end - start, '\0');
  const image::Region* region = nullptr;
  for (const auto& r : img.regions())
    if (r.record.start <= start && end <= r.record.end) region = &r;
  if (!region) throw Error(fmt::format("{}: no saved memory holds the command line at {:#x}", img.path(), start));
  std::vector<image::Image> ancestors = image::open_ancestors(img, false);
  std::vector<char> pages, scratch;
  for (const auto& piece : image::region_pieces(img, ancestors, *region)) {
    uint64_t from = std::max(piece.addr, start), to = std::min(piece.addr + piece.len, end);
    if (from >= to) continue;
    pages.resize(piece.pages->raw_size);
    piece.image->read_pages(*piece.pages, pages.data(), scratch);
    std::memcpy(out.data() + (from - start), pages.data() + (from - piece.pages->addr), to - from);
  }
  return out;
}

}  // namespace

std::vector<std::string> ssh_launcher_of(const image::Image& img) {
  const char* exe = img.process().exe;
  const char* base = std::strrchr(exe, '/');
  if (std::strcmp(base ? base + 1 : exe, kRelayProgram) != 0) return {};
  const StasisMmLayout& mm = img.process().mm;
  if (mm.arg_end <= mm.arg_start || mm.arg_end - mm.arg_start > (1 << 20))
    throw Error(fmt::format("{}: the ssh relay's command line bounds {:#x}-{:#x} are not plausible", img.path(),
                            mm.arg_start, mm.arg_end));
  std::string text = saved_memory(img, mm.arg_start, mm.arg_end);
  std::vector<std::string> argv;
  for (size_t at = 0; at < text.size();) {
    size_t nul = text.find('\0', at);
    if (nul == std::string::npos) nul = text.size();
    argv.push_back(text.substr(at, nul - at));
    at = nul + 1;
  }
  if (std::find(argv.begin(), argv.end(), "--serve") == argv.end()) return {};  // the local half
  std::vector<std::string> words;
  for (size_t i = 1; i + 1 < argv.size() && argv[i] != "--"; i++)
    if (argv[i] == "--ssh") words.push_back(argv[++i]);
    else if (argv[i] != "--serve") i++;
  if (words.empty())
    throw Error(fmt::format("{}: the ssh relay's command line names no ssh to reach it again", img.path()));
  words.push_back("-n");  // no input: the part's processes get theirs through the relay's connection
  return words;
}

}  // namespace stasis::restore
