// The verbs objects: protection domains, memory regions, completion channels and queues, shared
// receive queues, queue pairs and address handles; their creation, attributes and destruction.
// What moves data through them is in work_requests.cpp.
#include <endian.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "transport.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

using namespace softib;

namespace {

constexpr uint32_t kMaxWr = 16384;
constexpr uint32_t kMaxSge = 32;
constexpr uint32_t kMaxInline = 1024;
constexpr uint32_t kDefaultInline = 256;

}  // namespace

SOFTIB_API ibv_pd* ibv_alloc_pd(ibv_context* context) {
  Pd* pd = new Pd{};
  pd->ibv.context = context;
  static std::atomic<uint32_t> handles{1};
  pd->ibv.handle = handles.fetch_add(1);
  return &pd->ibv;
}

SOFTIB_API int ibv_dealloc_pd(ibv_pd* pd) {
  delete reinterpret_cast<Pd*>(pd);
  return 0;
}

SOFTIB_API ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  if (!pd || (!addr && length) ) {
    errno = EINVAL;
    return nullptr;
  }
  // Remote write/atomic without local write is forbidden by the spec, as on hardware.
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(access & IBV_ACCESS_LOCAL_WRITE)) {
    errno = EINVAL;
    return nullptr;
  }
  Context* c = ctx_of(pd->context);
  auto* mi = new MrImpl{};
  mi->mr.ibv.context = pd->context;
  mi->mr.ibv.pd = pd;
  mi->mr.ibv.addr = addr;
  mi->mr.ibv.length = length;
  mi->mr.access = static_cast<int>(access);
  mi->x.base = static_cast<char*>(addr);
  mi->x.iova = iova;
  std::lock_guard<std::mutex> g(c->lock);
  // Keys come from the fabric counter, so every registration gets keys never seen before.
  do mi->mr.ibv.lkey = next_fabric_number() * 0x100u + 0x11u; while (c->by_lkey.count(mi->mr.ibv.lkey));
  do mi->mr.ibv.rkey = next_fabric_number() * 0x100u + 0x22u; while (c->by_rkey.count(mi->mr.ibv.rkey));
  mi->mr.ibv.handle = mi->mr.ibv.lkey;
  c->by_lkey[mi->mr.ibv.lkey] = &mi->mr;
  c->by_rkey[mi->mr.ibv.rkey] = &mi->mr;
  return &mi->mr.ibv;
}

SOFTIB_API ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<uint64_t>(addr), static_cast<unsigned>(access));
}

SOFTIB_API ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, iova, static_cast<unsigned>(access));
}

SOFTIB_API ibv_mr* ibv_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
  errno = EOPNOTSUPP;
  return nullptr;
}

SOFTIB_API int ibv_dereg_mr(ibv_mr* mr) {
  Context* c = ctx_of(mr->context);
  {
    std::lock_guard<std::mutex> g(c->lock);
    c->by_lkey.erase(mr->lkey);
    c->by_rkey.erase(mr->rkey);
  }
  delete reinterpret_cast<MrImpl*>(mr);
  return 0;
}

SOFTIB_API int ibv_rereg_mr(ibv_mr*, int, ibv_pd*, void*, size_t, int) {
  errno = EOPNOTSUPP;
  return IBV_REREG_MR_ERR_INPUT;
}

// ---- completion channels and queues ----

SOFTIB_API ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  fcntl(fds[1], F_SETFL, O_NONBLOCK);  // the progress thread must never block on a slow consumer
  auto* ch = new Channel{};
  ch->ibv.context = context;
  ch->ibv.fd = fds[0];
  ch->ibv.refcnt = 0;
  ch->write_fd = fds[1];
  return &ch->ibv;
}

SOFTIB_API int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  auto* ch = reinterpret_cast<Channel*>(channel);
  if (ch->ibv.refcnt) {
    errno = EBUSY;
    return EBUSY;
  }
  close(ch->ibv.fd);
  close(ch->write_fd);
  delete ch;
  return 0;
}

SOFTIB_API ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                                 int comp_vector) {
  if (cqe < 1 || cqe > (1 << 22) || comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
    errno = EINVAL;
    return nullptr;
  }
  Cq* cq = new Cq;
  memset(&cq->ibv, 0, sizeof cq->ibv);
  cq->ibv.context = context;
  cq->ibv.channel = channel;
  cq->ibv.cq_context = cq_context;
  cq->ibv.cqe = cqe;
  pthread_mutex_init(&cq->ibv.mutex, nullptr);
  pthread_cond_init(&cq->ibv.cond, nullptr);
  if (channel) {
    Context* c = ctx_of(context);
    std::lock_guard<std::mutex> g(c->lock);
    ++channel->refcnt;
  }
  return &cq->ibv;
}

SOFTIB_API int ibv_resize_cq(ibv_cq* cq, int cqe) {
  if (cqe < 1 || cqe > (1 << 22)) return EINVAL;
  cq->cqe = cqe;
  return 0;
}

SOFTIB_API int ibv_destroy_cq(ibv_cq* ibcq) {
  Context* c = ctx_of(ibcq->context);
  {
    std::lock_guard<std::mutex> g(c->lock);
    for (auto& [n, qp] : c->qps)
      if (qp->ibv.send_cq == ibcq || qp->ibv.recv_cq == ibcq) return EBUSY;
    if (ibcq->channel) --ibcq->channel->refcnt;
  }
  delete reinterpret_cast<Cq*>(ibcq);
  return 0;
}

SOFTIB_API int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  ibv_cq* which = nullptr;
  ssize_t n;
  do n = read(channel->fd, &which, sizeof which); while (n < 0 && errno == EINTR);
  if (n != sizeof which) return -1;
  *cq = which;
  *cq_context = which->cq_context;
  return 0;
}

SOFTIB_API void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += nevents;
  pthread_cond_signal(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}

// ---- shared receive queues ----

SOFTIB_API ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* init) {
  if (!init || init->attr.max_wr == 0 || init->attr.max_wr > kMaxWr || init->attr.max_sge > kMaxSge) {
    errno = EINVAL;
    return nullptr;
  }
  Srq* s = new Srq;
  memset(&s->ibv, 0, sizeof s->ibv);
  s->ibv.context = pd->context;
  s->ibv.pd = pd;
  s->ibv.srq_context = init->srq_context;
  pthread_mutex_init(&s->ibv.mutex, nullptr);
  pthread_cond_init(&s->ibv.cond, nullptr);
  s->max_wr = init->attr.max_wr;
  s->max_sge = std::max<uint32_t>(init->attr.max_sge, 1);
  s->limit = init->attr.srq_limit;
  return &s->ibv;
}

SOFTIB_API int ibv_modify_srq(ibv_srq* ibsrq, ibv_srq_attr* attr, int mask) {
  Srq* s = reinterpret_cast<Srq*>(ibsrq);
  std::lock_guard<std::mutex> g(ctx_of(ibsrq->context)->lock);
  if (mask & IBV_SRQ_MAX_WR) {
    if (attr->max_wr == 0 || attr->max_wr > kMaxWr || attr->max_wr < s->wqes.size()) return EINVAL;
    s->max_wr = attr->max_wr;
  }
  if (mask & IBV_SRQ_LIMIT) s->limit = attr->srq_limit;
  return 0;
}

SOFTIB_API int ibv_query_srq(ibv_srq* ibsrq, ibv_srq_attr* attr) {
  Srq* s = reinterpret_cast<Srq*>(ibsrq);
  std::lock_guard<std::mutex> g(ctx_of(ibsrq->context)->lock);
  attr->max_wr = s->max_wr;
  attr->max_sge = s->max_sge;
  attr->srq_limit = s->limit;
  return 0;
}

SOFTIB_API int ibv_destroy_srq(ibv_srq* ibsrq) {
  Srq* s = reinterpret_cast<Srq*>(ibsrq);
  {
    std::lock_guard<std::mutex> g(ctx_of(ibsrq->context)->lock);
    if (!s->qps.empty()) return EBUSY;
  }
  delete s;
  return 0;
}

// ---- queue pairs ----

SOFTIB_API ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  if (!init || !init->send_cq || !init->recv_cq || (init->qp_type != IBV_QPT_RC && init->qp_type != IBV_QPT_UD)) {
    errno = init && (init->qp_type != IBV_QPT_RC && init->qp_type != IBV_QPT_UD) ? EOPNOTSUPP : EINVAL;
    return nullptr;
  }
  ibv_qp_cap& cap = init->cap;
  if (cap.max_send_wr > kMaxWr || cap.max_recv_wr > kMaxWr || cap.max_send_sge > kMaxSge ||
      cap.max_recv_sge > kMaxSge || cap.max_inline_data > kMaxInline) {
    errno = EINVAL;
    return nullptr;
  }
  Context* c = ctx_of(pd->context);
  Qp* qp = new Qp;
  memset(&qp->ibv, 0, sizeof qp->ibv);
  memset(&qp->attr, 0, sizeof qp->attr);
  qp->ibv.context = pd->context;
  qp->ibv.qp_context = init->qp_context;
  qp->ibv.pd = pd;
  qp->ibv.send_cq = init->send_cq;
  qp->ibv.recv_cq = init->recv_cq;
  qp->ibv.srq = init->srq;
  qp->ibv.qp_type = init->qp_type;
  qp->ibv.state = IBV_QPS_RESET;
  pthread_mutex_init(&qp->ibv.mutex, nullptr);
  pthread_cond_init(&qp->ibv.cond, nullptr);
  // Report what the hardware grants: at least one of each, and a useful inline size.
  cap.max_send_wr = std::max<uint32_t>(cap.max_send_wr, 1);
  cap.max_recv_wr = init->srq ? 0 : std::max<uint32_t>(cap.max_recv_wr, 1);
  cap.max_send_sge = std::max<uint32_t>(cap.max_send_sge, 1);
  cap.max_recv_sge = init->srq ? 0 : std::max<uint32_t>(cap.max_recv_sge, 1);
  cap.max_inline_data = std::max(cap.max_inline_data, kDefaultInline);
  qp->cap = cap;
  qp->sq_sig_all = init->sq_sig_all != 0;
  qp->attr.qp_state = IBV_QPS_RESET;
  qp->attr.cap = cap;
  std::lock_guard<std::mutex> g(c->lock);
  uint32_t qpn;
  do qpn = next_fabric_number() & 0xFFFFFF; while (qpn < 2 || qpn == 0xFFFFFF || c->qps.count(qpn));
  qp->ibv.qp_num = qpn;
  qp->ibv.handle = qpn;
  if (!publish_qp(c->lid, qpn, c->self)) {
    delete qp;
    errno = EIO;
    return nullptr;
  }
  c->qps[qpn] = qp;
  if (Srq* s = reinterpret_cast<Srq*>(init->srq)) s->qps.push_back(qp);
  return &qp->ibv;
}

namespace {

// Which attributes each transition requires and allows, as the IB spec's QP state table says.
struct TransitionMasks {
  int required;
  int optional;
};

bool transition_masks(ibv_qp_type type, ibv_qp_state from, ibv_qp_state to, TransitionMasks* m) {
  const int s = IBV_QP_STATE;
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) {
    *m = {s, 0};
    return true;
  }
  bool rc = type == IBV_QPT_RC;
  if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
    *m = rc ? TransitionMasks{s | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0}
            : TransitionMasks{s | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0};
    return true;
  }
  if (from == IBV_QPS_INIT && to == IBV_QPS_INIT) {
    *m = {0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | (rc ? IBV_QP_ACCESS_FLAGS : IBV_QP_QKEY)};
    return true;
  }
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
    *m = rc ? TransitionMasks{s | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                              IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX}
            : TransitionMasks{s, IBV_QP_PKEY_INDEX | IBV_QP_QKEY};
    return true;
  }
  if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
    *m = rc ? TransitionMasks{s | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                  IBV_QP_MAX_QP_RD_ATOMIC,
                              IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
                                  IBV_QP_PATH_MIG_STATE}
            : TransitionMasks{s | IBV_QP_SQ_PSN, IBV_QP_QKEY};
    return true;
  }
  if (from == IBV_QPS_RTS && to == IBV_QPS_RTS) {
    *m = rc ? TransitionMasks{0, IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_ALT_PATH |
                                     IBV_QP_PATH_MIG_STATE}
            : TransitionMasks{0, IBV_QP_QKEY};
    return true;
  }
  return false;  // SQD/SQE and every other edge are not supported
}

}  // namespace

SOFTIB_API int ibv_modify_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int mask) {
  Qp* qp = reinterpret_cast<Qp*>(ibqp);
  Context* c = ctx_of(ibqp->context);
  std::lock_guard<std::mutex> g(c->lock);
  ibv_qp_state from = ibqp->state;
  if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != from) return EINVAL;
  ibv_qp_state to = (mask & IBV_QP_STATE) ? attr->qp_state : from;
  TransitionMasks m;
  if (!transition_masks(ibqp->qp_type, from, to, &m)) return EINVAL;
  int given = mask & ~IBV_QP_CUR_STATE;
  if ((given & m.required) != m.required || (given & ~(m.required | m.optional | IBV_QP_STATE))) return EINVAL;
  if ((mask & IBV_QP_PORT) && attr->port_num != 1) return EINVAL;
  if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0) return EINVAL;
  if ((mask & IBV_QP_PATH_MTU) && (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > IBV_MTU_4096)) return EINVAL;
  if ((mask & IBV_QP_AV) && attr->ah_attr.dlid == 0) return EINVAL;

  ibv_qp_attr& a = qp->attr;
  if (mask & IBV_QP_PKEY_INDEX) a.pkey_index = attr->pkey_index;
  if (mask & IBV_QP_PORT) a.port_num = attr->port_num;
  if (mask & IBV_QP_ACCESS_FLAGS) a.qp_access_flags = attr->qp_access_flags;
  if (mask & IBV_QP_QKEY) a.qkey = attr->qkey;
  if (mask & IBV_QP_AV) a.ah_attr = attr->ah_attr;
  if (mask & IBV_QP_PATH_MTU) a.path_mtu = attr->path_mtu;
  if (mask & IBV_QP_DEST_QPN) a.dest_qp_num = attr->dest_qp_num;
  if (mask & IBV_QP_RQ_PSN) a.rq_psn = attr->rq_psn;
  if (mask & IBV_QP_SQ_PSN) a.sq_psn = attr->sq_psn;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) a.max_dest_rd_atomic = attr->max_dest_rd_atomic;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) a.max_rd_atomic = attr->max_rd_atomic;
  if (mask & IBV_QP_MIN_RNR_TIMER) a.min_rnr_timer = attr->min_rnr_timer;
  if (mask & IBV_QP_TIMEOUT) a.timeout = attr->timeout;
  if (mask & IBV_QP_RETRY_CNT) a.retry_cnt = attr->retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) a.rnr_retry = attr->rnr_retry;
  if (mask & IBV_QP_ALT_PATH) a.alt_ah_attr = attr->alt_ah_attr;
  if (mask & IBV_QP_PATH_MIG_STATE) a.path_mig_state = attr->path_mig_state;

  if (to == IBV_QPS_ERR && from != IBV_QPS_ERR) {
    enter_error(qp);
  } else if (to == IBV_QPS_RESET) {
    qp->sq.clear();
    qp->rq.clear();
    qp->incoming.clear();
    qp->conn = nullptr;
    qp->giving_up = false;
  }
  ibqp->state = to;
  a.qp_state = to;
  if (to == IBV_QPS_RTR && from == IBV_QPS_INIT && ibqp->qp_type == IBV_QPT_RC) {
    // Connect now so the first send does not pay for it; failure is reported on that send.
    qp->conn = conn_to(c, a.ah_attr.dlid, a.dest_qp_num);
    drain_incoming(c, qp);
  }
  return 0;
}

SOFTIB_API int ibv_query_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int, ibv_qp_init_attr* init) {
  Qp* qp = reinterpret_cast<Qp*>(ibqp);
  std::lock_guard<std::mutex> g(ctx_of(ibqp->context)->lock);
  *attr = qp->attr;
  attr->qp_state = ibqp->state;
  attr->cur_qp_state = ibqp->state;
  attr->cap = qp->cap;
  if (init) {
    memset(init, 0, sizeof *init);
    init->qp_context = ibqp->qp_context;
    init->send_cq = ibqp->send_cq;
    init->recv_cq = ibqp->recv_cq;
    init->srq = ibqp->srq;
    init->cap = qp->cap;
    init->qp_type = ibqp->qp_type;
    init->sq_sig_all = qp->sq_sig_all;
  }
  return 0;
}

SOFTIB_API int ibv_destroy_qp(ibv_qp* ibqp) {
  Qp* qp = reinterpret_cast<Qp*>(ibqp);
  Context* c = ctx_of(ibqp->context);
  std::lock_guard<std::mutex> g(c->lock);
  withdraw_qp(c->lid, ibqp->qp_num);
  c->qps.erase(ibqp->qp_num);
  if (Srq* s = reinterpret_cast<Srq*>(ibqp->srq)) std::erase(s->qps, qp);
  delete qp;
  return 0;
}

SOFTIB_API ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp*) {
  errno = EOPNOTSUPP;  // the extended work-request API is not emulated
  return nullptr;
}

SOFTIB_API int ibv_query_qp_data_in_order(ibv_qp*, enum ibv_wr_opcode, uint32_t) {
  return 1;  // a stream transport delivers every message whole and in order
}

SOFTIB_API int ibv_set_ece(ibv_qp*, ibv_ece*) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

SOFTIB_API int ibv_query_ece(ibv_qp*, ibv_ece*) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

// ---- address handles ----

SOFTIB_API ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (!attr || attr->dlid == 0 || attr->port_num != 1) {
    errno = EINVAL;
    return nullptr;
  }
  Ah* ah = new Ah{};
  ah->ibv.context = pd->context;
  ah->ibv.pd = pd;
  ah->attr = *attr;
  return &ah->ibv;
}

SOFTIB_API int ibv_destroy_ah(ibv_ah* ah) {
  delete reinterpret_cast<Ah*>(ah);
  return 0;
}

SOFTIB_API int ibv_init_ah_from_wc(ibv_context*, uint8_t port_num, ibv_wc* wc, ibv_grh* grh, ibv_ah_attr* ah) {
  memset(ah, 0, sizeof *ah);
  ah->dlid = wc->slid;
  ah->sl = wc->sl;
  ah->src_path_bits = wc->dlid_path_bits;
  ah->port_num = port_num;
  if (wc->wc_flags & IBV_WC_GRH) {
    ah->is_global = 1;
    ah->grh.dgid = grh->sgid;  // reply to whoever sent it
    ah->grh.hop_limit = 0xFF;
    ah->grh.sgid_index = 0;
    ah->grh.flow_label = be32toh(grh->version_tclass_flow) & 0xFFFFF;
    ah->grh.traffic_class = (be32toh(grh->version_tclass_flow) >> 20) & 0xFF;
  }
  return 0;
}

SOFTIB_API ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
  ibv_ah_attr attr;
  if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr)) return nullptr;
  return ibv_create_ah(pd, &attr);
}

SOFTIB_API int ibv_attach_mcast(ibv_qp*, const ibv_gid*, uint16_t) { return EOPNOTSUPP; }
SOFTIB_API int ibv_detach_mcast(ibv_qp*, const ibv_gid*, uint16_t) { return EOPNOTSUPP; }
