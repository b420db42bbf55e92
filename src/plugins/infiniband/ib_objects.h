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
constexpr int kMaxEpollWatchers = 8;  // epoll sets watching one completion channel

// An epoll set's registration of a completion channel's descriptor: made again whenever the
// descriptor's file is replaced (the kernel drops it with the old file).
struct EpollWatcher {
  int epoll_fd;
  uint32_t events;
  uint64_t data;
};

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

// A completion channel. The program's `ibv.fd` keeps its number: at each re-creation the new
// real channel's file is moved onto it (dup3). Events the teardown read out of the old channel
// are served again by ibv_get_cq_event; while some are, a readable placeholder (an eventfd)
// holds the number and the real channel waits at another one.
struct VChannel {
  ibv_comp_channel ibv;
  VContext* ctx;
  ibv_comp_channel* real;
  bool placeholder;  // ibv.fd is the placeholder, real->fd another descriptor
  int status_flags;  // the descriptor's (O_NONBLOCK), as the program set them
  bool close_on_exec;
  EpollWatcher watchers[kMaxEpollWatchers];
  int watcher_count;
  pthread_mutex_t reading;  // one thread at a time between "readable" and reading the event
};

struct VCq {
  ibv_cq ibv;
  VContext* ctx;
  ibv_cq* real;
  int comp_vector;
  VChannel* channel;
  // Notification state across re-creation: armed (ibv_req_notify_cq since the last event) is
  // armed again on the new real CQ; events taken out of the old channel are served again.
  bool armed, armed_solicited_only;
  uint32_t replayed_events;       // to serve from ibv_get_cq_event before the real channel
  uint32_t real_events_unacked;   // delivered from the current real CQ, not acknowledged to it
  // Completions taken out of the adapter by the checkpoint's drain, already translated; served
  // before anything the real CQ holds.
  ibv_wc* drained;
  int drained_cap, drained_head, drained_count;
};

struct PostedRecv {
  uint64_t wr_id;
  int num_sge;
  bool consumed;  // completed out of order (an SRQ): skipped when the oldest ones go
  ibv_sge sge[kMaxRecvSge];  // virtual lkeys
};

// Receives posted and not completed yet, oldest first, re-posted after the real queue is made
// again. A completion takes the oldest one with its wr_id: the head for a QP's own queue (RC
// completes in order), usually the head for an SRQ (which any of its QPs may consume).
struct RecvRing {
  PostedRecv* slots;
  uint32_t cap, head, count;  // `count` from `head` on, consumed ones included
};

// An address handle: `attr.dlid` is the virtual LID the program named; the real one is made (again)
// for the destination's current LID when a send needs it.
struct VAh {
  ibv_ah ibv;
  VPd* pd;
  ibv_ah* real;
  ibv_ah_attr attr;
  uint16_t real_dlid;  // of `real`
};

struct VSrq {
  ibv_srq ibv;
  VPd* pd;
  ibv_srq* real;
  ibv_srq_init_attr init;  // max_wr and srq_limit as last set
  RecvRing recvs;
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
  VSrq* srq;       // receives through it (then `recvs` stays empty)
  RecvRing recvs;  // of max_recv_wr entries
  std::atomic<int64_t> sends_in_flight;  // signaled sends posted, not completed
  bool unsignaled_sends;  // posted without IBV_SEND_SIGNALED: the drain cannot see them complete
  const char* unsupported;  // what makes it impossible to re-create, or nullptr
};

}  // namespace stasis::ib
