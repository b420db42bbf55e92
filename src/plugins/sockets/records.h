// The image records of sockets: what each keeps in StasisFdRecord::kind_data (same bytes as ever:
// each field is the kind_data word named beside it). TCP and UDP sockets keep a StasisTcpData
// (image/format.h). Queued bytes and datagrams are FD_DATA SOCKET_* records (format.h).
#pragma once
#include "image/kind_data.h"

// STASIS_FD_UNIX_SOCKET (one end of a connected pair) and STASIS_FD_UNIX_DATAGRAM.
typedef struct StasisUnixSocketData {
  uint64_t peer_ino;        // [0] the peer end's inode (0: the peer was closed)
  uint64_t send_buffer;     // [1] SO_SNDBUF as getsockopt reports it
  uint64_t receive_buffer;  // [2] SO_RCVBUF
  uint64_t shutdown;        // [3] bit 0: no more receiving, bit 1: no more sending
  uint64_t passcred;        // [4] SO_PASSCRED
  uint64_t type;            // [5] SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET
} StasisUnixSocketData;
STASIS_KIND_FIELD(StasisUnixSocketData, peer_ino, 0);
STASIS_KIND_FIELD(StasisUnixSocketData, send_buffer, 1);
STASIS_KIND_FIELD(StasisUnixSocketData, receive_buffer, 2);
STASIS_KIND_FIELD(StasisUnixSocketData, shutdown, 3);
STASIS_KIND_FIELD(StasisUnixSocketData, passcred, 4);
STASIS_KIND_FIELD(StasisUnixSocketData, type, 5);

// STASIS_FD_UNIX_LISTENER; path = its name ("@name" for an abstract one).
typedef struct StasisUnixListenerData {
  uint64_t backlog;   // [0]
  uint64_t type;      // [1]
  uint64_t passcred;  // [2]
} StasisUnixListenerData;
STASIS_KIND_FIELD(StasisUnixListenerData, backlog, 0);
STASIS_KIND_FIELD(StasisUnixListenerData, type, 1);
STASIS_KIND_FIELD(StasisUnixListenerData, passcred, 2);

// STASIS_FD_NETLINK_UEVENT: what restart needs to subscribe a new socket as the old one was.
typedef struct StasisNetlinkData {
  uint64_t type;            // [0] SOCK_DGRAM or SOCK_RAW
  uint64_t groups;          // [1] the multicast groups it is bound to (1: the kernel's, 2: udevd's)
  uint64_t receive_buffer;  // [2] SO_RCVBUF as getsockopt reports it
  uint64_t passcred;        // [3] SO_PASSCRED (libudev checks that an event comes from root)
} StasisNetlinkData;
STASIS_KIND_FIELD(StasisNetlinkData, type, 0);
STASIS_KIND_FIELD(StasisNetlinkData, groups, 1);
STASIS_KIND_FIELD(StasisNetlinkData, receive_buffer, 2);
STASIS_KIND_FIELD(StasisNetlinkData, passcred, 3);
