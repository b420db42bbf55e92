// The sockets kind's part of StasisRestartInfo (restart/loader_protocol.h): what the restarted
// runtime needs to show the program the addresses it saw before a restart moved its sockets.
// Plain C, fixed size: the libc-free loader carries it.
#pragma once
#include <stdint.h>

#include "image/format.h"

// A TCP or UDP socket whose addresses changed at the restart (another host, another port): the
// runtime's getsockname/getpeername show the program those it saw before.
#define STASIS_MAX_SOCKET_NAMES 128
typedef struct StasisSocketNames {
  int32_t fd;
  uint32_t reserved;
  uint64_t ino;         // the restored socket's: a later socket at the same number is not this one
  StasisTcpData names;  // local and peer addresses as the program saw them
} StasisSocketNames;

// A host of the computation that a restart moved (`stasis restart --hosts OLD=NEW`), addresses in
// the 16-byte form of StasisTcpData (IPv4 mapped). The runtime composes these with the moves of
// earlier restarts and translates the addresses the program passes to the socket calls (old ->
// new) and those it is shown (new -> old).
#define STASIS_MAX_ADDRESS_MOVES 64
typedef struct StasisAddressMove {
  uint8_t old_address[16];
  uint8_t new_address[16];
} StasisAddressMove;
