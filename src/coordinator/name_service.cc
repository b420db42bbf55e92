// See name_service.h.
#include "coordinator/name_service.h"

#include <cstring>

namespace stasis::coordinator {

std::vector<NameService::Reply> NameService::handle(uint64_t client, bool is_process,
                                                    const StasisMsgHeader& header,
                                                    const uint8_t* payload) {
  const char* text = reinterpret_cast<const char*>(payload);
  size_t key_len = strnlen(text, header.payload_len);
  std::string key(text, key_len);
  switch (header.type) {
    case STASIS_MSG_NS_PUBLISH: {
      size_t value_start = std::min<size_t>(key_len + 1, header.payload_len);
      return publish(client, is_process, key,
                     std::string(text + value_start, header.payload_len - value_start));
    }
    case STASIS_MSG_NS_WITHDRAW:
      withdraw(client, key);
      return {};
    case STASIS_MSG_NS_LIST:
      return {list(client, header.arg, key)};
    default:  // NS_LOOKUP, NS_WAIT
      return lookup(client, header.arg, key, header.type == STASIS_MSG_NS_WAIT);
  }
}

std::vector<NameService::Reply> NameService::publish(uint64_t client, bool is_process,
                                                     const std::string& key, std::string value) {
  uint64_t owner = is_process ? client : 0;
  Entry& entry = entries_[key];
  entry = {std::move(value), owner};
  if (owner) published_[owner].push_back(key);
  std::vector<Reply> replies;
  auto [first, last] = waiters_.equal_range(key);
  for (auto it = first; it != last; ++it)
    replies.push_back({it->second.client, it->second.arg, 0, entry.value});
  waiters_.erase(first, last);
  return replies;
}

std::vector<NameService::Reply> NameService::lookup(uint64_t client, uint64_t arg,
                                                    const std::string& key, bool wait) {
  auto it = entries_.find(key);
  if (it != entries_.end()) return {{client, arg, 0, it->second.value}};
  if (wait) {
    waiters_.emplace(key, Waiter{client, arg});
    return {};
  }
  return {{client, arg, 1, ""}};
}

// Each entry under the prefix, in key order: key '\0', the value's length (uint32_t), the value.
NameService::Reply NameService::list(uint64_t client, uint64_t arg,
                                     const std::string& prefix) const {
  std::string reply;
  for (auto it = entries_.lower_bound(prefix);
       it != entries_.end() && it->first.starts_with(prefix); ++it) {
    auto length = static_cast<uint32_t>(it->second.value.size());
    reply.append(it->first).push_back('\0');
    reply.append(reinterpret_cast<const char*>(&length), sizeof length).append(it->second.value);
    if (reply.size() > STASIS_MAX_PAYLOAD) break;
  }
  if (reply.size() > STASIS_MAX_PAYLOAD) return {client, arg, 1, ""};
  return {client, arg, 0, std::move(reply)};
}

void NameService::withdraw(uint64_t client, const std::string& prefix) {
  auto keys = published_.find(client);
  if (keys == published_.end()) return;
  std::erase_if(keys->second, [&](const std::string& key) {
    if (!key.starts_with(prefix)) return false;
    if (auto it = entries_.find(key); it != entries_.end() && it->second.owner == client)
      entries_.erase(it);
    return true;
  });
  if (keys->second.empty()) published_.erase(keys);
}

void NameService::forget(uint64_t client) {
  withdraw(client, "");
  std::erase_if(waiters_, [&](const auto& waiter) { return waiter.second.client == client; });
}

}  // namespace stasis::coordinator
