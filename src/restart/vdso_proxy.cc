// Restart under another kernel (the approach CRIU calls a vdso proxy): the program and its libc
// hold pointers into the vdso it started with (glibc keeps __vdso_clock_gettime & co. from its
// start-up), and that vdso's code reads a vvar page whose layout belongs to its kernel. So the
// saved vdso bytes go back at their address with every exported function's entry replaced by a
// jump to the same function of the running kernel's vdso, which keeps its own vvar next to it.
#include "restart/vdso_proxy.h"

#include <elf.h>
#include <sys/auxv.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include <fmt/format.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/error.h"

namespace stasis::restart {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kJumpBytes = 12;     // 48 b8 imm64 (movabs $x, %rax); ff e0 (jmp *%rax)
constexpr uint64_t kSyscallBytes = 8;   // b8 imm32 (mov $nr, %eax); 0f 05 (syscall); c3 (ret),
                                        // or 48 c7 c0 imm32 (mov $-errno, %rax); c3 (ret)

// What each vdso function does without the vdso: the same arguments, the system call's number.
// (getrandom's vdso form takes two more arguments, an opaque state the syscall ignores.)
const std::map<std::string, long> kSyscallOf = {
    {"clock_gettime", 228}, {"gettimeofday", 96}, {"time", 201},
    {"getcpu", 309},        {"clock_getres", 229}, {"getrandom", 318},
};

// Services some kernels' vdsos offer and others lack, with no system call to stand for them: a
// program that never used them keeps running; one that calls them is told the kernel has none.
const std::map<std::string, long> kErrnoOf = {
    {"sgx_enter_enclave", 38 /* ENOSYS */},
};

std::string plain_name(std::string name) {
  if (name.starts_with("__vdso_")) name = name.substr(7);
  return name;
}

template <typename T>
const T* at(const unsigned char* bytes, size_t len, uint64_t offset, uint64_t count, const std::string& what,
            const char* part) {
  if (offset > len || count > (len - offset) / sizeof(T))
    throw Error(fmt::format("{}: the vdso's {} lies outside its {} bytes", what, part, len));
  return reinterpret_cast<const T*>(bytes + offset);
}

}  // namespace

std::vector<VdsoFunction> vdso_functions(const unsigned char* bytes, size_t len, const std::string& what) {
  const auto* eh = at<Elf64_Ehdr>(bytes, len, 0, 1, what, "ELF header");
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_machine != EM_X86_64)
    throw Error(fmt::format("{}: the saved vdso is not an x86-64 ELF image", what));
  if (eh->e_shentsize != sizeof(Elf64_Shdr))
    throw Error(fmt::format("{}: the vdso has no section table this reader knows", what));
  const auto* sections = at<Elf64_Shdr>(bytes, len, eh->e_shoff, eh->e_shnum, what, "section table");
  // The vdso is linked at address 0 and mapped whole, so addresses are offsets from its start.
  // Its dynamic symbol table names what it exports.
  std::vector<VdsoFunction> out;
  for (unsigned i = 0; i < eh->e_shnum; i++) {
    const Elf64_Shdr& sh = sections[i];
    if (sh.sh_type != SHT_DYNSYM) continue;
    if (sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_link >= eh->e_shnum)
      throw Error(fmt::format("{}: the vdso's symbol table is malformed", what));
    const Elf64_Shdr& strings = sections[sh.sh_link];
    const auto* syms = at<Elf64_Sym>(bytes, len, sh.sh_offset, sh.sh_size / sizeof(Elf64_Sym), what, "symbol table");
    const auto* names = at<char>(bytes, len, strings.sh_offset, strings.sh_size, what, "string table");
    for (uint64_t s = 0; s < sh.sh_size / sizeof(Elf64_Sym); s++) {
      const Elf64_Sym& sym = syms[s];
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF) continue;
      if (sym.st_name >= strings.sh_size || sym.st_value >= len)
        throw Error(fmt::format("{}: a vdso symbol lies outside the vdso", what));
      const char* name = names + sym.st_name;
      size_t max = strings.sh_size - sym.st_name;
      out.push_back({std::string(name, strnlen(name, max)), sym.st_value, sym.st_size});
    }
  }
  if (out.empty()) throw Error(fmt::format("{}: the vdso exports no function", what));
  return out;
}

uint64_t KernelVdso::span() const {
  if (mappings.empty()) return 0;
  return mappings.back().end - mappings.front().start;
}

KernelVdso own_kernel_vdso() {
  KernelVdso v;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    uint64_t start = 0, end = 0;
    if (sscanf(line.c_str(), "%lx-%lx", &start, &end) != 2) continue;
    for (const char* name : {"[vvar]", "[vvar_vclock]", "[vdso]"})
      if (line.ends_with(name)) v.mappings.push_back({name, start, end});
    if (line.ends_with("[vdso]")) {
      v.vdso_start = start, v.vdso_end = end;
      v.checksum = XXH3_64bits(reinterpret_cast<void*>(start), end - start);
    }
  }
  std::sort(v.mappings.begin(), v.mappings.end(), [](auto& a, auto& b) { return a.start < b.start; });
  return v;
}

bool same_vdso(const image::Image& img, const KernelVdso& own) {
  const StasisVdsoLayout& saved = img.process().vdso;
  if (!saved.vdso_start) return true;  // the program had none
  uint64_t vvar = 0, vclock = 0;
  for (const auto& m : own.mappings) {
    if (m.name == "[vvar]") vvar = m.end - m.start;
    if (m.name == "[vvar_vclock]") vclock = m.end - m.start;
  }
  return saved.vdso_end - saved.vdso_start == own.vdso_end - own.vdso_start &&
         saved.vvar_end - saved.vvar_start == vvar &&
         saved.vvar_vclock_end - saved.vvar_vclock_start == vclock && saved.vdso_checksum == own.checksum;
}

uint64_t free_range_below(const std::vector<std::pair<uint64_t, uint64_t>>& taken, uint64_t len,
                          uint64_t below) {
  constexpr uint64_t kLowest = 0x10000;  // vm.mmap_min_addr's usual value
  if (below < kLowest + len) return 0;
  uint64_t candidate = (below - len) & ~(kPage - 1);
  for (;;) {
    if (candidate < kLowest) return 0;
    bool moved = false;
    for (const auto& [start, end] : taken)
      if (start < candidate + len && end > candidate) {
        if (start < kLowest + len) return 0;
        candidate = (start - len) & ~(kPage - 1);
        moved = true;
      }
    if (!moved) return candidate;
  }
}

StasisVdsoProxy plan_vdso_proxy(const image::Image& img, const KernelVdso& own) {
  const std::string& what = img.path();
  const StasisVdsoLayout& saved = img.process().vdso;
  const auto& text = img.vdso_text();
  if (text.empty())
    throw Error(fmt::format("{} was taken under a kernel with another vdso, by a Stasis that did not "
                            "save the vdso; restart it on a machine running the checkpoint's kernel",
                            what));
  if (img.vdso_text_address() != saved.vdso_start || text.size() != saved.vdso_end - saved.vdso_start)
    throw Error(fmt::format("{} is corrupt: its vdso bytes do not match the vdso it records", what));
  if (own.vdso_start == 0 || own.mappings.empty())
    throw Error(fmt::format("{} needs a vdso, and this kernel gives none", what));

  const auto old_functions = vdso_functions(text.data(), text.size(), what);
  const auto new_functions =
      vdso_functions(reinterpret_cast<const unsigned char*>(own.vdso_start), own.vdso_end - own.vdso_start,
                     "this kernel's vdso");
  std::map<std::string, uint64_t> new_offsets;
  for (const auto& f : new_functions) new_offsets[plain_name(f.name)] = f.offset;

  StasisVdsoProxy proxy = {};
  proxy.active = 1;
  proxy.text_len = text.size();
  std::memcpy(proxy.text, text.data(), text.size());
  // One patch per entry point (names that share an entry are one function).
  std::map<uint64_t, const VdsoFunction*> entries;
  for (const auto& f : old_functions) entries.emplace(f.offset, &f);
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    const VdsoFunction& f = *it->second;
    const std::string name = plain_name(f.name);
    StasisVdsoPatch patch = {};
    patch.old_offset = static_cast<uint32_t>(f.offset);
    uint64_t need = kJumpBytes;
    if (auto found = new_offsets.find(name); found != new_offsets.end()) {
      patch.kind = STASIS_VDSO_JUMP;
      patch.target = found->second;
    } else if (auto nr = kSyscallOf.find(name); nr != kSyscallOf.end()) {
      patch.kind = STASIS_VDSO_SYSCALL;
      patch.target = static_cast<uint64_t>(nr->second);
      need = kSyscallBytes;
    } else if (auto err = kErrnoOf.find(name); err != kErrnoOf.end()) {
      patch.kind = STASIS_VDSO_FAIL;
      patch.target = static_cast<uint64_t>(err->second);
      need = kSyscallBytes;
    } else {
      throw Error(fmt::format("{}: the program's vdso offers {}, which this kernel's vdso lacks and "
                              "Stasis cannot stand in for; restart it on the checkpoint's kernel",
                              what, f.name));
    }
    auto next = std::next(it);
    uint64_t room = f.size ? f.size : (next != entries.end() ? next->first : text.size()) - f.offset;
    if (room < need || f.offset + need > text.size())
      throw Error(fmt::format("{}: the vdso function {} is too short ({} bytes) to redirect", what,
                              f.name, room));
    if (proxy.patch_count == STASIS_MAX_VDSO_PATCHES)
      throw Error(fmt::format("{}: the vdso exports more than {} functions", what, STASIS_MAX_VDSO_PATCHES));
    proxy.patches[proxy.patch_count++] = patch;
  }

  // The kernel's own mappings go where nothing of the program will be.
  std::vector<std::pair<uint64_t, uint64_t>> taken;
  for (const auto& region : img.regions()) taken.emplace_back(region.record.start, region.record.end);
  for (auto [s, e] : {std::pair{saved.vvar_start, saved.vvar_end},
                      std::pair{saved.vvar_vclock_start, saved.vvar_vclock_end},
                      std::pair{saved.vdso_start, saved.vdso_end}})
    if (s) taken.emplace_back(s, e);
  taken.emplace_back(STASIS_LOADER_BASE, STASIS_LOADER_LIMIT);
  uint64_t lowest_saved = saved.vdso_start;
  for (uint64_t s : {saved.vvar_start, saved.vvar_vclock_start})
    if (s && s < lowest_saved) lowest_saved = s;
  // A guard page on each side keeps them from touching the program's mappings.
  proxy.new_base = free_range_below(taken, own.span() + 2 * kPage, lowest_saved);
  if (proxy.new_base == 0)
    throw Error(fmt::format("{}: no free address range for this kernel's vdso", what));
  proxy.new_base += kPage;
  return proxy;
}

}  // namespace stasis::restart
