// The InfiniBand plugin, program side: the verbs entry points the program calls, interposed
// (the plugin is preloaded before libibverbs), handing out virtual objects (ib_objects.h) and
// translating identifiers between them and the library's real objects. The inline post/poll
// functions of verbs.h reach the plugin through the virtual context's ops.
//
// Every wrapper that touches the library holds the gate (ib_plugin.h): a checkpoint closes it
// before any thread is stopped, so no user thread is ever stopped inside the library.
#include <dlfcn.h>
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
VQp* g_qps[kMaxObjects];
const char* g_unsupported;
std::atomic<bool> g_translating{false};

namespace {

template <typename Fn>
void resolve(Fn& slot, const char* name) {
  // IBVERBS_1.1 is the current ABI of most entry points, 1.0 that of the channel functions.
  for (const char* version : {"IBVERBS_1.1", "IBVERBS_1.0"})
    if (!slot) slot = reinterpret_cast<Fn>(dlvsym(RTLD_NEXT, name, version));
  if (!slot) slot = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
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

void note_unsupported(const char* what) {
  if (!g_unsupported) g_unsupported = what;
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

}  // namespace

void resolve_real_verbs() {
  resolve(g_real.get_device_list, "ibv_get_device_list");
  resolve(g_real.get_device_name, "ibv_get_device_name");
  resolve(g_real.open_device, "ibv_open_device");
  resolve(g_real.close_device, "ibv_close_device");
  resolve(g_real.query_device, "ibv_query_device");
  resolve(g_real.query_port, "ibv_query_port");
  resolve(g_real.query_gid, "ibv_query_gid");
  resolve(g_real.query_pkey, "ibv_query_pkey");
  resolve(g_real.alloc_pd, "ibv_alloc_pd");
  resolve(g_real.dealloc_pd, "ibv_dealloc_pd");
  resolve(g_real.reg_mr, "ibv_reg_mr");
  resolve(g_real.dereg_mr, "ibv_dereg_mr");
  resolve(g_real.create_comp_channel, "ibv_create_comp_channel");
  resolve(g_real.create_cq, "ibv_create_cq");
  resolve(g_real.destroy_cq, "ibv_destroy_cq");
  resolve(g_real.get_cq_event, "ibv_get_cq_event");
  resolve(g_real.ack_cq_events, "ibv_ack_cq_events");
  resolve(g_real.create_qp, "ibv_create_qp");
  resolve(g_real.modify_qp, "ibv_modify_qp");
  resolve(g_real.query_qp, "ibv_query_qp");
  resolve(g_real.destroy_qp, "ibv_destroy_qp");
  resolve(g_real.create_srq, "ibv_create_srq");
  resolve(g_real.create_ah, "ibv_create_ah");
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
    if (qp->recv_count > 0 && qp->recv_cq == cq) {
      qp->recv_head = (qp->recv_head + 1) % qp->recv_cap;
      qp->recv_count--;
    }
    if (g_translating.load(std::memory_order_relaxed)) wc->slid = virtual_lid_of_real(wc->slid);
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

int real_post_recv(VQp* qp, const PostedRecv& posted, ibv_recv_wr** bad) {
  ibv_sge sge[kMaxRecvSge];
  for (int i = 0; i < posted.num_sge; i++) {
    sge[i] = posted.sge[i];
    sge[i].lkey = real_lkey(posted.sge[i].lkey);
  }
  ibv_recv_wr wr{};
  wr.wr_id = posted.wr_id;
  wr.sg_list = sge;
  wr.num_sge = posted.num_sge;
  return ::ibv_post_recv(qp->real, &wr, bad);
}

void install_ops(VContext* ctx) {
  ctx->ibv.ops.post_send = post_send;
  ctx->ibv.ops.post_recv = post_recv;
  ctx->ibv.ops.poll_cq = poll_cq;
  ctx->ibv.ops.req_notify_cq = req_notify_cq;
}

namespace {

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
  if (!translate) {
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
      // The peer's key as the program cached it, for the peer's memory region of today.
      if (w->opcode == IBV_WR_RDMA_WRITE || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM || w->opcode == IBV_WR_RDMA_READ)
        copy.wr.rdma.rkey = real_remote_rkey(qp, w->wr.rdma.rkey);
      ibv_send_wr* bad = nullptr;
      rc = ::ibv_post_send(qp->real, &copy, &bad);
      if (rc) *bad_wr = w;
    }
  }
  if (rc) {  // requests from the failed one on were not posted
    for (ibv_send_wr* w = *bad_wr; w; w = w->next)
      if ((w->send_flags & IBV_SEND_SIGNALED) || qp->init.sq_sig_all)
        qp->sends_in_flight.fetch_sub(1, std::memory_order_relaxed);
  }
  return rc;
}

int post_recv(ibv_qp* vqp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Gate gate;
  VQp* qp = reinterpret_cast<VQp*>(vqp);
  if (!qp->real) return EIO;
  for (ibv_recv_wr* w = wr; w; w = w->next) {
    if (w->num_sge > kMaxRecvSge || qp->recv_count == qp->recv_cap) {
      *bad_wr = w;
      return EINVAL;
    }
    PostedRecv& posted = qp->recvs[(qp->recv_head + qp->recv_count) % qp->recv_cap];
    posted.wr_id = w->wr_id;
    posted.num_sge = w->num_sge;
    for (int i = 0; i < w->num_sge; i++) posted.sge[i] = w->sg_list[i];
    ibv_recv_wr* bad = nullptr;
    int rc = real_post_recv(qp, posted, &bad);
    if (rc) {
      *bad_wr = w;
      return rc;
    }
    qp->recv_count++;
  }
  return 0;
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
  return cq->real ? ::ibv_req_notify_cq(cq->real, solicited_only) : EIO;
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
  resolve_real_verbs();
  VContext* ctx = find_virtual(g_contexts, context);
  if (!ctx) return g_real.close_device(context);
  int rc = ctx->real ? g_real.close_device(ctx->real) : 0;
  if (rc) return rc;
  remove(g_contexts, ctx);
  free(ctx);
  return 0;
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
  auto* pd = static_cast<VPd*>(calloc(1, sizeof(VPd)));
  if (!pd || !add(g_pds, pd) || !(pd->real = g_real.alloc_pd(ctx->real))) {
    if (pd) remove(g_pds, pd);
    free(pd);
    return nullptr;
  }
  pd->ctx = ctx;
  pd->ibv.context = &ctx->ibv;
  pd->ibv.handle = pd->real->handle;
  return &pd->ibv;
}

__attribute__((visibility("default"))) int ibv_dealloc_pd(ibv_pd* vpd) {
  Gate gate;
  VPd* pd = find_virtual(g_pds, vpd);
  if (!pd) return g_real.dealloc_pd(vpd);
  int rc = pd->real ? g_real.dealloc_pd(pd->real) : 0;
  if (rc) return rc;
  remove(g_pds, pd);
  free(pd);
  return 0;
}

__attribute__((visibility("default"))) ibv_mr* ibv_reg_mr(ibv_pd* vpd, void* addr, size_t length, int access) {
  Gate gate;
  VPd* pd = find_virtual(g_pds, vpd);
  if (!pd) return g_real.reg_mr(vpd, addr, length, access);
  auto* mr = static_cast<VMr*>(calloc(1, sizeof(VMr)));
  if (!mr || !add(g_mrs, mr) || !(mr->real = g_real.reg_mr(pd->real, addr, length, access))) {
    if (mr) remove(g_mrs, mr);
    free(mr);
    return nullptr;
  }
  mr->pd = pd;
  mr->access = access;
  mr->ibv = *mr->real;
  mr->ibv.context = &pd->ctx->ibv;
  mr->ibv.pd = &pd->ibv;
  return &mr->ibv;
}

__attribute__((visibility("default"))) int ibv_dereg_mr(ibv_mr* vmr) {
  Gate gate;
  VMr* mr = find_virtual(g_mrs, vmr);
  if (!mr) return g_real.dereg_mr(vmr);
  int rc = mr->real ? g_real.dereg_mr(mr->real) : 0;
  if (rc) return rc;
  remove(g_mrs, mr);
  free(mr);
  return 0;
}

// Completion channels are the library's (their descriptor cannot follow a re-creation yet): a
// process that has one is refused at checkpoint time, and runs normally otherwise.
__attribute__((visibility("default"))) ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  Gate gate;
  resolve_real_verbs();
  VContext* ctx = find_virtual(g_contexts, context);
  if (ctx) note_unsupported("a completion channel (ibv_create_comp_channel; -e in the pingpong tools)");
  return g_real.create_comp_channel(ctx ? ctx->real : context);
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
  // The real CQ's own context is the virtual CQ, which ibv_get_cq_event hands back.
  cq->real = g_real.create_cq(ctx->real, cqe, &cq->ibv, channel, comp_vector);
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
  VCq* cq = find_virtual(g_cqs, vcq);
  if (!cq) return g_real.destroy_cq(vcq);
  int rc = cq->real ? g_real.destroy_cq(cq->real) : 0;
  if (rc) return rc;
  remove(g_cqs, cq);
  free(cq->drained);
  free(cq);
  return 0;
}

// Blocks: no gate (a checkpoint never waits for an event).
__attribute__((visibility("default"))) int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  resolve_real_verbs();
  ibv_cq* real = nullptr;
  void* real_context = nullptr;
  int rc = g_real.get_cq_event(channel, &real, &real_context);
  if (rc) return rc;
  VCq* vcq = find_virtual(g_cqs, real_context);
  *cq = vcq ? &vcq->ibv : real;
  *cq_context = vcq ? vcq->ibv.cq_context : real_context;
  return 0;
}

__attribute__((visibility("default"))) void ibv_ack_cq_events(ibv_cq* vcq, unsigned int nevents) {
  Gate gate;
  resolve_real_verbs();
  VCq* cq = find_virtual(g_cqs, vcq);
  g_real.ack_cq_events(cq ? cq->real : vcq, nevents);
}

__attribute__((visibility("default"))) ibv_srq* ibv_create_srq(ibv_pd* vpd, ibv_srq_init_attr* attr) {
  Gate gate;
  resolve_real_verbs();
  VPd* pd = find_virtual(g_pds, vpd);
  if (pd) note_unsupported("a shared receive queue (ibv_create_srq)");
  return g_real.create_srq(pd ? pd->real : vpd, attr);
}

__attribute__((visibility("default"))) ibv_ah* ibv_create_ah(ibv_pd* vpd, ibv_ah_attr* attr) {
  Gate gate;
  resolve_real_verbs();
  VPd* pd = find_virtual(g_pds, vpd);
  if (pd) note_unsupported("an address handle (ibv_create_ah)");
  return g_real.create_ah(pd ? pd->real : vpd, attr);
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
  auto* qp = static_cast<VQp*>(calloc(1, sizeof(VQp)));
  uint32_t recv_cap = attr->cap.max_recv_wr + 1;
  PostedRecv* recvs = static_cast<PostedRecv*>(calloc(recv_cap, sizeof(PostedRecv)));
  if (!qp || !recvs || !add(g_qps, qp)) {
    free(qp);
    free(recvs);
    errno = ENOMEM;
    return nullptr;
  }
  ibv_qp_init_attr real_attr = *attr;
  real_attr.send_cq = send_cq->real;
  real_attr.recv_cq = recv_cq->real;
  qp->real = g_real.create_qp(pd->real, &real_attr);
  if (!qp->real) {
    remove(g_qps, qp);
    free(recvs);
    free(qp);
    return nullptr;
  }
  attr->cap = real_attr.cap;  // the library reports what it granted
  qp->init = *attr;
  qp->ctx = pd->ctx;
  qp->pd = pd;
  qp->send_cq = send_cq;
  qp->recv_cq = recv_cq;
  qp->recvs = recvs;
  qp->recv_cap = recv_cap;
  if (attr->qp_type != IBV_QPT_RC) qp->unsupported = "is not a reliable-connected (RC) queue pair";
  if (attr->srq) qp->unsupported = "receives through a shared receive queue";
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
  resolve_real_verbs();
  VQp* qp = find_virtual(g_qps, vqp);
  if (!qp) return g_real.destroy_qp(vqp);
  int rc = qp->real ? g_real.destroy_qp(qp->real) : 0;
  if (rc) return rc;
  remove(g_qps, qp);
  free(qp->recvs);
  free(qp);
  return 0;
}

// The extended QP interface is not virtualized: programs fall back to the classic verbs.
__attribute__((visibility("default"))) ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp*) {
  errno = EOPNOTSUPP;
  return nullptr;
}

}  // extern "C"
