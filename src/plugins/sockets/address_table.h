// The addresses of the computation's hosts as the program knows them (from its first run) and
// where those hosts are now, composed over a chain of restarts (src/plugins/sockets/README.md, "Addresses of
// moved hosts"). Used by the runtime's socket wrappers (socket_addresses.cc): fixed storage, no
// allocation, no libc, so it lives in the image and works while user threads are stopped.
#pragma once
#include <stdint.h>

#include "restart/loader_protocol.h"

namespace stasis::rt {

class AddressTable {
 public:
  // At a restart: where every host of the checkpoint is now (`moves`: its address then -> now),
  // composed with the table (the program's address -> the address then). A host the program did
  // not know (it joined after a restart) enters under its address then. False when more hosts
  // than fit: those left out show the program their new addresses.
  bool compose(const StasisAddressMove* moves, uint32_t count) {
    uint32_t before = count_;
    bool fitted = true;
    for (uint32_t m = 0; m < count; m++) {
      bool known = false;
      for (uint32_t i = 0; i < before; i++)
        if (same(hosts_[i].real_address, moves[m].old_address)) {
          __builtin_memcpy(hosts_[i].real_address, moves[m].new_address, 16);
          known = true;
        }
      for (uint32_t i = 0; i < before && !known; i++) known = same(hosts_[i].virtual_address, moves[m].old_address);
      if (known) continue;
      if (count_ == STASIS_MAX_ADDRESS_MOVES) {
        fitted = false;
        continue;
      }
      __builtin_memcpy(hosts_[count_].virtual_address, moves[m].old_address, 16);
      __builtin_memcpy(hosts_[count_].real_address, moves[m].new_address, 16);
      count_++;
    }
    any_moved_ = false;
    for (uint32_t i = 0; i < count_; i++) any_moved_ = any_moved_ || !same(hosts_[i].virtual_address, hosts_[i].real_address);
    return fitted;
  }

  bool any_moved() const { return any_moved_; }

  // Where the program's `address` is now; null when it stays or cannot tell: an address that is
  // both the old one of a moved host and the new one of another (hosts swapped) may have been
  // learnt before the restart or since (from a library, a name lookup), so it goes where it points.
  const uint8_t* real_of_virtual(const uint8_t* address) const {
    const Host* host = known_as(address);
    uint32_t hosts_there;
    if (!host || same(host->real_address, address) || now_at(address, &hosts_there)) return nullptr;
    return host->real_address;
  }

  // The program's address of the host now at `address`; null when it keeps its own or cannot
  // tell (the address also names a host of the program's first run, or several hosts moved there).
  const uint8_t* virtual_of_real(const uint8_t* address) const {
    uint32_t hosts_there;
    const Host* host = now_at(address, &hosts_there);
    if (!host || hosts_there != 1 || known_as(address)) return nullptr;
    return host->virtual_address;
  }

 private:
  struct Host {
    uint8_t virtual_address[16];  // 16-byte form, IPv4 mapped
    uint8_t real_address[16];
  };

  static bool same(const uint8_t* a, const uint8_t* b) { return __builtin_memcmp(a, b, 16) == 0; }

  const Host* known_as(const uint8_t* virtual_address) const {
    for (uint32_t i = 0; i < count_; i++)
      if (same(hosts_[i].virtual_address, virtual_address)) return &hosts_[i];
    return nullptr;
  }

  const Host* now_at(const uint8_t* real_address, uint32_t* hosts) const {
    const Host* found = nullptr;
    *hosts = 0;
    for (uint32_t i = 0; i < count_; i++)
      if (same(hosts_[i].real_address, real_address)) {
        found = &hosts_[i];
        ++*hosts;
      }
    return found;
  }

  // Every host the program knows, unmoved ones too: an address two hosts share is ambiguous.
  Host hosts_[STASIS_MAX_ADDRESS_MOVES];
  uint32_t count_ = 0;
  bool any_moved_ = false;
};

}  // namespace stasis::rt
