#include "plugins/memory/restore_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/error.h"
#include "plugins/files/restore.h"
#include "restart/loader_protocol.h"

namespace stasis::restore {
namespace {

bool maps_object(const StasisRegionRecord& r) {
  return r.kind == STASIS_REGION_SHARED_ELSEWHERE || (r.kind == STASIS_REGION_SHARED_ANON && r.file_ino != 0);
}

struct ObjectUse {
  const image::Image* img;
  const image::Region* region;
};

uint64_t object_end(const StasisRegionRecord& r) { return r.file_offset + (r.end - r.start); }

// Every region whose bytes an ancestor saved must lie inside what the saving regions map.
void check_saved_somewhere(const MemoryObjectKey& key, const std::vector<ObjectUse>& uses) {
  for (const auto& use : uses) {
    const auto& r = use.region->record;
    if (r.kind != STASIS_REGION_SHARED_ELSEWHERE) continue;
    uint64_t covered = r.file_offset;
    for (bool progressed = true; progressed && covered < object_end(r);) {
      progressed = false;
      for (const auto& saver : uses) {
        const auto& s = saver.region->record;
        if (s.kind == STASIS_REGION_SHARED_ANON && s.file_offset <= covered && covered < object_end(s)) {
          covered = object_end(s);
          progressed = true;
        }
      }
    }
    if (covered < object_end(r))
      throw Error(fmt::format(
          "{}: the shared memory at {:#x}-{:#x} (object {}:{}) was left to an ancestor to save, and "
          "no image of this checkpoint holds those bytes",
          use.img->path(), r.start, r.end, key.first, key.second));
  }
}

int create_object(const MemoryObjectKey& key, const std::vector<ObjectUse>& uses) {
  uint64_t size = 0;
  for (const auto& use : uses) size = std::max(size, object_end(use.region->record));
  int fd = memfd_create("stasis-shared-memory", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0)
    throw Error(fmt::format("cannot recreate shared memory object {}:{} of {} bytes: {}", key.first,
                            key.second, size, std::strerror(errno)));
  std::vector<char> data, scratch;
  for (const auto& use : uses) {
    const auto& r = use.region->record;
    if (r.kind != STASIS_REGION_SHARED_ANON) continue;
    for (const auto& pages : use.region->pages) {
      data.resize(pages.raw_size);
      use.img->read_pages(pages, data.data(), scratch);
      off_t at = static_cast<off_t>(r.file_offset + (pages.addr - r.start));
      if (pwrite(fd, data.data(), data.size(), at) != static_cast<ssize_t>(data.size()))
        throw Error(fmt::format("cannot fill recreated shared memory: {}", std::strerror(errno)));
    }
  }
  return lift_descriptor(fd);
}

}  // namespace

std::map<MemoryObjectKey, int> create_shared_memory(const std::vector<image::Image>& images) {
  std::map<MemoryObjectKey, std::vector<ObjectUse>> uses;
  for (const auto& img : images)
    for (const auto& region : img.regions())
      if (maps_object(region.record))
        uses[{region.record.file_dev, region.record.file_ino}].push_back({&img, &region});
  std::map<MemoryObjectKey, int> objects;
  for (const auto& [key, list] : uses) {
    bool left_to_others = false;
    for (const auto& use : list) left_to_others |= use.region->record.kind == STASIS_REGION_SHARED_ELSEWHERE;
    if (list.size() < 2 && !left_to_others) continue;  // one mapping: plain shared anonymous memory
    check_saved_somewhere(key, list);
    objects[key] = create_object(key, list);
  }
  return objects;
}

std::map<uint64_t, int> pass_shared_memory(const image::Image& img,
                                           const std::map<MemoryObjectKey, int>& objects, int floor) {
  std::map<uint64_t, int> by_region;
  std::map<MemoryObjectKey, int> passed;
  for (const auto& region : img.regions()) {
    const auto& r = region.record;
    if (!maps_object(r)) continue;
    auto object = objects.find({r.file_dev, r.file_ino});
    if (object == objects.end()) continue;
    auto [it, fresh] = passed.emplace(object->first, -1);
    if (fresh) {
      it->second = fcntl(object->second, F_DUPFD, floor);  // no close-on-exec: the loader's
      if (it->second < 0 || it->second >= STASIS_PID_TABLE_FD)
        throw Error("cannot pass recreated shared memory to the loader: no descriptor number free");
    }
    by_region[r.start] = it->second;
  }
  return by_region;
}

}  // namespace stasis::restore
