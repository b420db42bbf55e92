// The InfiniBand plugin, program side: the data path. The inline post/poll functions of verbs.h
// reach the plugin through the virtual context's ops (install_ops): work requests go to the real
// QP with real keys and addresses, completions come back with the virtual identifiers, and every
// posted receive is recorded until it completes (the rings a restart posts again).
//
// Every op that touches the library holds the gate (ib_plugin.h).
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "plugins/infiniband/ib_plugin.h"

namespace stasis::ib {

namespace {

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
