// The coordinator's name service (NS_PUBLISH, NS_LOOKUP, NS_WAIT, NS_LIST, NS_WITHDRAW; see
// protocol/protocol.h): a key/value directory through which processes meet (InfiniBand queue pair
// numbers, the hosts of a multi-host restart). It knows connections only by id and answers with
// the replies to send, so it runs (and is tested) without sockets.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/protocol.h"

namespace stasis::coordinator {

class NameService {
 public:
  // An NS_REPLY to send: header.arg = arg, header.reserved = status, payload.
  struct Reply {
    uint64_t client = 0;
    uint64_t arg = 0;
    uint32_t status = 0;  // 0 found; 1 not found (or an NS_LIST too long for one message)
    std::string payload;
    bool operator==(const Reply&) const = default;
  };

  static bool is_request(uint16_t type) {
    return type == STASIS_MSG_NS_PUBLISH || type == STASIS_MSG_NS_LOOKUP ||
           type == STASIS_MSG_NS_WAIT || type == STASIS_MSG_NS_LIST ||
           type == STASIS_MSG_NS_WITHDRAW;
  }

  // One request from `client`. Entries a process publishes belong to it; a command's stay until
  // replaced. Returns the replies: to the requester, or to those waiting for a published key.
  std::vector<Reply> handle(uint64_t client, bool is_process, const StasisMsgHeader& header,
                            const uint8_t* payload);

  std::vector<Reply> publish(uint64_t client, bool is_process, const std::string& key,
                             std::string value);
  // NS_LOOKUP, or with `wait` NS_WAIT: nothing to send until the key is published.
  std::vector<Reply> lookup(uint64_t client, uint64_t arg, const std::string& key, bool wait);
  Reply list(uint64_t client, uint64_t arg, const std::string& prefix) const;
  // Removes the entries `client` published under `prefix` (still its own).
  void withdraw(uint64_t client, const std::string& prefix);
  // The connection closed: its entries and its waits go.
  void forget(uint64_t client);

 private:
  struct Entry {
    std::string value;
    uint64_t owner = 0;  // the process that published it (0: a command)
  };
  struct Waiter {
    uint64_t client = 0, arg = 0;
  };
  std::map<std::string, Entry> entries_;        // ordered: NS_LIST walks a prefix
  std::multimap<std::string, Waiter> waiters_;  // NS_WAIT for keys not published yet
  // Keys each process published (some may have been published again by another since).
  std::unordered_map<uint64_t, std::vector<std::string>> published_;
};

}  // namespace stasis::coordinator
