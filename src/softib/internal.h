// softib: a user-space InfiniBand HCA behind the libibverbs ABI. Internal declarations shared by
// the fabric (addressing, transport) and the verbs objects. Nothing here is exported.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

// Everything is hidden by -fvisibility=hidden; only the verbs API is marked default, and the
// version script then gives each of those symbols its rdma-core version.
#define SOFTIB_API extern "C" __attribute__((visibility("default")))

namespace softib {

// ---- wire protocol between device contexts (one stream per context pair) ----
enum class FrameType : uint8_t {
  kSend = 1,      // RC send (optionally with immediate)
  kWrite = 2,     // RC RDMA write (optionally with immediate)
  kReadReq = 3,   // RC RDMA read request; the responder answers with kReadResp
  kUdSend = 4,    // UD datagram
  kAck = 5,       // RC acknowledgement (status carries ibv_wc_status for the requester)
  kReadResp = 6,  // RC RDMA read response with the data
};
enum FrameFlags : uint8_t { kHasImm = 1, kSolicited = 2, kHasGrh = 4 };

struct __attribute__((packed)) FrameHeader {
  uint32_t frame_len;  // header plus payload bytes
  uint8_t type;
  uint8_t flags;
  uint16_t src_lid;
  uint32_t dst_qpn;
  uint32_t src_qpn;
  uint32_t imm;  // kept in the byte order the application gave (already big-endian)
  uint32_t rkey;
  uint32_t qkey;
  uint32_t length;  // payload length, or requested length of an RDMA read
  uint32_t status;  // ibv_wc_status in responses
  uint64_t seq;     // requester's sequence number, echoed in responses
  uint64_t remote_addr;
  uint8_t sgid[16];
  uint8_t dgid[16];
};

// Where a queue pair's owning context can be reached; published in the fabric directory.
struct Endpoint {
  std::string unix_path;
  uint16_t tcp_port = 0;
  std::vector<std::string> ipv4;
  uint16_t lid = 0;
};

// ---- fabric: per-machine shared state (fabric.cpp) ----
const std::string& fabric_dir();
uint64_t netns_inode();
uint16_t host_lid();  // LID of this network namespace's port; allocated once per host
uint64_t host_guid();  // node GUID in host byte order
uint32_t next_fabric_number();  // machine-wide counter for QPNs and keys
std::string qp_record_path(uint16_t lid, uint32_t qpn);
bool publish_qp(uint16_t lid, uint32_t qpn, const Endpoint& ep);
void withdraw_qp(uint16_t lid, uint32_t qpn);
bool lookup_qp(uint16_t lid, uint32_t qpn, Endpoint* ep);
// How a context reaches a queue pair's owner: over the Unix socket on its own host, over TCP to
// another host's addresses, or over TCP on its own host too (SOFTIB_TRANSPORT=tcp), loopback first.
enum class Route { kUnixSocket, kOtherHostTcp, kSameHostTcp };
int connect_endpoint(const Endpoint& ep, Route route);  // returns a non-blocking fd or -1
std::vector<std::string> local_ipv4_addresses();

// ---- verbs objects ----
struct Context;
struct Qp;

struct Conn {
  int fd = -1;
  std::string key;  // remote endpoint identity for outbound connections, empty for accepted ones
  std::vector<char> in;
  size_t in_used = 0;
  std::vector<char> out;
  size_t out_off = 0;
  bool watching_out = false;
  bool dead = false;
};

struct Pd {
  ibv_pd ibv;
};

struct Mr {
  ibv_mr ibv;
  int access;
};

struct MrExtra {
  char* base;     // where the bytes are in this process
  uint64_t iova;  // the address peers use
};

// An MR as this process keeps it: the public ibv_mr first, then the translation.
struct MrImpl {
  Mr mr;
  MrExtra x;
};

inline MrImpl* mr_impl(Mr* m) { return reinterpret_cast<MrImpl*>(m); }

struct Cq {
  ibv_cq ibv;
  std::deque<ibv_wc> entries;
  bool armed = false;
  bool solicited_only = false;
};

struct RecvWqe {
  uint64_t wr_id;
  std::vector<ibv_sge> sges;
};

struct Srq {
  ibv_srq ibv;
  std::deque<RecvWqe> wqes;
  uint32_t max_wr;
  uint32_t max_sge;
  uint32_t limit;
  std::vector<Qp*> qps;
};

struct SendWqe {
  uint64_t wr_id;
  ibv_wc_opcode opcode;
  bool signaled;
  uint32_t byte_len;
  uint64_t seq;
  std::vector<ibv_sge> read_sges;  // where an RDMA read's response lands
  bool done = false;
  ibv_wc_status status = IBV_WC_SUCCESS;
};

struct InFrame {
  FrameHeader h;
  std::vector<char> payload;
  Conn* from;
};

struct Ah {
  ibv_ah ibv;
  ibv_ah_attr attr;
};

struct Qp {
  ibv_qp ibv;
  ibv_qp_cap cap;
  ibv_qp_attr attr;  // the attributes last set by modify_qp, returned by query_qp
  bool sq_sig_all;
  std::deque<RecvWqe> rq;
  std::deque<SendWqe> sq;
  std::deque<InFrame> incoming;  // requests waiting for a receive WQE or for RTR
  uint64_t next_seq = 1;
  Conn* conn = nullptr;  // RC: connection to the destination's context
  // RC: the peer's connection closed with requests unanswered. A real HCA notices only when its
  // retries run out (timeout x retry_cnt later); the requests fail then, not at once.
  bool giving_up = false;
  std::chrono::steady_clock::time_point give_up_at{};
};

struct Channel {
  ibv_comp_channel ibv;
  int write_fd;
};

struct Context {
  verbs_context vctx;  // must be first: verbs.h finds it in front of ibv_context
  std::mutex lock;     // guards every object of this context and its connections
  uint16_t lid = 0;
  bool tcp_only = false;  // SOFTIB_TRANSPORT=tcp when the device was opened
  ibv_gid gid{};
  std::string endpoint_id;
  Endpoint self;
  int listen_unix = -1;
  int listen_tcp = -1;
  int epoll_fd = -1;
  int wake_fd = -1;
  bool stopping = false;
  std::thread progress;
  std::unordered_map<uint32_t, Qp*> qps;
  std::unordered_map<uint32_t, Mr*> by_lkey;
  std::unordered_map<uint32_t, Mr*> by_rkey;
  std::unordered_map<std::string, Conn*> outbound;
  std::unordered_map<int, Conn*> conns_by_fd;
  std::vector<Conn*> retired;  // dead connections kept until close so no QP dangles
  std::vector<uint32_t> giving_up;  // QPs (by number) whose retries are running out
};

inline Context* ctx_of(ibv_context* c) {
  return reinterpret_cast<Context*>(reinterpret_cast<char*>(c) - offsetof(verbs_context, context));
}

// ---- the data path (work_requests.cpp), as the objects' state changes need it; context lock held ----
void enter_error(Qp* qp);  // flushes every outstanding work request
void drain_incoming(Context* c, Qp* qp);  // executes the requests that waited for a receive or RTR

}  // namespace softib
