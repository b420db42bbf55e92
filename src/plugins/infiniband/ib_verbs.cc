// The InfiniBand plugin, program side: the verbs entry points the program calls, interposed
// (the plugin is preloaded before libibverbs), handing out virtual objects (ib_objects.h) and
// translating identifiers between them and the library's real objects. The inline post/poll
// functions of verbs.h reach the plugin through the virtual context's ops.
//
// Every wrapper that touches the library holds the gate (ib_plugin.h): a checkpoint closes it
// before any thread is stopped, so no user thread is ever stopped inside the library.
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "plugins/infiniband/ib_plugin.h"

// verbs.h defines these as macros over inline helpers; the plugin defines the exported functions.
#undef ibv_reg_mr
#undef ibv_query_port

namespace stasis::ib {

RealVerbs g_real;
VContext* g_contexts[kMaxObjects];
VPd* g_pds[kMaxObjects];
VMr* g_mrs[kMaxObjects];
VCq* g_cqs[kMaxObjects];
VChannel* g_channels[kMaxObjects];
VSrq* g_srqs[kMaxObjects];
VAh* g_ahs[kMaxObjects];
VQp* g_qps[kMaxObjects];
const char* g_unsupported;
std::atomic<bool> g_translating{false};

namespace {

template <typename Fn>
void resolve(Fn& slot, const char* name, void* library) {
  // IBVERBS_1.1 is the current ABI of most entry points, 1.0 that of the channel functions.
  for (const char* version : {"IBVERBS_1.1", "IBVERBS_1.0"})
    if (!slot) slot = reinterpret_cast<Fn>(dlvsym(library, name, version));
  if (!slot) slot = reinterpret_cast<Fn>(dlsym(library, name));
}

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

VQp* qp_by_real_number(VCq* cq, uint32_t real_qpn) {
  for (VQp* qp : g_qps)
    if (qp && qp->real && qp->real->qp_num == real_qpn && (qp->send_cq == cq || qp->recv_cq == cq)) return qp;
  return nullptr;
}

int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc);
int req_notify_cq(ibv_cq* cq, int solicited_only);
int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);

}  // namespace

void resolve_real_verbs(void* library) {
  resolve(g_real.get_device_list, "ibv_get_device_list", library);
  resolve(g_real.get_device_name, "ibv_get_device_name", library);
  resolve(g_real.open_device, "ibv_open_device", library);
  resolve(g_real.close_device, "ibv_close_device", library);
  resolve(g_real.query_device, "ibv_query_device", library);
  resolve(g_real.query_port, "ibv_query_port", library);
  resolve(g_real.query_gid, "ibv_query_gid", library);
  resolve(g_real.query_pkey, "ibv_query_pkey", library);
  resolve(g_real.alloc_pd, "ibv_alloc_pd", library);
  resolve(g_real.dealloc_pd, "ibv_dealloc_pd", library);
  resolve(g_real.reg_mr, "ibv_reg_mr", library);
  resolve(g_real.dereg_mr, "ibv_dereg_mr", library);
  resolve(g_real.create_comp_channel, "ibv_create_comp_channel", library);
  resolve(g_real.destroy_comp_channel, "ibv_destroy_comp_channel", library);
  resolve(g_real.create_cq, "ibv_create_cq", library);
  resolve(g_real.destroy_cq, "ibv_destroy_cq", library);
  resolve(g_real.get_cq_event, "ibv_get_cq_event", library);
  resolve(g_real.ack_cq_events, "ibv_ack_cq_events", library);
  resolve(g_real.create_qp, "ibv_create_qp", library);
  resolve(g_real.modify_qp, "ibv_modify_qp", library);
  resolve(g_real.query_qp, "ibv_query_qp", library);
  resolve(g_real.destroy_qp, "ibv_destroy_qp", library);
  resolve(g_real.create_srq, "ibv_create_srq", library);
  resolve(g_real.modify_srq, "ibv_modify_srq", library);
  resolve(g_real.query_srq, "ibv_query_srq", library);
  resolve(g_real.destroy_srq, "ibv_destroy_srq", library);
  resolve(g_real.create_ah, "ibv_create_ah", library);
  resolve(g_real.destroy_ah, "ibv_destroy_ah", library);
}

uint16_t real_lid_of(VContext* ctx, uint8_t port) {
  return port >= 1 && port <= kMaxPorts ? ctx->real_lid[port] : 0;
}

// Real port LIDs of a (new) real context; the first ones seen are the virtual ones.
bool learn_lids(VContext* ctx) {
  for (uint8_t port = 1; port <= kMaxPorts; port++) {
    ibv_port_attr attr{};
    if (::___ibv_query_port(ctx->real, port, &attr) != 0) break;
    ctx->real_lid[port] = attr.lid;
    if (!ctx->virtual_lid[port]) ctx->virtual_lid[port] = attr.lid;
  }
  return true;
}

// Both directions of a receive's scatter list: virtual lkeys to the current real ones.
uint32_t real_lkey(uint32_t virtual_lkey) {
  for (VMr* mr : g_mrs)
    if (mr && mr->ibv.lkey == virtual_lkey && mr->real) return mr->real->lkey;
  return virtual_lkey;  // not ours (a key the program made up): the library judges it
}

void translate_completion(VCq* cq, ibv_wc* wc) {
  VQp* qp = qp_by_real_number(cq, wc->qp_num);
  if (!qp) return;
  wc->qp_num = qp->ibv.qp_num;
  if (wc->opcode & IBV_WC_RECV) {
    if (qp->recv_cq == cq) recv_ring_complete(qp->srq ? qp->srq->recvs : qp->recvs, wc->wr_id);
    bool translating = g_translating.load(std::memory_order_relaxed);
    if (qp->init.qp_type == IBV_QPT_UD) {
      if (wc->status != IBV_WC_SUCCESS) return;
      if (translating) {
        RemoteQp source = ud_source(wc->slid, wc->src_qp);
        wc->slid = source.virtual_lid;
        wc->src_qp = source.virtual_qpn;
      }
      count_ud_received(qp, wc->slid, wc->src_qp);
    } else if (translating) {
      wc->slid = virtual_lid_of_real(wc->slid);
    }
  } else if (qp->send_cq == cq) {
    qp->sends_in_flight.fetch_sub(1, std::memory_order_relaxed);
  }
}

uint16_t virtual_lid_of_real(uint16_t real_lid) {
  for (VContext* ctx : g_contexts)
    if (ctx)
      for (int port = 1; port <= kMaxPorts; port++)
        if (ctx->real_lid[port] == real_lid && real_lid) return ctx->virtual_lid[port];
  return translate_remote_lid_back(real_lid);
}

namespace {

// The receive as the library must see it (real lkeys), in `wr` and `sge`.
void real_recv(const PostedRecv& posted, ibv_recv_wr& wr, ibv_sge (&sge)[kMaxRecvSge]) {
  for (int i = 0; i < posted.num_sge; i++) {
    sge[i] = posted.sge[i];
    sge[i].lkey = real_lkey(posted.sge[i].lkey);
  }
  wr = {};
  wr.wr_id = posted.wr_id;
  wr.sg_list = sge;
  wr.num_sge = posted.num_sge;
}

}  // namespace

int real_post_recv(VQp* qp, const PostedRecv& posted, ibv_recv_wr** bad) {
  ibv_recv_wr wr;
  ibv_sge sge[kMaxRecvSge];
  real_recv(posted, wr, sge);
  return ::ibv_post_recv(qp->real, &wr, bad);
}

int real_post_srq_recv(VSrq* srq, const PostedRecv& posted, ibv_recv_wr** bad) {
  ibv_recv_wr wr;
  ibv_sge sge[kMaxRecvSge];
  real_recv(posted, wr, sge);
  return ::ibv_post_srq_recv(srq->real, &wr, bad);
}

bool recv_ring_init(RecvRing& ring, uint32_t max_wr) {
  // Room for receives an SRQ's QPs consumed out of order until the oldest one goes.
  ring.cap = max_wr * 2 + 16;
  ring.head = ring.count = 0;
  ring.slots = static_cast<PostedRecv*>(calloc(ring.cap, sizeof(PostedRecv)));
  return ring.slots != nullptr;
}

PostedRecv* recv_ring_tail(RecvRing& ring) {
  if (ring.count == ring.cap) {  // squeeze out the receives consumed out of order
    uint32_t kept = 0;
    for (uint32_t i = 0; i < ring.count; i++) {
      const PostedRecv& posted = ring.slots[(ring.head + i) % ring.cap];
      if (!posted.consumed) ring.slots[(ring.head + kept++) % ring.cap] = posted;
    }
    ring.count = kept;
    if (ring.count == ring.cap) return nullptr;
  }
  PostedRecv* slot = &ring.slots[(ring.head + ring.count) % ring.cap];
  slot->consumed = false;
  return slot;
}

void recv_ring_commit(RecvRing& ring) { ring.count++; }

void recv_ring_complete(RecvRing& ring, uint64_t wr_id) {
  for (uint32_t i = 0; i < ring.count; i++) {
    PostedRecv& posted = ring.slots[(ring.head + i) % ring.cap];
    if (!posted.consumed && posted.wr_id == wr_id) {
      posted.consumed = true;
      break;
    }
  }
  while (ring.count > 0 && ring.slots[ring.head].consumed) {
    ring.head = (ring.head + 1) % ring.cap;
    ring.count--;
  }
}

void install_ops(VContext* ctx) {
  ctx->ibv.ops.post_send = post_send;
  ctx->ibv.ops.post_recv = post_recv;
  ctx->ibv.ops.poll_cq = poll_cq;
  ctx->ibv.ops.req_notify_cq = req_notify_cq;
  ctx->ibv.ops.post_srq_recv = post_srq_recv;
}

namespace {

// The real address handle for the destination's current LID (made again when it changed).
bool real_ah_for(VAh* ah, uint16_t real_dlid) {
  if (ah->real && ah->real_dlid == real_dlid) return true;
  ibv_ah_attr attr = ah->attr;
  attr.dlid = real_dlid;
  ibv_ah* real = g_real.create_ah(ah->pd->real, &attr);
  if (!real) return false;
  if (ah->real) g_real.destroy_ah(ah->real);
  ah->real = real;
  ah->real_dlid = real_dlid;
  return true;
}

int post_send(ibv_qp* vqp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  Gate gate;
  VQp* qp = reinterpret_cast<VQp*>(vqp);
  if (!qp->real) return EIO;  // its re-creation failed (logged then)
  // Before the first re-creation every key is its own translation: the program's list goes as is.
  bool translate = g_translating.load(std::memory_order_relaxed);
  int64_t signaled = 0;
  for (ibv_send_wr* w = wr; w; w = w->next) {
    if ((w->send_flags & IBV_SEND_SIGNALED) || qp->init.sq_sig_all) signaled++;
    else qp->unsignaled_sends = true;
    if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
      qp->unsupported = "posts atomic operations";
    else if (w->opcode != IBV_WR_SEND && w->opcode != IBV_WR_SEND_WITH_IMM && w->opcode != IBV_WR_RDMA_WRITE &&
             w->opcode != IBV_WR_RDMA_WRITE_WITH_IMM && w->opcode != IBV_WR_RDMA_READ)
      qp->unsupported = "posts operations other than send, RDMA write and RDMA read";
  }
  qp->sends_in_flight.fetch_add(signaled, std::memory_order_relaxed);
  int rc;
  bool datagram = qp->init.qp_type == IBV_QPT_UD;  // its address handles are always the plugin's
  if (!translate && !datagram) {
    rc = ::ibv_post_send(qp->real, wr, bad_wr);
  } else {
    // One request at a time, with a copy of its scatter list carrying real lkeys.
    rc = 0;
    for (ibv_send_wr* w = wr; w && rc == 0; w = w->next) {
      ibv_sge sge[16];
      if (w->num_sge > 16) {
        rc = EINVAL;
        *bad_wr = w;
        break;
      }
      ibv_send_wr copy = *w;
      copy.next = nullptr;
      copy.sg_list = sge;
      for (int i = 0; i < w->num_sge; i++) {
        sge[i] = w->sg_list[i];
        if (!(w->send_flags & IBV_SEND_INLINE)) sge[i].lkey = real_lkey(sge[i].lkey);
      }
      // A datagram's destination: the peer QP of today, through a real handle for its LID.
      VAh* ah = datagram ? find_virtual(g_ahs, w->wr.ud.ah) : nullptr;
      if (datagram) {
        uint16_t dlid = ah ? ah->attr.dlid : 0;
        RemoteQp destination = translate ? ud_destination(dlid, w->wr.ud.remote_qpn)
                                         : RemoteQp{dlid, dlid, w->wr.ud.remote_qpn, w->wr.ud.remote_qpn};
        if (!ah || !real_ah_for(ah, destination.real_lid)) {
          rc = EINVAL;
          *bad_wr = w;
          break;
        }
        copy.wr.ud.ah = ah->real;
        copy.wr.ud.remote_qpn = destination.real_qpn;
      } else if (w->opcode == IBV_WR_RDMA_WRITE || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
                 w->opcode == IBV_WR_RDMA_READ) {
        // The peer's key as the program cached it, for the peer's memory region of today.
        copy.wr.rdma.rkey = real_remote_rkey(qp, w->wr.rdma.rkey);
      }
      ibv_send_wr* bad = nullptr;
      rc = ::ibv_post_send(qp->real, &copy, &bad);
      if (rc) *bad_wr = w;
      else if (datagram) count_ud_sent(qp, ah->attr.dlid, w->wr.ud.remote_qpn);
    }
  }
  if (rc) {  // requests from the failed one on were not posted
    for (ibv_send_wr* w = *bad_wr; w; w = w->next)
      if ((w->send_flags & IBV_SEND_SIGNALED) || qp->init.sq_sig_all)
        qp->sends_in_flight.fetch_sub(1, std::memory_order_relaxed);
  }
  return rc;
}

// Each receive noted in `ring`, then posted one by one with real lkeys (`post_real`).
template <typename PostReal>
int post_recorded_receives(RecvRing& ring, ibv_recv_wr* wr, ibv_recv_wr** bad_wr, PostReal post_real) {
  for (ibv_recv_wr* w = wr; w; w = w->next) {
    PostedRecv* posted = w->num_sge <= kMaxRecvSge ? recv_ring_tail(ring) : nullptr;
    if (!posted) {
      *bad_wr = w;
      return EINVAL;
    }
    posted->wr_id = w->wr_id;
    posted->num_sge = w->num_sge;
    for (int i = 0; i < w->num_sge; i++) posted->sge[i] = w->sg_list[i];
    ibv_recv_wr* bad = nullptr;
    int rc = post_real(*posted, &bad);
    if (rc) {
      *bad_wr = w;
      return rc;
    }
    recv_ring_commit(ring);
  }
  return 0;
}

int post_recv(ibv_qp* vqp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Gate gate;
  VQp* qp = reinterpret_cast<VQp*>(vqp);
  if (!qp->real) return EIO;
  return post_recorded_receives(qp->recvs, wr, bad_wr,
                                [qp](const PostedRecv& posted, ibv_recv_wr** bad) { return real_post_recv(qp, posted, bad); });
}

int post_srq_recv(ibv_srq* vsrq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Gate gate;
  VSrq* srq = reinterpret_cast<VSrq*>(vsrq);
  if (!srq->real) return EIO;
  return post_recorded_receives(srq->recvs, wr, bad_wr, [srq](const PostedRecv& posted, ibv_recv_wr** bad) {
    return real_post_srq_recv(srq, posted, bad);
  });
}

int poll_cq(ibv_cq* vcq, int num_entries, ibv_wc* wc) {
  Gate gate;
  VCq* cq = reinterpret_cast<VCq*>(vcq);
  int n = 0;
  while (cq->drained_count > 0 && n < num_entries) {
    wc[n++] = cq->drained[cq->drained_head];
    cq->drained_head = (cq->drained_head + 1) % cq->drained_cap;
    cq->drained_count--;
  }
  if (n == num_entries) return n;
  if (!cq->real) return n > 0 ? n : -1;
  int got = ::ibv_poll_cq(cq->real, num_entries - n, wc + n);
  if (got < 0) return n > 0 ? n : got;
  for (int i = n; i < n + got; i++) translate_completion(cq, &wc[i]);
  return n + got;
}

int req_notify_cq(ibv_cq* vcq, int solicited_only) {
  Gate gate;
  VCq* cq = reinterpret_cast<VCq*>(vcq);
  if (!cq->real) return EIO;
  int rc = ::ibv_req_notify_cq(cq->real, solicited_only);
  if (rc == 0) {
    cq->armed = true;
    cq->armed_solicited_only = solicited_only != 0;
  }
  return rc;
}

}  // namespace
}  // namespace stasis::ib

using namespace stasis::ib;

extern "C" {

__attribute__((visibility("default"))) ibv_context* ibv_open_device(ibv_device* device) {
  Gate gate;
  resolve_real_verbs();
  LibraryThreads owned;  // the library's threads started here are the plugin's to stop
  ibv_context* real = g_real.open_device(device);
  if (!real) return nullptr;
  auto* ctx = static_cast<VContext*>(calloc(1, sizeof(VContext)));
  if (!ctx || !add(g_contexts, ctx)) {
    free(ctx);
    g_real.close_device(real);
    errno = ENOMEM;
    return nullptr;
  }
  ctx->real = real;
  ctx->ibv.device = device;
  ctx->ibv.cmd_fd = real->cmd_fd;
  ctx->ibv.async_fd = real->async_fd;
  ctx->ibv.num_comp_vectors = real->num_comp_vectors;
  pthread_mutex_init(&ctx->ibv.mutex, nullptr);
  const char* name = g_real.get_device_name(device);
  strncpy(ctx->device_name, name ? name : "", sizeof ctx->device_name - 1);
  install_ops(ctx);
  learn_lids(ctx);
  return &ctx->ibv;
}

__attribute__((visibility("default"))) int ibv_close_device(ibv_context* context) {
  Gate gate;
  return destroy_virtual(g_contexts, context, g_real.close_device);
}

__attribute__((visibility("default"))) int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  Gate gate;
  resolve_real_verbs();
  VContext* ctx = find_virtual(g_contexts, context);
  return g_real.query_device(ctx ? ctx->real : context, attr);
}

// Reached from verbs.h's inline ibv_query_port for contexts without the extended ops (the
// virtual ones): the port as the library reports it, with the LID the program was first given.
__attribute__((visibility("default"))) int ibv_query_port(ibv_context* context, uint8_t port,
                                                          _compat_ibv_port_attr* attr) {
  Gate gate;
  resolve_real_verbs();
  VContext* ctx = find_virtual(g_contexts, context);
  if (!ctx) return g_real.query_port(context, port, attr);
  auto* full = reinterpret_cast<ibv_port_attr*>(attr);
  int rc = ::___ibv_query_port(ctx->real, port, full);
  if (rc == 0 && port >= 1 && port <= kMaxPorts && ctx->virtual_lid[port]) full->lid = ctx->virtual_lid[port];
  return rc;
}

__attribute__((visibility("default"))) int ibv_query_gid(ibv_context* context, uint8_t port, int index, ibv_gid* gid) {
  Gate gate;
  resolve_real_verbs();
  VContext* ctx = find_virtual(g_contexts, context);
  return g_real.query_gid(ctx ? ctx->real : context, port, index, gid);
}

__attribute__((visibility("default"))) int ibv_query_pkey(ibv_context* context, uint8_t port, int index, __be16* pkey) {
  Gate gate;
  resolve_real_verbs();
  VContext* ctx = find_virtual(g_contexts, context);
  return g_real.query_pkey(ctx ? ctx->real : context, port, index, pkey);
}

__attribute__((visibility("default"))) ibv_pd* ibv_alloc_pd(ibv_context* context) {
  Gate gate;
  resolve_real_verbs();
  VContext* ctx = find_virtual(g_contexts, context);
  if (!ctx) return g_real.alloc_pd(context);
  VPd* pd = new_virtual(g_pds, [&] { return g_real.alloc_pd(ctx->real); });
  if (!pd) return nullptr;
  pd->ctx = ctx;
  pd->ibv.context = &ctx->ibv;
  pd->ibv.handle = pd->real->handle;
  return &pd->ibv;
}

__attribute__((visibility("default"))) int ibv_dealloc_pd(ibv_pd* vpd) {
  Gate gate;
  return destroy_virtual(g_pds, vpd, g_real.dealloc_pd);
}

__attribute__((visibility("default"))) ibv_mr* ibv_reg_mr(ibv_pd* vpd, void* addr, size_t length, int access) {
  Gate gate;
  VPd* pd = find_virtual(g_pds, vpd);
  if (!pd) return g_real.reg_mr(vpd, addr, length, access);
  VMr* mr = new_virtual(g_mrs, [&] { return g_real.reg_mr(pd->real, addr, length, access); });
  if (!mr) return nullptr;
  mr->pd = pd;
  mr->access = access;
  mr->ibv = *mr->real;
  mr->ibv.context = &pd->ctx->ibv;
  mr->ibv.pd = &pd->ibv;
  return &mr->ibv;
}

__attribute__((visibility("default"))) int ibv_dereg_mr(ibv_mr* vmr) {
  Gate gate;
  return destroy_virtual(g_mrs, vmr, g_real.dereg_mr);
}

// The program's channel carries the real channel's descriptor number, which every re-creation
// keeps (ib_channels.cc).
__attribute__((visibility("default"))) ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  Gate gate;
  resolve_real_verbs();
  VContext* ctx = find_virtual(g_contexts, context);
  if (!ctx) return g_real.create_comp_channel(context);
  VChannel* ch = new_virtual(g_channels, [&] { return g_real.create_comp_channel(ctx->real); });
  if (!ch) return nullptr;
  ch->ctx = ctx;
  ch->ibv.context = &ctx->ibv;
  ch->ibv.fd = ch->real->fd;
  ch->ibv.refcnt = 0;
  pthread_mutex_init(&ch->reading, nullptr);
  return &ch->ibv;
}

__attribute__((visibility("default"))) int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  Gate gate;
  resolve_real_verbs();
  VChannel* ch = find_virtual(g_channels, channel);
  if (!ch) return g_real.destroy_comp_channel(channel);
  if (ch->ibv.refcnt) {
    errno = EBUSY;
    return EBUSY;
  }
  int rc = ch->real ? g_real.destroy_comp_channel(ch->real) : 0;
  if (rc) return rc;
  if (ch->placeholder || !ch->real) close(ch->ibv.fd);  // the number was not the library's
  remove(g_channels, ch);
  free(ch);
  return 0;
}

__attribute__((visibility("default"))) ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context,
                                                             ibv_comp_channel* channel, int comp_vector) {
  Gate gate;
  resolve_real_verbs();
  VContext* ctx = find_virtual(g_contexts, context);
  if (!ctx) return g_real.create_cq(context, cqe, cq_context, channel, comp_vector);
  auto* cq = static_cast<VCq*>(calloc(1, sizeof(VCq)));
  if (!cq || !add(g_cqs, cq)) {
    free(cq);
    errno = ENOMEM;
    return nullptr;
  }
  VChannel* ch = channel ? find_virtual(g_channels, channel) : nullptr;
  // The real CQ's own context is the virtual CQ, which ibv_get_cq_event hands back.
  cq->real = g_real.create_cq(ctx->real, cqe, &cq->ibv, ch ? ch->real : channel, comp_vector);
  cq->drained_cap = cqe * 2 + 16;
  cq->drained = static_cast<ibv_wc*>(calloc(cq->drained_cap, sizeof(ibv_wc)));
  if (!cq->real || !cq->drained) {
    if (cq->real) g_real.destroy_cq(cq->real);
    remove(g_cqs, cq);
    free(cq->drained);
    free(cq);
    return nullptr;
  }
  cq->ctx = ctx;
  cq->comp_vector = comp_vector;
  cq->channel = ch;
  if (ch) ch->ibv.refcnt++;
  cq->ibv.context = &ctx->ibv;
  cq->ibv.channel = channel;
  cq->ibv.cq_context = cq_context;
  cq->ibv.handle = cq->real->handle;
  cq->ibv.cqe = cq->real->cqe;
  pthread_mutex_init(&cq->ibv.mutex, nullptr);
  pthread_cond_init(&cq->ibv.cond, nullptr);
  return &cq->ibv;
}

__attribute__((visibility("default"))) int ibv_destroy_cq(ibv_cq* vcq) {
  Gate gate;
  return destroy_virtual(g_cqs, vcq, g_real.destroy_cq, [](VCq* cq) {
    if (cq->channel) cq->channel->ibv.refcnt--;
    free(cq->drained);
  });
}

// Waits for the channel's descriptor to be readable outside the gate (a checkpoint may come:
// the runtime's poll issues the wait again on the same number, which then holds the new
// channel), then reads the event inside it, never blocking there.
__attribute__((visibility("default"))) int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  resolve_real_verbs();
  VChannel* ch = find_virtual(g_channels, channel);
  if (!ch) return g_real.get_cq_event(channel, cq, cq_context);
  for (;;) {
    {
      Gate gate;
      if (take_replayed_event(ch, cq, cq_context)) return 0;
      if (!ch->real) {
        errno = EIO;
        return -1;
      }
      pthread_mutex_lock(&ch->reading);
      pollfd ready = {ch->ibv.fd, POLLIN, 0};
      bool readable = poll(&ready, 1, 0) == 1 && (ready.revents & POLLIN);
      ibv_cq* real = nullptr;
      void* real_context = nullptr;
      int rc = readable ? g_real.get_cq_event(ch->real, &real, &real_context) : 0;
      pthread_mutex_unlock(&ch->reading);
      if (rc) return rc;
      if (readable) {
        VCq* vcq = find_virtual(g_cqs, real_context);
        if (vcq) {
          vcq->armed = false;
          vcq->real_events_unacked++;
        }
        *cq = vcq ? &vcq->ibv : real;
        *cq_context = vcq ? vcq->ibv.cq_context : real_context;
        return 0;
      }
      if (fcntl(ch->ibv.fd, F_GETFL) & O_NONBLOCK) {  // the program polls the descriptor itself
        errno = EAGAIN;
        return -1;
      }
    }
    pollfd wait = {ch->ibv.fd, POLLIN, 0};
    if (poll(&wait, 1, -1) < 0 && errno != EINTR) return -1;
  }
}

// Events the teardown took out of an old real CQ were acknowledged to it then.
__attribute__((visibility("default"))) void ibv_ack_cq_events(ibv_cq* vcq, unsigned int nevents) {
  Gate gate;
  resolve_real_verbs();
  VCq* cq = find_virtual(g_cqs, vcq);
  if (!cq) return g_real.ack_cq_events(vcq, nevents);
  unsigned int real_events = nevents < cq->real_events_unacked ? nevents : cq->real_events_unacked;
  cq->real_events_unacked -= real_events;
  if (cq->real && real_events) g_real.ack_cq_events(cq->real, real_events);
}

__attribute__((visibility("default"))) ibv_srq* ibv_create_srq(ibv_pd* vpd, ibv_srq_init_attr* attr) {
  Gate gate;
  resolve_real_verbs();
  VPd* pd = find_virtual(g_pds, vpd);
  if (!pd) return g_real.create_srq(vpd, attr);
  auto* srq = static_cast<VSrq*>(calloc(1, sizeof(VSrq)));
  if (!srq || !recv_ring_init(srq->recvs, attr->attr.max_wr) || !add(g_srqs, srq)) {
    if (srq) free(srq->recvs.slots);
    free(srq);
    errno = ENOMEM;
    return nullptr;
  }
  ibv_srq_init_attr real_attr = *attr;
  real_attr.srq_context = &srq->ibv;
  if (!(srq->real = g_real.create_srq(pd->real, &real_attr))) {
    remove(g_srqs, srq);
    free(srq->recvs.slots);
    free(srq);
    return nullptr;
  }
  attr->attr = real_attr.attr;  // what the library granted
  srq->pd = pd;
  srq->init = *attr;
  srq->ibv.context = &pd->ctx->ibv;
  srq->ibv.srq_context = attr->srq_context;
  srq->ibv.pd = &pd->ibv;
  srq->ibv.handle = srq->real->handle;
  pthread_mutex_init(&srq->ibv.mutex, nullptr);
  pthread_cond_init(&srq->ibv.cond, nullptr);
  return &srq->ibv;
}

__attribute__((visibility("default"))) int ibv_modify_srq(ibv_srq* vsrq, ibv_srq_attr* attr, int mask) {
  Gate gate;
  resolve_real_verbs();
  VSrq* srq = find_virtual(g_srqs, vsrq);
  if (!srq) return g_real.modify_srq(vsrq, attr, mask);
  if (!srq->real) return EIO;
  if ((mask & IBV_SRQ_MAX_WR) && attr->max_wr > srq->init.attr.max_wr) {
    // More receives may be posted: a larger ring, oldest first.
    RecvRing larger;
    if (!recv_ring_init(larger, attr->max_wr)) return ENOMEM;
    for_each_posted(srq->recvs, [&](const PostedRecv& posted) { larger.slots[larger.count++] = posted; });
    free(srq->recvs.slots);
    srq->recvs = larger;
  }
  int rc = g_real.modify_srq(srq->real, attr, mask);
  if (rc) return rc;
  if (mask & IBV_SRQ_MAX_WR) srq->init.attr.max_wr = attr->max_wr;
  if (mask & IBV_SRQ_LIMIT) srq->init.attr.srq_limit = attr->srq_limit;
  return 0;
}

__attribute__((visibility("default"))) int ibv_query_srq(ibv_srq* vsrq, ibv_srq_attr* attr) {
  Gate gate;
  resolve_real_verbs();
  VSrq* srq = find_virtual(g_srqs, vsrq);
  if (!srq) return g_real.query_srq(vsrq, attr);
  return srq->real ? g_real.query_srq(srq->real, attr) : EIO;
}

__attribute__((visibility("default"))) int ibv_destroy_srq(ibv_srq* vsrq) {
  Gate gate;
  return destroy_virtual(g_srqs, vsrq, g_real.destroy_srq, [](VSrq* srq) { free(srq->recvs.slots); });
}

// The destination LID is the virtual one: the real handle is made for its current LID (at the
// first send after a re-creation, see real_ah_for).
__attribute__((visibility("default"))) ibv_ah* ibv_create_ah(ibv_pd* vpd, ibv_ah_attr* attr) {
  Gate gate;
  resolve_real_verbs();
  VPd* pd = find_virtual(g_pds, vpd);
  if (!pd) return g_real.create_ah(vpd, attr);
  auto* ah = static_cast<VAh*>(calloc(1, sizeof(VAh)));
  if (!ah || !add(g_ahs, ah)) {
    free(ah);
    errno = ENOMEM;
    return nullptr;
  }
  ah->pd = pd;
  ah->attr = *attr;
  if (!real_ah_for(ah, attr->dlid)) {
    remove(g_ahs, ah);
    free(ah);
    return nullptr;
  }
  ah->ibv.context = &pd->ctx->ibv;
  ah->ibv.pd = &pd->ibv;
  ah->ibv.handle = ah->real->handle;
  return &ah->ibv;
}

__attribute__((visibility("default"))) int ibv_destroy_ah(ibv_ah* vah) {
  Gate gate;
  return destroy_virtual(g_ahs, vah, g_real.destroy_ah);
}

__attribute__((visibility("default"))) ibv_qp* ibv_create_qp(ibv_pd* vpd, ibv_qp_init_attr* attr) {
  Gate gate;
  resolve_real_verbs();
  VPd* pd = find_virtual(g_pds, vpd);
  if (!pd) return g_real.create_qp(vpd, attr);
  VCq* send_cq = find_virtual(g_cqs, attr->send_cq);
  VCq* recv_cq = find_virtual(g_cqs, attr->recv_cq);
  if (!send_cq || !recv_cq) {
    errno = EINVAL;
    return nullptr;
  }
  VSrq* srq = attr->srq ? find_virtual(g_srqs, attr->srq) : nullptr;
  if (attr->srq && !srq) {
    errno = EINVAL;
    return nullptr;
  }
  auto* qp = static_cast<VQp*>(calloc(1, sizeof(VQp)));
  if (!qp || !recv_ring_init(qp->recvs, attr->cap.max_recv_wr) || !add(g_qps, qp)) {
    if (qp) free(qp->recvs.slots);
    free(qp);
    errno = ENOMEM;
    return nullptr;
  }
  ibv_qp_init_attr real_attr = *attr;
  real_attr.send_cq = send_cq->real;
  real_attr.recv_cq = recv_cq->real;
  real_attr.srq = srq ? srq->real : nullptr;
  qp->real = g_real.create_qp(pd->real, &real_attr);
  if (!qp->real) {
    remove(g_qps, qp);
    free(qp->recvs.slots);
    free(qp);
    return nullptr;
  }
  attr->cap = real_attr.cap;  // the library reports what it granted
  qp->init = *attr;
  qp->ctx = pd->ctx;
  qp->pd = pd;
  qp->send_cq = send_cq;
  qp->recv_cq = recv_cq;
  qp->srq = srq;
  if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UD)
    qp->unsupported = "is neither reliable-connected (RC) nor unreliable-datagram (UD)";
  qp->ibv.context = &pd->ctx->ibv;
  qp->ibv.qp_context = attr->qp_context;
  qp->ibv.pd = &pd->ibv;
  qp->ibv.send_cq = &send_cq->ibv;
  qp->ibv.recv_cq = &recv_cq->ibv;
  qp->ibv.srq = attr->srq;
  qp->ibv.handle = qp->real->handle;
  qp->ibv.qp_num = qp->real->qp_num;
  qp->ibv.state = qp->real->state;
  qp->ibv.qp_type = attr->qp_type;
  pthread_mutex_init(&qp->ibv.mutex, nullptr);
  pthread_cond_init(&qp->ibv.cond, nullptr);
  if (g_translating.load()) publish_new_qp(qp);
  return &qp->ibv;
}

__attribute__((visibility("default"))) int ibv_modify_qp(ibv_qp* vqp, ibv_qp_attr* attr, int mask) {
  Gate gate;
  resolve_real_verbs();
  VQp* qp = find_virtual(g_qps, vqp);
  if (!qp) return g_real.modify_qp(vqp, attr, mask);
  if (!qp->real) return EIO;
  int rc = modify_real_qp(qp, *attr, mask);
  if (rc) return rc;
  if (mask & IBV_QP_STATE) qp->ibv.state = attr->qp_state;
  if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET) qp->modify_count = 0;
  if (qp->modify_count < kMaxModifies) qp->modifies[qp->modify_count++] = {*attr, mask};
  else qp->unsupported = "was modified more often than the plugin records";
  return 0;
}

__attribute__((visibility("default"))) int ibv_query_qp(ibv_qp* vqp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
  Gate gate;
  resolve_real_verbs();
  VQp* qp = find_virtual(g_qps, vqp);
  if (!qp) return g_real.query_qp(vqp, attr, mask, init);
  int rc = g_real.query_qp(qp->real, attr, mask, init);
  if (rc) return rc;
  // Remote identifiers as the program gave them.
  for (int i = 0; i < qp->modify_count; i++) {
    const RecordedModify& m = qp->modifies[i];
    if (m.mask & IBV_QP_DEST_QPN) attr->dest_qp_num = m.attr.dest_qp_num;
    if (m.mask & IBV_QP_AV) attr->ah_attr.dlid = m.attr.ah_attr.dlid;
  }
  if (init) {
    init->send_cq = &qp->send_cq->ibv;
    init->recv_cq = &qp->recv_cq->ibv;
    init->qp_context = qp->init.qp_context;
  }
  return 0;
}

__attribute__((visibility("default"))) int ibv_destroy_qp(ibv_qp* vqp) {
  Gate gate;
  return destroy_virtual(g_qps, vqp, g_real.destroy_qp, [](VQp* qp) { free(qp->recvs.slots); });
}

// The extended QP interface is not virtualized: programs fall back to the classic verbs.
__attribute__((visibility("default"))) ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp*) {
  errno = EOPNOTSUPP;
  return nullptr;
}

}  // extern "C"
