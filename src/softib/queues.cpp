// Protection domains, memory regions, completion queues, shared receive queues, queue pairs and
// address handles, and the semantics of every frame: RC requests and responses, UD datagrams.
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

namespace softib {
namespace {

constexpr uint32_t kMaxWr = 16384;
constexpr uint32_t kMaxSge = 32;
constexpr uint32_t kMaxInline = 1024;
constexpr uint32_t kDefaultInline = 256;
constexpr uint32_t kUdMtu = 4096;
constexpr uint32_t kGrhBytes = 40;

struct MrExtra {
  char* base;     // where the bytes are in this process
  uint64_t iova;  // the address peers use
};

// An MR as this process keeps it: the public ibv_mr first, then the translation.
struct MrImpl {
  Mr mr;
  MrExtra x;
};

MrImpl* mr_impl(Mr* m) { return reinterpret_cast<MrImpl*>(m); }

void push_cqe(Cq* cq, const ibv_wc& wc, bool solicited) {
  cq->entries.push_back(wc);
  if (cq->armed && (!cq->solicited_only || solicited || wc.status != IBV_WC_SUCCESS)) {
    cq->armed = false;
    if (cq->ibv.channel) {
      Channel* ch = reinterpret_cast<Channel*>(cq->ibv.channel);
      ibv_cq* which = &cq->ibv;
      if (write(ch->write_fd, &which, sizeof which) < 0) { /* pipe full: an event is pending anyway */ }
    }
  }
}

ibv_wc make_wc(Qp* qp, uint64_t wr_id, ibv_wc_status status, ibv_wc_opcode op, uint32_t len) {
  ibv_wc wc{};
  wc.wr_id = wr_id;
  wc.status = status;
  wc.opcode = op;
  wc.byte_len = len;
  wc.qp_num = qp->ibv.qp_num;
  return wc;
}

Cq* send_cq(Qp* qp) { return reinterpret_cast<Cq*>(qp->ibv.send_cq); }
Cq* recv_cq(Qp* qp) { return reinterpret_cast<Cq*>(qp->ibv.recv_cq); }
Srq* srq_of(Qp* qp) { return reinterpret_cast<Srq*>(qp->ibv.srq); }

// Completions leave the send queue in posting order, however their responses arrived.
void retire_sq(Qp* qp) {
  while (!qp->sq.empty() && qp->sq.front().done) {
    SendWqe& w = qp->sq.front();
    if (w.signaled || w.status != IBV_WC_SUCCESS)
      push_cqe(send_cq(qp), make_wc(qp, w.wr_id, w.status, w.opcode, w.byte_len), false);
    qp->sq.pop_front();
  }
}

void flush_recv(Qp* qp, const RecvWqe& r) {
  push_cqe(recv_cq(qp), make_wc(qp, r.wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0), false);
}

void enter_error(Qp* qp) {
  qp->ibv.state = IBV_QPS_ERR;
  qp->attr.qp_state = IBV_QPS_ERR;
  for (SendWqe& w : qp->sq)
    if (!w.done) {
      w.done = true;
      w.status = IBV_WC_WR_FLUSH_ERR;
    }
  retire_sq(qp);
  for (const RecvWqe& r : qp->rq) flush_recv(qp, r);
  qp->rq.clear();
  qp->incoming.clear();
}

Mr* find_lkey(Context* c, uint32_t lkey) {
  auto it = c->by_lkey.find(lkey);
  return it == c->by_lkey.end() ? nullptr : it->second;
}

// Is [addr, addr+len) inside the MR named by lkey, with the access the operation needs?
bool local_range_ok(Context* c, const ibv_sge& s, bool need_write) {
  Mr* m = find_lkey(c, s.lkey);
  if (!m) return false;
  if (need_write && !(m->access & IBV_ACCESS_LOCAL_WRITE)) return false;
  uint64_t lo = reinterpret_cast<uint64_t>(m->ibv.addr);
  return s.addr >= lo && s.addr + s.length <= lo + m->ibv.length;
}

// Copies len bytes into the scatter list starting at byte `skip`; false if a buffer is invalid.
bool scatter(Context* c, const std::vector<ibv_sge>& sges, size_t skip, const char* data, size_t len) {
  for (const ibv_sge& s : sges) {
    if (len == 0) break;
    if (skip >= s.length) {
      skip -= s.length;
      continue;
    }
    size_t n = std::min<size_t>(s.length - skip, len);
    ibv_sge part{s.addr + skip, static_cast<uint32_t>(n), s.lkey};
    if (!local_range_ok(c, part, true)) return false;
    memcpy(reinterpret_cast<char*>(part.addr), data, n);
    data += n;
    len -= n;
    skip = 0;
  }
  return len == 0;
}

uint64_t sge_total(const std::vector<ibv_sge>& sges) {
  uint64_t t = 0;
  for (const ibv_sge& s : sges) t += s.length;
  return t;
}

// Finds the MR behind an rkey and translates a remote address into local memory.
char* remote_target(Context* c, Qp* qp, uint32_t rkey, uint64_t addr, uint64_t len, int need) {
  auto it = c->by_rkey.find(rkey);
  if (it == c->by_rkey.end()) return nullptr;
  Mr* m = it->second;
  MrImpl* mi = mr_impl(m);
  if (!(m->access & need) || !(qp->attr.qp_access_flags & need) || m->ibv.pd != qp->ibv.pd) return nullptr;
  if (addr < mi->x.iova || addr + len > mi->x.iova + m->ibv.length || addr + len < addr) return nullptr;
  return mi->x.base + (addr - mi->x.iova);
}

void send_response(Context* c, Conn* to, const FrameHeader& req, FrameType type, ibv_wc_status status,
                   const char* data, size_t len) {
  if (!to || to->dead) return;
  char* p = frame_reserve(to, sizeof(FrameHeader) + len);
  FrameHeader h{};
  h.frame_len = static_cast<uint32_t>(sizeof h + len);
  h.type = static_cast<uint8_t>(type);
  h.dst_qpn = req.src_qpn;
  h.src_qpn = req.dst_qpn;
  h.src_lid = c->lid;
  h.seq = req.seq;
  h.status = status;
  h.length = static_cast<uint32_t>(len);
  memcpy(p, &h, sizeof h);
  if (len) memcpy(p + sizeof h, data, len);
  flush(c, to);
}

bool take_recv(Qp* qp, RecvWqe* out) {
  if (Srq* s = srq_of(qp)) {
    if (s->wqes.empty()) return false;
    *out = std::move(s->wqes.front());
    s->wqes.pop_front();
    return true;
  }
  if (qp->rq.empty()) return false;
  *out = std::move(qp->rq.front());
  qp->rq.pop_front();
  return true;
}

bool has_recv(Qp* qp) { return srq_of(qp) ? !srq_of(qp)->wqes.empty() : !qp->rq.empty(); }

// Executes one RC request as the responder. Returns false when it must wait (no receive WQE yet,
// or the QP has not reached RTR), so requests stay in order behind it.
// Fills in what every receive completion carries about its sender (and the immediate data, if
// the frame has some) and queues it on the QP's receive CQ.
void complete_receive(Qp* qp, ibv_wc wc, const FrameHeader& h, bool with_imm) {
  if (with_imm) {
    wc.wc_flags |= IBV_WC_WITH_IMM;
    wc.imm_data = h.imm;
  }
  wc.src_qp = h.src_qpn;
  wc.slid = h.src_lid;
  push_cqe(recv_cq(qp), wc, h.flags & kSolicited);
}

bool process_request(Context* c, Qp* qp, const FrameHeader& h, const char* payload, size_t len, Conn* from) {
  if (qp->ibv.state == IBV_QPS_ERR || qp->ibv.state == IBV_QPS_RESET) {
    send_response(c, from, h, FrameType::kAck, IBV_WC_RETRY_EXC_ERR, nullptr, 0);
    return true;
  }
  if (qp->ibv.state == IBV_QPS_INIT) return false;
  auto type = static_cast<FrameType>(h.type);
  bool with_imm = h.flags & kHasImm;
  if (type == FrameType::kSend || (type == FrameType::kWrite && with_imm)) {
    if (!has_recv(qp)) return false;  // receiver not ready: the requester waits (RNR retry forever)
  }
  if (type == FrameType::kWrite) {
    char* dst = remote_target(c, qp, h.rkey, h.remote_addr, len, IBV_ACCESS_REMOTE_WRITE);
    if (!dst && len > 0) {
      send_response(c, from, h, FrameType::kAck, IBV_WC_REM_ACCESS_ERR, nullptr, 0);
      return true;
    }
    if (len) memcpy(dst, payload, len);
    if (with_imm) {
      RecvWqe r;
      take_recv(qp, &r);
      complete_receive(
          qp, make_wc(qp, r.wr_id, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, static_cast<uint32_t>(len)),
          h, true);
    }
    send_response(c, from, h, FrameType::kAck, IBV_WC_SUCCESS, nullptr, 0);
    return true;
  }
  if (type == FrameType::kReadReq) {
    char* src = remote_target(c, qp, h.rkey, h.remote_addr, h.length, IBV_ACCESS_REMOTE_READ);
    if (!src && h.length > 0) {
      send_response(c, from, h, FrameType::kReadResp, IBV_WC_REM_ACCESS_ERR, nullptr, 0);
      return true;
    }
    send_response(c, from, h, FrameType::kReadResp, IBV_WC_SUCCESS, src, h.length);
    return true;
  }
  // Send.
  RecvWqe r;
  take_recv(qp, &r);
  if (len > sge_total(r.sges) || !scatter(c, r.sges, 0, payload, len)) {
    bool too_long = len > sge_total(r.sges);
    push_cqe(recv_cq(qp),
             make_wc(qp, r.wr_id, too_long ? IBV_WC_LOC_LEN_ERR : IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0), false);
    send_response(c, from, h, FrameType::kAck, too_long ? IBV_WC_REM_INV_REQ_ERR : IBV_WC_REM_OP_ERR,
                  nullptr, 0);
    enter_error(qp);
    return true;
  }
  complete_receive(qp, make_wc(qp, r.wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, static_cast<uint32_t>(len)), h,
                   with_imm);
  send_response(c, from, h, FrameType::kAck, IBV_WC_SUCCESS, nullptr, 0);
  return true;
}

void drain_incoming(Context* c, Qp* qp) {
  while (!qp->incoming.empty()) {
    InFrame& f = qp->incoming.front();
    if (!process_request(c, qp, f.h, f.payload.data(), f.payload.size(), f.from)) return;
    qp->incoming.pop_front();
  }
}

void handle_ud(Context* c, Qp* qp, const FrameHeader& h, const char* payload, size_t len) {
  // Unreliable datagrams: anything the receiver cannot take is silently dropped.
  if (qp->ibv.qp_type != IBV_QPT_UD || qp->ibv.state < IBV_QPS_RTR || qp->ibv.state == IBV_QPS_ERR) return;
  if (h.qkey != qp->attr.qkey) return;
  RecvWqe r;
  if (!take_recv(qp, &r)) return;
  if (len + kGrhBytes > sge_total(r.sges)) {
    push_cqe(recv_cq(qp), make_wc(qp, r.wr_id, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0), false);
    return;
  }
  ibv_wc wc = make_wc(qp, r.wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, static_cast<uint32_t>(len + kGrhBytes));
  bool ok = true;
  if (h.flags & kHasGrh) {
    // The 40-byte global route header a real HCA writes in front of the datagram.
    unsigned char grh[kGrhBytes] = {};
    uint32_t ver_class_flow = htobe32(6u << 28);
    memcpy(grh, &ver_class_flow, 4);
    uint16_t paylen = htobe16(static_cast<uint16_t>(len));
    memcpy(grh + 4, &paylen, 2);
    grh[6] = 0x1B;  // next header: IBA transport
    grh[7] = 64;    // hop limit
    memcpy(grh + 8, h.sgid, 16);
    memcpy(grh + 24, h.dgid, 16);
    ok = scatter(c, r.sges, 0, reinterpret_cast<char*>(grh), kGrhBytes);
    wc.wc_flags |= IBV_WC_GRH;
  }
  ok = ok && scatter(c, r.sges, kGrhBytes, payload, len);
  if (!ok) {
    push_cqe(recv_cq(qp), make_wc(qp, r.wr_id, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0), false);
    return;
  }
  complete_receive(qp, wc, h, h.flags & kHasImm);
}

void handle_response(Context* c, Qp* qp, const FrameHeader& h, const char* payload, size_t len) {
  for (SendWqe& w : qp->sq) {
    if (w.seq != h.seq || w.done) continue;
    auto status = static_cast<ibv_wc_status>(h.status);
    if (status == IBV_WC_SUCCESS && static_cast<FrameType>(h.type) == FrameType::kReadResp &&
        !scatter(c, w.read_sges, 0, payload, len))
      status = IBV_WC_LOC_PROT_ERR;
    w.done = true;
    w.status = status;
    if (status != IBV_WC_SUCCESS) {
      // An error completes this WQE with its status and flushes everything behind it.
      retire_sq(qp);
      enter_error(qp);
    } else {
      retire_sq(qp);
    }
    return;
  }
}

}  // namespace

void handle_frame(Context* c, Conn* from, const FrameHeader& h, const char* payload, size_t len) {
  auto it = c->qps.find(h.dst_qpn);
  Qp* qp = it == c->qps.end() ? nullptr : it->second;
  auto type = static_cast<FrameType>(h.type);
  switch (type) {
    case FrameType::kSend:
    case FrameType::kWrite:
    case FrameType::kReadReq:
      if (!qp || qp->ibv.qp_type != IBV_QPT_RC) {
        // No such QP at this address: the requester would retry until it gives up.
        send_response(c, from, h, type == FrameType::kReadReq ? FrameType::kReadResp : FrameType::kAck,
                      IBV_WC_RETRY_EXC_ERR, nullptr, 0);
        return;
      }
      if (qp->incoming.empty() && process_request(c, qp, h, payload, len, from)) return;
      qp->incoming.push_back(InFrame{h, std::vector<char>(payload, payload + len), from});
      return;
    case FrameType::kUdSend:
      if (qp) handle_ud(c, qp, h, payload, len);
      return;
    case FrameType::kAck:
    case FrameType::kReadResp:
      if (qp) handle_response(c, qp, h, payload, len);
      return;
  }
}

void qp_fail_transport(Context*, Qp* qp) {
  qp->conn = nullptr;
  if (qp->ibv.qp_type != IBV_QPT_RC || qp->ibv.state == IBV_QPS_ERR) return;
  // A peer that closed after answering everything is no error (a real QP would not notice until
  // its next send, which then fails to reach anyone). Only requests left unanswered are lost.
  bool waiting = false;
  for (const SendWqe& w : qp->sq) waiting = waiting || !w.done;
  if (!waiting) return;
  bool first = true;
  for (SendWqe& w : qp->sq)
    if (!w.done && first) {
      w.done = true;
      w.status = IBV_WC_RETRY_EXC_ERR;
      first = false;
    }
  retire_sq(qp);
  enter_error(qp);
}

}  // namespace softib

// ===================================== verbs API =====================================

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

namespace softib {

int op_poll_cq(ibv_cq* ibcq, int num_entries, ibv_wc* wc) {
  Cq* cq = reinterpret_cast<Cq*>(ibcq);
  Context* c = ctx_of(ibcq->context);
  std::lock_guard<std::mutex> g(c->lock);
  // A busy-polling application may starve the progress thread on a small machine: progress here too.
  if (cq->entries.empty()) progress_now(c);
  int n = 0;
  while (n < num_entries && !cq->entries.empty()) {
    wc[n++] = cq->entries.front();
    cq->entries.pop_front();
  }
  return n;
}

int op_req_notify_cq(ibv_cq* ibcq, int solicited_only) {
  Cq* cq = reinterpret_cast<Cq*>(ibcq);
  Context* c = ctx_of(ibcq->context);
  std::lock_guard<std::mutex> g(c->lock);
  cq->armed = true;
  cq->solicited_only = solicited_only != 0;
  return 0;
}

}  // namespace softib

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

namespace softib {

bool copy_recv_wr(const ibv_recv_wr* wr, uint32_t max_sge, RecvWqe* out) {
  if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > max_sge) return false;
  out->wr_id = wr->wr_id;
  out->sges.assign(wr->sg_list, wr->sg_list + wr->num_sge);
  return true;
}

int op_post_srq_recv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Srq* s = reinterpret_cast<Srq*>(ibsrq);
  Context* c = ctx_of(ibsrq->context);
  std::lock_guard<std::mutex> g(c->lock);
  for (; wr; wr = wr->next) {
    RecvWqe r;
    if (!copy_recv_wr(wr, s->max_sge, &r)) {
      *bad = wr;
      return EINVAL;
    }
    if (s->wqes.size() >= s->max_wr) {
      *bad = wr;
      return ENOMEM;
    }
    s->wqes.push_back(std::move(r));
  }
  for (Qp* qp : s->qps) drain_incoming(c, qp);
  return 0;
}

int op_post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Qp* qp = reinterpret_cast<Qp*>(ibqp);
  Context* c = ctx_of(ibqp->context);
  std::lock_guard<std::mutex> g(c->lock);
  for (; wr; wr = wr->next) {
    RecvWqe r;
    if (ibqp->srq || ibqp->state == IBV_QPS_RESET || !copy_recv_wr(wr, qp->cap.max_recv_sge, &r)) {
      *bad = wr;
      return EINVAL;
    }
    if (qp->rq.size() >= qp->cap.max_recv_wr) {
      *bad = wr;
      return ENOMEM;
    }
    if (ibqp->state == IBV_QPS_ERR) {
      flush_recv(qp, r);
      continue;
    }
    qp->rq.push_back(std::move(r));
  }
  drain_incoming(c, qp);
  return 0;
}

int op_post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad) {
  Qp* qp = reinterpret_cast<Qp*>(ibqp);
  Context* c = ctx_of(ibqp->context);
  std::lock_guard<std::mutex> g(c->lock);
  bool rc = ibqp->qp_type == IBV_QPT_RC;
  for (; wr; wr = wr->next) {
    int err = 0;
    if (ibqp->state != IBV_QPS_RTS && ibqp->state != IBV_QPS_ERR) err = EINVAL;
    else if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > qp->cap.max_send_sge) err = EINVAL;
    else if (qp->sq.size() >= qp->cap.max_send_wr) err = ENOMEM;
    FrameType type = FrameType::kSend;
    ibv_wc_opcode wc_op = IBV_WC_SEND;
    switch (wr->opcode) {
      case IBV_WR_SEND:
      case IBV_WR_SEND_WITH_IMM:
        type = rc ? FrameType::kSend : FrameType::kUdSend;
        break;
      case IBV_WR_RDMA_WRITE:
      case IBV_WR_RDMA_WRITE_WITH_IMM:
        type = FrameType::kWrite;
        wc_op = IBV_WC_RDMA_WRITE;
        if (!rc) err = EINVAL;
        break;
      case IBV_WR_RDMA_READ:
        type = FrameType::kReadReq;
        wc_op = IBV_WC_RDMA_READ;
        if (!rc) err = EINVAL;
        break;
      default:
        err = EINVAL;  // atomics, memory windows, TSO: not emulated
    }
    uint64_t total = 0;
    for (int i = 0; !err && i < wr->num_sge; ++i) total += wr->sg_list[i].length;
    bool inline_data = (wr->send_flags & IBV_SEND_INLINE) && type != FrameType::kReadReq;
    if (!err && inline_data && total > qp->cap.max_inline_data) err = EINVAL;
    if (!err && total > (1ull << 31)) err = EINVAL;
    if (err) {
      *bad = wr;
      return err;
    }
    SendWqe w;
    w.wr_id = wr->wr_id;
    w.opcode = wc_op;
    w.signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
    w.byte_len = static_cast<uint32_t>(total);
    w.seq = qp->next_seq++;
    if (ibqp->state == IBV_QPS_ERR) {
      w.done = true;
      w.status = IBV_WC_WR_FLUSH_ERR;
      qp->sq.push_back(std::move(w));
      retire_sq(qp);
      continue;
    }
    // Local buffers must be registered (inline data is copied now and needs no key).
    bool local_ok = true;
    for (int i = 0; i < wr->num_sge && !inline_data; ++i)
      local_ok = local_ok && local_range_ok(c, wr->sg_list[i], type == FrameType::kReadReq);
    if (type == FrameType::kReadReq) w.read_sges.assign(wr->sg_list, wr->sg_list + wr->num_sge);

    FrameHeader h{};
    h.src_lid = c->lid;
    h.src_qpn = ibqp->qp_num;
    h.seq = w.seq;
    h.type = static_cast<uint8_t>(type);
    if (wr->opcode == IBV_WR_SEND_WITH_IMM || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
      h.flags |= kHasImm;
      h.imm = wr->imm_data;
    }
    if (wr->send_flags & IBV_SEND_SOLICITED) h.flags |= kSolicited;
    Conn* conn = nullptr;
    if (rc) {
      h.dst_qpn = qp->attr.dest_qp_num;
      h.rkey = wr->wr.rdma.rkey;
      h.remote_addr = wr->wr.rdma.remote_addr;
      if (local_ok) {
        if (!qp->conn || qp->conn->dead) qp->conn = conn_to(c, qp->attr.ah_attr.dlid, qp->attr.dest_qp_num);
        conn = qp->conn;
      }
    } else {
      Ah* ah = reinterpret_cast<Ah*>(wr->wr.ud.ah);
      h.dst_qpn = wr->wr.ud.remote_qpn;
      h.qkey = (wr->wr.ud.remote_qkey & 0x80000000u) ? qp->attr.qkey : wr->wr.ud.remote_qkey;
      if (ah && ah->attr.is_global) {
        h.flags |= kHasGrh;
        memcpy(h.sgid, c->gid.raw, 16);
        memcpy(h.dgid, ah->attr.grh.dgid.raw, 16);
      }
      if (total > kUdMtu) local_ok = false;
      if (local_ok && ah) conn = conn_to(c, ah->attr.dlid, h.dst_qpn);
    }
    if (!local_ok) {
      w.done = true;
      w.status = total > kUdMtu && !rc ? IBV_WC_LOC_LEN_ERR : IBV_WC_LOC_PROT_ERR;
      qp->sq.push_back(std::move(w));
      retire_sq(qp);
      if (rc) enter_error(qp);
      continue;
    }
    if (rc && !conn) {
      // Nobody owns the destination QP: a real HCA would retry and then give up.
      w.done = true;
      w.status = IBV_WC_RETRY_EXC_ERR;
      qp->sq.push_back(std::move(w));
      retire_sq(qp);
      enter_error(qp);
      continue;
    }
    size_t payload = type == FrameType::kReadReq ? 0 : total;
    h.length = static_cast<uint32_t>(total);
    h.frame_len = static_cast<uint32_t>(sizeof h + payload);
    if (conn) {
      char* p = frame_reserve(conn, h.frame_len);
      memcpy(p, &h, sizeof h);
      p += sizeof h;
      for (int i = 0; payload && i < wr->num_sge; ++i) {
        memcpy(p, reinterpret_cast<const void*>(wr->sg_list[i].addr), wr->sg_list[i].length);
        p += wr->sg_list[i].length;
      }
    }
    // UD completes once the datagram is handed to the wire; RC waits for the responder.
    if (!rc) w.done = true;
    qp->sq.push_back(std::move(w));
    if (conn) flush(c, conn);
    retire_sq(qp);
  }
  return 0;
}

}  // namespace softib

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
