// The InfiniBand plugin's internal interface between its program side (ib_verbs.cc, ib_queues.cc,
// ib_datapath.cc: the interposed verbs calls) and its checkpoint side (ib_plugin.cc: drain,
// teardown, re-creation).
#pragma once

#include <dlfcn.h>

#include <cerrno>
#include <cstdlib>

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
  int (*destroy_comp_channel)(ibv_comp_channel*);
  int (*get_cq_event)(ibv_comp_channel*, ibv_cq**, void**);
  void (*ack_cq_events)(ibv_cq*, unsigned int);
  ibv_qp* (*create_qp)(ibv_pd*, ibv_qp_init_attr*);
  int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int);
  int (*query_qp)(ibv_qp*, ibv_qp_attr*, int, ibv_qp_init_attr*);
  int (*destroy_qp)(ibv_qp*);
  ibv_srq* (*create_srq)(ibv_pd*, ibv_srq_init_attr*);
  int (*modify_srq)(ibv_srq*, ibv_srq_attr*, int);
  int (*query_srq)(ibv_srq*, ibv_srq_attr*);
  int (*destroy_srq)(ibv_srq*);
  ibv_ah* (*create_ah)(ibv_pd*, ibv_ah_attr*);
  int (*destroy_ah)(ibv_ah*);
};
extern RealVerbs g_real;
// Fills the entries of g_real still unresolved from `library` (a dlopen handle; by default the
// libibverbs the program itself loaded).
void resolve_real_verbs(void* library = RTLD_NEXT);

// Every virtual object of the process (null slots are free). Changed only by user threads inside
// the gate; read by the checkpoint side while the gate is closed.
extern VContext* g_contexts[kMaxObjects];
extern VPd* g_pds[kMaxObjects];
extern VMr* g_mrs[kMaxObjects];
extern VCq* g_cqs[kMaxObjects];
extern VChannel* g_channels[kMaxObjects];
extern VSrq* g_srqs[kMaxObjects];
extern VAh* g_ahs[kMaxObjects];
extern VQp* g_qps[kMaxObjects];
// The first object made that a restart could not re-create (nullptr: none).
extern const char* g_unsupported;
// True once the real objects were re-created: identifiers differ from the virtual ones.
extern std::atomic<bool> g_translating;

// The tables above, as every interposed call uses them.
template <typename T>
bool add(T* (&table)[kMaxObjects], T* object) {
  for (auto& slot : table)
    if (!slot) {
      slot = object;
      return true;
    }
  return false;
}

template <typename T>
void remove(T* (&table)[kMaxObjects], T* object) {
  for (auto& slot : table)
    if (slot == object) slot = nullptr;
}

template <typename T>
T* find_virtual(T* (&table)[kMaxObjects], const void* pointer) {
  for (T* object : table)
    if (object && pointer == &object->ibv) return object;
  return nullptr;
}

// A new virtual object in `table`, its real one made by `make_real` (nullptr: the library's
// failure, errno set by it).
template <typename T, typename Make>
T* new_virtual(T* (&table)[kMaxObjects], Make make_real) {
  auto* object = static_cast<T*>(calloc(1, sizeof(T)));
  if (!object || !add(table, object)) {
    free(object);
    errno = ENOMEM;
    return nullptr;
  }
  if (!(object->real = make_real())) {
    remove(table, object);
    free(object);
    return nullptr;
  }
  return object;
}

// The program's destroy call on `pointer`: the library's for an object that is not ours;
// otherwise the real object of the current incarnation (if any) destroyed, then `release` and
// the virtual object freed.
template <typename T, typename Real, typename Release>
// (`destroy_real` is the slot in g_real, read once it is resolved.)
int destroy_virtual(T* (&table)[kMaxObjects], Real* pointer, int (*&destroy_real)(Real*), Release release) {
  resolve_real_verbs();
  T* object = find_virtual(table, pointer);
  if (!object) return destroy_real(pointer);
  int rc = object->real ? destroy_real(object->real) : 0;
  if (rc) return rc;
  release(object);
  remove(table, object);
  free(object);
  return 0;
}

template <typename T, typename Real>
int destroy_virtual(T* (&table)[kMaxObjects], Real* pointer, int (*&destroy_real)(Real*)) {
  return destroy_virtual(table, pointer, destroy_real, [](T*) {});
}

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
int real_post_srq_recv(VSrq* srq, const PostedRecv& posted, ibv_recv_wr** bad);

// Outstanding receives (RecvRing in ib_objects.h).
bool recv_ring_init(RecvRing& ring, uint32_t max_wr);
// The slot the next receive goes to (filled by the caller, kept by recv_ring_commit), or nullptr
// when the ring is full.
PostedRecv* recv_ring_tail(RecvRing& ring);
void recv_ring_commit(RecvRing& ring);
void recv_ring_complete(RecvRing& ring, uint64_t wr_id);
template <typename Visit>
void for_each_posted(const RecvRing& ring, Visit visit) {
  for (uint32_t i = 0; i < ring.count; i++) {
    const PostedRecv& posted = ring.slots[(ring.head + i) % ring.cap];
    if (!posted.consumed) visit(posted);
  }
}
// ibv_modify_qp on the real QP, the remote QP number and LID translated to the peer's current
// ones (once objects were re-created).
int modify_real_qp(VQp* qp, const ibv_qp_attr& attr, int mask);
// The current rkey of the memory region the QP's peer registered as `virtual_rkey` (published by
// the peer at its re-creation); `virtual_rkey` itself for a region the peer registered since.
uint32_t real_remote_rkey(const VQp* qp, uint32_t virtual_rkey);
// The real address handle for the destination's current LID (made again when it changed).
bool real_ah_for(VAh* ah, uint16_t real_dlid);

// A QP of the computation by its virtual (LID, QP number) and its current real ones.
struct RemoteQp {
  uint16_t virtual_lid, real_lid;
  uint32_t virtual_qpn, real_qpn;
};
// The current identity of the destination of a UD send (the peer published it at its
// re-creation; waits for it while the peer may still be re-creating). Itself when unknown.
RemoteQp ud_destination(uint16_t virtual_lid, uint32_t virtual_qpn);
// The virtual identity of the sender of a UD datagram, from its real LID and QP number.
RemoteQp ud_source(uint16_t real_lid, uint32_t real_qpn);
// A QP made after the last re-creation, published so that its peers can find it.
void publish_new_qp(const VQp* qp);
// The UD drain's bookkeeping: datagrams posted to and received from each peer QP.
void count_ud_sent(const VQp* qp, uint16_t virtual_dlid, uint32_t virtual_dqpn);
void count_ud_received(const VQp* qp, uint16_t virtual_slid, uint32_t virtual_sqpn);

// Completion channels (ib_channels.cc).
// Moves `fd` onto the channel's descriptor number (closing `fd`), with the program's descriptor
// flags, and registers it again with the epoll sets that watched the number.
bool move_onto_channel_number(VChannel* ch, int fd);
// Notes the epoll sets watching the channel's descriptor and its flags (before its file goes).
void note_channel_watchers(VChannel* ch);
// Teardown, before the CQs go: takes the events the real channel holds into each CQ's
// `replayed_events` and notes the descriptor's watchers and flags.
void take_channel_events(VChannel* ch);
// Teardown, after the CQs went: destroys the real channel and parks /dev/null on the number
// (so the image keeps it taken).
void tear_down_channel(VChannel* ch);
// Serves one event taken at a teardown, if any is left for the channel.
bool take_replayed_event(VChannel* ch, ibv_cq** cq, void** cq_context);
// Re-creation: the real channel made again behind the program's number.
bool recreate_channel(VChannel* ch);

}  // namespace stasis::ib
