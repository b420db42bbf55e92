// RELAY_BATCH payloads (protocol.h): many processes' messages as a few wire messages, built by
// the coordinator (down) and by a host relay (up), read by the other. C++ only: neither side is
// the preloaded runtime.
//
// A message that several processes send or receive alike (every "suspend", and most answers)
// becomes one entry with their ids; a process's own messages keep their order (a message joins
// an earlier identical entry only when the same process has nothing after that entry).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "protocol/protocol.h"

namespace stasis::protocol {

// The relay protocol, named in both directions so that an older relay or coordinator is refused
// by name rather than misread: a relay authenticates with it as its StasisProcessInfo::program,
// and the coordinator's first batch to a relay is one RELAY_JOIN entry (id 0) carrying it.
// 1 (unnamed): an entry per process; 2: aggregated answers (kRelayEntryAllOfMine); 3: a barrier
// sent down once per relay (kRelayEntryFirstJoined), empty CHILDREN lists and relay-checked
// commits folded into aggregated answers.
inline constexpr char kRelayProtocol[] = "stasis-relay/3";

// StasisRelayEntry::flags, upwards: "all `count` of my processes that were given this barrier
// and have not answered it by name gave this same answer" -- no ids follow, so the coordinator
// counts them per relay instead of per process.
inline constexpr uint16_t kRelayEntryAllOfMine = 2;
// StasisRelayEntry::flags, downwards: "to each of my processes whose join was among the first K
// you sent me (and that is still there)" -- one id follows, K, so that a barrier costs the
// coordinator one entry per relay. A relay numbers its processes' joins (1, 2, ...) in the order
// it sends them up, each RELAY_JOIN entry carrying its number as its arg.
inline constexpr uint16_t kRelayEntryFirstJoined = 4;

class RelayBatch {
 public:
  // flags: StasisRelayEntry::flags, which the entry's processes share.
  void add(uint16_t type, uint64_t arg, uint32_t reserved, const void* payload, uint32_t len,
           uint64_t id, uint16_t flags = 0) {
    // The common case first, without building a key: the same message as the one just added
    // (a barrier to every process of a host, or their identical answers); joining the last
    // entry never puts a process's message before one of its own.
    if (!entries_.empty()) {
      Entry& last = entries_.back();
      if (last.type == type && last.flags == flags && last.arg == arg && last.reserved == reserved &&
          last.payload.size() == len && (len == 0 || memcmp(last.payload.data(), payload, len) == 0)) {
        last.ids.push_back(id);
        last_entry_of_[id] = entries_.size() - 1;
        return;
      }
    }
    std::string key(reinterpret_cast<const char*>(&type), sizeof type);
    key.append(reinterpret_cast<const char*>(&flags), sizeof flags);
    key.append(reinterpret_cast<const char*>(&arg), sizeof arg);
    key.append(reinterpret_cast<const char*>(&reserved), sizeof reserved);
    key.append(static_cast<const char*>(payload), len);
    auto last = last_entry_of_.find(id);
    if (auto same = by_content_.find(key); same != by_content_.end()) {
      if (last == last_entry_of_.end() || last->second <= same->second) {
        entries_[same->second].ids.push_back(id);
        last_entry_of_[id] = same->second;
        return;
      }
    }
    size_t index = entries_.size();
    entries_.push_back(Entry{type, flags, arg, reserved, std::string(static_cast<const char*>(payload), len),
                             {id}, 0});
    by_content_[std::move(key)] = index;
    last_entry_of_[id] = index;
  }

  // An aggregated entry (kRelayEntryAllOfMine): `count` processes, no ids; `reserved` is the
  // last ask it covers. Nothing joins it.
  // flags: STASIS_RELAY_ENTRY_IMAGE_CHECKED when every one of them is a relay-checked commit.
  void add_all_of_mine(uint16_t type, uint64_t arg, uint32_t reserved, const void* payload, uint32_t len,
                       uint32_t count, uint16_t flags = 0) {
    entries_.push_back(Entry{type, static_cast<uint16_t>(kRelayEntryAllOfMine | flags), arg, reserved,
                             std::string(static_cast<const char*>(payload), len), {}, count});
  }

  // A message for each of the relay's processes among its first `joins` (kRelayEntryFirstJoined).
  // Nothing joins it.
  void add_first_joined(uint16_t type, uint64_t arg, uint32_t reserved, const void* payload, uint32_t len,
                        uint64_t joins) {
    entries_.push_back(Entry{type, kRelayEntryFirstJoined, arg, reserved,
                             std::string(static_cast<const char*>(payload), len), {joins}, 0});
  }

  bool empty() const { return entries_.empty(); }
  size_t messages() const {
    size_t n = 0;
    for (const Entry& entry : entries_) n += entry.ids.size() + entry.all_count;
    return n;
  }

  // The payloads of the RELAY_BATCH messages that carry everything added, each at most
  // max_payload bytes (an entry with too many ids is split), in order; then empties the batch.
  std::vector<std::string> take(size_t max_payload = STASIS_MAX_PAYLOAD) {
    std::vector<std::string> out(1);
    // An entry's header and payload, for `count` processes, starting a new message if needed.
    auto start_entry = [&](const Entry& entry, uint32_t count, size_t room_after) -> std::string& {
      if (out.back().size() + sizeof(StasisRelayEntry) + entry.payload.size() + room_after > max_payload)
        out.emplace_back();
      StasisRelayEntry header{};
      header.type = entry.type;
      header.flags = entry.flags;
      header.payload_len = static_cast<uint32_t>(entry.payload.size());
      header.arg = entry.arg;
      header.reserved = entry.reserved;
      header.count = count;
      out.back().append(reinterpret_cast<const char*>(&header), sizeof header);
      out.back().append(entry.payload);
      return out.back();
    };
    for (const Entry& entry : entries_) {
      if (entry.all_count > 0) {
        start_entry(entry, entry.all_count, 0);
        continue;
      }
      size_t done = 0;
      while (done < entry.ids.size()) {
        size_t fixed = sizeof(StasisRelayEntry) + entry.payload.size();
        size_t room = out.back().size() + fixed + sizeof(uint64_t) > max_payload
                          ? (max_payload - fixed) / sizeof(uint64_t)
                          : (max_payload - out.back().size() - fixed) / sizeof(uint64_t);
        size_t count = std::min(room, entry.ids.size() - done);
        std::string& bytes = start_entry(entry, static_cast<uint32_t>(count), sizeof(uint64_t));
        bytes.append(reinterpret_cast<const char*>(entry.ids.data() + done), count * sizeof(uint64_t));
        done += count;
      }
    }
    entries_.clear();
    by_content_.clear();
    last_entry_of_.clear();
    if (out.back().empty()) out.pop_back();
    return out;
  }

 private:
  struct Entry {
    uint16_t type;
    uint16_t flags;
    uint64_t arg;
    uint32_t reserved;
    std::string payload;
    std::vector<uint64_t> ids;
    uint32_t all_count = 0;  // an aggregated entry: this many processes, no ids
  };
  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> by_content_;
  std::unordered_map<uint64_t, size_t> last_entry_of_;
};

// Calls visit(entry, payload, ids) for each entry of a RELAY_BATCH payload, in order (ids is one
// vector, refilled for each entry: no allocation per entry; empty for an aggregated entry). Returns "" or, for a malformed
// payload, what is wrong with it (nothing after the fault is visited).
template <typename Visit>
std::string for_each_relay_entry(const uint8_t* data, size_t len, Visit&& visit) {
  size_t at = 0;
  std::vector<uint64_t> ids;
  while (at < len) {
    StasisRelayEntry entry;
    if (len - at < sizeof entry) return "a relay batch ends inside an entry's header";
    memcpy(&entry, data + at, sizeof entry);
    at += sizeof entry;
    bool aggregated = (entry.flags & kRelayEntryAllOfMine) != 0;
    uint64_t ids_bytes = aggregated ? 0 : uint64_t{entry.count} * sizeof(uint64_t);
    if (entry.count == 0 || entry.payload_len > len - at || ids_bytes > len - at - entry.payload_len)
      return "a relay batch entry is longer than the batch, or names no process";
    const uint8_t* payload = data + at;
    at += entry.payload_len;
    ids.resize(aggregated ? 0 : entry.count);
    memcpy(ids.data(), data + at, ids_bytes);
    at += ids_bytes;
    visit(entry, payload, ids);
  }
  return "";
}

}  // namespace stasis::protocol
