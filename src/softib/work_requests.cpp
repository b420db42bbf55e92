// The data path: posting work requests, polling completion queues, and the semantics of every
// frame: RC requests and responses, UD datagrams. The objects they act on are made in objects.cpp.
#include <endian.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "transport.h"

using namespace softib;

namespace softib {
namespace {

constexpr uint32_t kUdMtu = 4096;
constexpr uint32_t kGrhBytes = 40;

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
    if (status == IBV_WC_RETRY_EXC_ERR) {
      // The responder says nobody there takes requests (its QP is gone or in error). Hardware
      // would hear nothing and retry: the request fails when the retries run out.
      start_giving_up(c, qp);
      return;
    }
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

// Also used by objects.cpp (ibv_modify_qp).
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

void drain_incoming(Context* c, Qp* qp) {
  while (!qp->incoming.empty()) {
    InFrame& f = qp->incoming.front();
    if (!process_request(c, qp, f.h, f.payload.data(), f.payload.size(), f.from)) return;
    qp->incoming.pop_front();
  }
}

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

// How long a real HCA keeps retrying an unanswered request: 4.096 us x 2^timeout per try, and
// retry_cnt retries after the first. A timeout of 0 means "forever" on hardware; here the requests
// still fail, after a minute, so that a lost peer never hangs a program for good.
std::chrono::steady_clock::duration retry_window(const Qp* qp) {
  using namespace std::chrono;
  if (qp->attr.timeout == 0 || qp->attr.timeout > 31) return minutes(1);
  auto one_try = nanoseconds(static_cast<int64_t>(4096.0 * static_cast<double>(1u << qp->attr.timeout)));
  auto window = one_try * (qp->attr.retry_cnt + 1);
  return std::min<steady_clock::duration>(window, minutes(1));
}

void qp_fail_transport(Context* c, Qp* qp) {
  qp->conn = nullptr;
  if (qp->ibv.qp_type != IBV_QPT_RC || qp->ibv.state == IBV_QPS_ERR || qp->giving_up) return;
  // A peer that closed after answering everything is no error (a real QP would not notice until
  // its next send, which then fails to reach anyone). Only requests left unanswered are lost, and
  // only once the retries would have run out: a peer that exits while a request it no longer
  // needs is in flight (ibv_srq_pingpong's last sends) is no error to a requester that finishes
  // first.
  bool waiting = false;
  for (const SendWqe& w : qp->sq) waiting = waiting || !w.done;
  if (waiting) start_giving_up(c, qp);
}

void start_giving_up(Context* c, Qp* qp) {
  if (qp->giving_up) return;
  qp->giving_up = true;
  qp->give_up_at = std::chrono::steady_clock::now() + retry_window(qp);
  c->giving_up.push_back(qp->ibv.qp_num);
  if (c->wake_fd >= 0) {  // the progress thread recomputes how long it may sleep
    uint64_t one = 1;
    if (write(c->wake_fd, &one, sizeof one) < 0) { /* already awake: the eventfd is full */ }
  }
}

void give_up_retries(Qp* qp) {
  qp->giving_up = false;
  if (qp->ibv.state == IBV_QPS_ERR || qp->ibv.state == IBV_QPS_RESET) return;
  bool first = true;
  for (SendWqe& w : qp->sq)
    if (!w.done && first) {
      w.done = true;
      w.status = IBV_WC_RETRY_EXC_ERR;
      first = false;
    }
  if (first) return;  // everything was answered meanwhile
  retire_sq(qp);
  enter_error(qp);
}

int expire_retries(Context* c) {
  auto now = std::chrono::steady_clock::now();
  int sleep_ms = -1;
  std::vector<uint32_t> still;
  for (uint32_t qpn : c->giving_up) {
    auto it = c->qps.find(qpn);
    if (it == c->qps.end() || !it->second->giving_up) continue;  // destroyed or reset meanwhile
    Qp* qp = it->second;
    if (qp->give_up_at <= now) {
      give_up_retries(qp);
      continue;
    }
    still.push_back(qpn);
    auto left = std::chrono::ceil<std::chrono::milliseconds>(qp->give_up_at - now).count();
    if (sleep_ms < 0 || left < sleep_ms) sleep_ms = static_cast<int>(left);
  }
  c->giving_up.swap(still);
  return sleep_ms;
}

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
      // Nobody owns the destination QP: a real HCA retries and then gives up.
      qp->sq.push_back(std::move(w));
      start_giving_up(c, qp);
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
