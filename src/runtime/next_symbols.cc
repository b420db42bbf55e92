// Resolution of the wrappers' libc functions in one pass over the objects behind the runtime.
//
// Every wrapper file's constructor looks up the functions it wraps: 60-odd names at the start of
// every process. dlsym(RTLD_NEXT) takes the dynamic linker's lock and walks its generic lookup for
// each (about 0.5 us a name here, 20-30 us a process). Here the objects that follow the runtime
// in the link-map chain are listed once, with their dynamic sections, and each name is looked up
// in their GNU hash tables directly. At preload time every loaded object is an initial one, whose
// chain order is the global scope's: the order RTLD_NEXT searches. The match rules are glibc's for
// an unversioned dlsym: a defined, global or weak symbol; in a versioned object the unversioned
// definition first, else the one default (non-hidden) version. Anything this cannot settle the
// same way (an indirect function, whose resolver must run; a thread-local; an object with no GNU
// hash table) returns nullptr and the caller asks dlsym, so the answer is never a different one.
#include "runtime/next_symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <sys/auxv.h>

namespace stasis::rt {
namespace {

struct ObjectSymbols {
  ElfW(Addr) base;
  const ElfW(Sym)* symbols;
  const char* names;
  const ElfW(Half)* versions;  // null: the object is not versioned
  const uint32_t* gnu_hash;
};

// Under 1 KiB in all, so the table stays among the small variables the start touches anyway
// (CMakeLists.txt: larger objects go to .lbss, a page of its own to fault in). A program with
// more libraries behind the runtime is served by dlsym.
constexpr int kMaxObjects = 24;
static_assert(sizeof(ObjectSymbols) * kMaxObjects < 1024);
ObjectSymbols g_objects[kMaxObjects];  // only written while listing
int g_object_count = 0;
// 0: not listed yet; 1: listed; 2: some object cannot be searched here (dlsym for every name).
int g_listing = 0;

// glibc relocates these dynamic entries in place on x86-64; an object whose section was left
// read-only (other architectures) still holds offsets from its base.
ElfW(Addr) absolute(ElfW(Addr) value, ElfW(Addr) base) { return value < base ? value + base : value; }

bool describe(const struct link_map* map, ObjectSymbols& object) {
  object = {};
  object.base = map->l_addr;
  for (const ElfW(Dyn)* entry = map->l_ld; entry && entry->d_tag != DT_NULL; entry++) {
    const ElfW(Addr) where = absolute(entry->d_un.d_ptr, map->l_addr);
    switch (entry->d_tag) {
    case DT_SYMTAB: object.symbols = reinterpret_cast<const ElfW(Sym)*>(where); break;
    case DT_STRTAB: object.names = reinterpret_cast<const char*>(where); break;
    case DT_VERSYM: object.versions = reinterpret_cast<const ElfW(Half)*>(where); break;
    case DT_GNU_HASH: object.gnu_hash = reinterpret_cast<const uint32_t*>(where); break;
    default: break;
    }
  }
  return object.symbols && object.names && object.gnu_hash;
}

bool same_name(const char* a, const char* b) {
  while (*a && *a == *b) a++, b++;
  return *a == *b;
}

void list_objects_behind_runtime() {
  Dl_info info;
  struct link_map* self = nullptr;
  if (dladdr1(reinterpret_cast<void*>(&find_next_definition), &info, reinterpret_cast<void**>(&self),
              RTLD_DL_LINKMAP) == 0 || self == nullptr) {
    g_listing = 2;
    return;
  }
  // The vdso is in the chain but not in the global scope: its clock_gettime is not libc's.
  const ElfW(Addr) vdso = getauxval(AT_SYSINFO_EHDR);
  int count = 0;
  for (const struct link_map* map = self->l_next; map; map = map->l_next) {
    if ((vdso != 0 && map->l_addr == vdso) || same_name(map->l_name, "linux-vdso.so.1")) continue;
    if (count == kMaxObjects || !describe(map, g_objects[count])) {
      g_listing = 2;
      return;
    }
    count++;
  }
  g_object_count = count;
  g_listing = 1;
}

enum class Found { None, Definition, LeaveToDlsym };

// One object's definition of `name` (hash: the GNU hash of name), glibc's rules for dlsym.
Found look_up_in(const ObjectSymbols& object, const char* name, uint32_t hash, void** address) {
  const uint32_t buckets = object.gnu_hash[0], first_symbol = object.gnu_hash[1];
  const uint32_t bloom_words = object.gnu_hash[2], bloom_shift = object.gnu_hash[3];
  const auto* bloom = reinterpret_cast<const ElfW(Addr)*>(object.gnu_hash + 4);
  const uint32_t* bucket = reinterpret_cast<const uint32_t*>(bloom + bloom_words);
  const uint32_t* chain = bucket + buckets;
  constexpr uint32_t kWordBits = sizeof(ElfW(Addr)) * 8;
  const ElfW(Addr) word = bloom[(hash / kWordBits) & (bloom_words - 1)];
  const ElfW(Addr) bits = (ElfW(Addr){1} << (hash % kWordBits)) |
                          (ElfW(Addr){1} << ((hash >> bloom_shift) % kWordBits));
  if ((word & bits) != bits) return Found::None;
  uint32_t index = bucket[hash % buckets];
  if (index < first_symbol) return Found::None;
  const ElfW(Sym)* versioned = nullptr;  // the default version, when no unversioned one comes
  for (;; index++) {
    const uint32_t chained = chain[index - first_symbol];
    const ElfW(Sym)& symbol = object.symbols[index];
    const unsigned type = ELF64_ST_TYPE(symbol.st_info), bind = ELF64_ST_BIND(symbol.st_info);
    const bool defined = symbol.st_shndx != SHN_UNDEF &&
                         (bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE) &&
                         (type == STT_NOTYPE || type == STT_OBJECT || type == STT_FUNC ||
                          type == STT_COMMON || type == STT_TLS || type == STT_GNU_IFUNC) &&
                         (symbol.st_value != 0 || type == STT_TLS);
    if ((hash | 1) == (chained | 1) && defined && same_name(name, object.names + symbol.st_name)) {
      const ElfW(Half) version = object.versions ? object.versions[index] : 0;
      if ((version & 0x7fff) < 2) {
        if (type == STT_GNU_IFUNC || type == STT_TLS) return Found::LeaveToDlsym;
        *address = reinterpret_cast<void*>(object.base + symbol.st_value);
        return Found::Definition;
      }
      if ((version & 0x8000) == 0) {
        if (versioned) return Found::LeaveToDlsym;  // two default versions: let glibc decide
        versioned = &symbol;
      }
    }
    if (chained & 1) break;
  }
  if (!versioned) return Found::None;
  const unsigned type = ELF64_ST_TYPE(versioned->st_info);
  if (type == STT_GNU_IFUNC || type == STT_TLS) return Found::LeaveToDlsym;
  *address = reinterpret_cast<void*>(object.base + versioned->st_value);
  return Found::Definition;
}

// The listing needs the dynamic linker (dladdr1, which takes its lock), so it is made here, before
// the runtime's other constructors and before the program runs; from then on a lookup only reads
// (the wrappers resolve on first call, maybe in a signal handler). A wrapper called from another
// library's constructor, earlier, lists on the spot, as dlsym would have looked up on the spot.
__attribute__((constructor(101))) void list_objects_at_load() {
  if (g_listing == 0) list_objects_behind_runtime();
}

}  // namespace

void* find_next_definition(const char* name) {
  if (g_listing == 0) list_objects_behind_runtime();
  if (g_listing != 1) return nullptr;
  uint32_t hash = 5381;
  for (const char* c = name; *c; c++) hash = hash * 33 + static_cast<unsigned char>(*c);
  for (int i = 0; i < g_object_count; i++) {
    void* address = nullptr;
    switch (look_up_in(g_objects[i], name, hash, &address)) {
    case Found::Definition: return address;
    case Found::LeaveToDlsym: return nullptr;
    case Found::None: break;
    }
  }
  return nullptr;
}

void* resolve_next_definition(const char* name) {
  void* found = find_next_definition(name);
  return found ? found : dlsym(RTLD_NEXT, name);
}

}  // namespace stasis::rt
