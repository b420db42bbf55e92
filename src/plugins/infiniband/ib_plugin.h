// The InfiniBand plugin's internal interface between its program side (ib_verbs.cc: the
// interposed verbs calls) and its checkpoint side (ib_plugin.cc: drain, teardown, re-creation).
#pragma once

#include "plugins/infiniband/ib_objects.h"

namespace stasis::ib {

// The library's entry points behind the plugin's (resolved with dlvsym: the plugin does not link
// libibverbs, so it loads into every process of a launch).
struct RealVerbs {
  ibv_device** (*get_device_list)(int*);
  const char* (*get_device_name)(ibv_device*);
  ibv_context* (*open_device)(ibv_device*);
  int (*close_device)(ibv_context*);
  int (*query_device)(ibv_context*, ibv_device_attr*);
  int (*query_port)(ibv_context*, uint8_t, _compat_ibv_port_attr*);
  int (*query_gid)(ibv_context*, uint8_t, int, ibv_gid*);
  int (*query_pkey)(ibv_context*, uint8_t, int, __be16*);
  ibv_pd* (*alloc_pd)(ibv_context*);
  int (*dealloc_pd)(ibv_pd*);
  ibv_mr* (*reg_mr)(ibv_pd*, void*, size_t, int);
  int (*dereg_mr)(ibv_mr*);
  ibv_comp_channel* (*create_comp_channel)(ibv_context*);
  ibv_cq* (*create_cq)(ibv_context*, int, void*, ibv_comp_channel*, int);
  int (*destroy_cq)(ibv_cq*);
  int (*get_cq_event)(ibv_comp_channel*, ibv_cq**, void**);
  void (*ack_cq_events)(ibv_cq*, unsigned int);
  ibv_qp* (*create_qp)(ibv_pd*, ibv_qp_init_attr*);
  int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int);
  int (*query_qp)(ibv_qp*, ibv_qp_attr*, int, ibv_qp_init_attr*);
  int (*destroy_qp)(ibv_qp*);
  ibv_srq* (*create_srq)(ibv_pd*, ibv_srq_init_attr*);
  ibv_ah* (*create_ah)(ibv_pd*, ibv_ah_attr*);
};
extern RealVerbs g_real;
void resolve_real_verbs();

// Every virtual object of the process (null slots are free). Changed only by user threads inside
// the gate; read by the checkpoint side while the gate is closed.
extern VContext* g_contexts[kMaxObjects];
extern VPd* g_pds[kMaxObjects];
extern VMr* g_mrs[kMaxObjects];
extern VCq* g_cqs[kMaxObjects];
extern VQp* g_qps[kMaxObjects];
// The first object made that a restart could not re-create (nullptr: none).
extern const char* g_unsupported;
// True once the real objects were re-created: identifiers differ from the virtual ones.
extern std::atomic<bool> g_translating;

// The gate: every wrapper that calls into the library holds it. The checkpoint closes it while
// user threads still run and waits until none is inside; then they may be stopped anywhere
// without holding a lock of the library. Re-entrant per thread; the checkpoint thread holds it
// for the length of each event, so its own calls into the wrappers pass.
void gate_enter();
void gate_leave();
struct Gate {
  Gate() { gate_enter(); }
  ~Gate() { gate_leave(); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
};

// While one is alive on a thread, the threads that thread starts (the library's progress
// threads, made inside ibv_open_device) are exempt from being stopped by the checkpoint: the
// plugin stops them itself by closing the device.
struct LibraryThreads {
  LibraryThreads();
  ~LibraryThreads();
};

void install_ops(VContext* ctx);
bool learn_lids(VContext* ctx);
uint32_t real_lkey(uint32_t virtual_lkey);
uint16_t virtual_lid_of_real(uint16_t real_lid);
uint16_t translate_remote_lid_back(uint16_t real_lid);
void translate_completion(VCq* cq, ibv_wc* wc);
int real_post_recv(VQp* qp, const PostedRecv& posted, ibv_recv_wr** bad);
// ibv_modify_qp on the real QP, the remote QP number and LID translated to the peer's current
// ones (once objects were re-created).
int modify_real_qp(VQp* qp, const ibv_qp_attr& attr, int mask);
// The current rkey of the memory region the QP's peer registered as `virtual_rkey` (published by
// the peer at its re-creation); `virtual_rkey` itself for a region the peer registered since.
uint32_t real_remote_rkey(const VQp* qp, uint32_t virtual_rkey);

}  // namespace stasis::ib
