// The InfiniBand plugin's virtual verbs objects (docs/infiniband.md).
//
// The program only ever holds these: each embeds the public verbs struct it stands for (first, so
// the program's pointer is ours) and points at the library's real object of the current
// incarnation. The embedded struct keeps the identifiers the program was first given (QP number,
// LID, lkey/rkey): they are the virtual ones. At each checkpoint the real objects are destroyed
// (the library's threads, descriptors and device mappings go with them, so none is in the
// image) and made again afterwards, and the wrappers translate between the two.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>

namespace stasis::ib {

constexpr int kMaxPorts = 4;
constexpr int kMaxObjects = 64;       // of each kind, per process
constexpr int kMaxModifies = 8;       // recorded ibv_modify_qp calls per QP
constexpr int kMaxRecvSge = 4;

struct VContext {
  ibv_context ibv;  // ops point at the plugin's post/poll wrappers
  ibv_context* real;
  char device_name[64];
  uint16_t virtual_lid[kMaxPorts + 1];  // by port number, as first reported
  uint16_t real_lid[kMaxPorts + 1];
};

struct VPd {
  ibv_pd ibv;
  VContext* ctx;
  ibv_pd* real;
};

struct VMr {
  ibv_mr ibv;  // lkey and rkey: the virtual keys
  VPd* pd;
  ibv_mr* real;
  int access;
};

struct VCq {
  ibv_cq ibv;
  VContext* ctx;
  ibv_cq* real;
  int comp_vector;
  // Completions taken out of the adapter by the checkpoint's drain, already translated; served
  // before anything the real CQ holds.
  ibv_wc* drained;
  int drained_cap, drained_head, drained_count;
};

struct PostedRecv {
  uint64_t wr_id;
  int num_sge;
  ibv_sge sge[kMaxRecvSge];  // virtual lkeys
};

struct RecordedModify {
  ibv_qp_attr attr;  // virtual remote QPN and LID
  int mask;
};

struct VQp {
  ibv_qp ibv;  // qp_num: the virtual QP number
  VContext* ctx;
  VPd* pd;
  VCq* send_cq;
  VCq* recv_cq;
  ibv_qp* real;
  ibv_qp_init_attr init;  // with the virtual CQs
  RecordedModify modifies[kMaxModifies];
  int modify_count;
  // Receives posted and not completed yet, oldest first (RC completes them in order): a ring of
  // max_recv_wr entries, re-posted after the real QP is made again.
  PostedRecv* recvs;
  uint32_t recv_cap, recv_head, recv_count;
  std::atomic<int64_t> sends_in_flight;  // signaled sends posted, not completed
  bool unsignaled_sends;  // posted without IBV_SEND_SIGNALED: the drain cannot see them complete
  const char* unsupported;  // what makes it impossible to re-create, or nullptr
};

}  // namespace stasis::ib
