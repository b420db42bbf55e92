// The InfiniBand plugin, program side: the interposed calls that make, change and destroy
// completion channels, completion queues, shared receive queues, address handles and queue pairs
// (virtual objects, ib_objects.h, each over the library's real one).
//
// Every wrapper that touches the library holds the gate (ib_plugin.h).
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "plugins/infiniband/ib_plugin.h"

using namespace stasis::ib;

extern "C" {

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
