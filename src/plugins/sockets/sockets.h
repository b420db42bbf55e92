// Sockets, checkpoint side (runtime): sockets.cc captures them; socket_addresses.cc wraps the
// calls that take or show an address after a restart moved sockets or hosts. Restart side:
// restore_sockets.h.
#pragma once
#include "plugins/files/capture.h"

namespace stasis::rt {
int capture_socket_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
// At the "drain" barrier, before any process of the computation captures anything: bytes TCP
// holds back (Nagle) are pushed to the peers, so each receiver's copy of its queue has them.
void push_held_back_tcp_bytes();
// After a restart that moved sockets (another host, another port): the addresses the program saw
// for the socket at `fd` before it, while that is still the restored socket; else null.
const StasisTcpData* seen_names(int fd);
}  // namespace stasis::rt
