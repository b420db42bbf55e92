/* Two processes of one computation talking RC send/receive (with immediate data) over verbs:
 * the parent (client) sends a patterned message each round, the child (server) checks it and
 * answers with its checksum. Several receives stay posted ahead on both sides, and every
 * completion's QP number and source LID are checked against the identifiers exchanged at start,
 * so a restart that lost a receive, re-numbered a QP visibly or delivered a message twice fails.
 * Output (client only) is deterministic: "step N ..." per round, paced by DELAY_MS.
 * Usage: ib_sendrecv ROUNDS DELAY_MS [events|epoll] [rdma] [srq] [unsignaled]
 *   events: wait on a completion channel (ibv_get_cq_event);
 *   epoll: the same, waiting first with epoll_wait on the channel's descriptor;
 *   rdma: the client RDMA-writes each message (with immediate) into the server's buffer, with the
 *         server's rkey exchanged once at start, and RDMA-reads it back after the answer;
 *   srq: both sides receive through a shared receive queue (receives posted on it);
 *   unsignaled: the server's replies are posted unsignaled (no send completion). */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <sys/epoll.h>
#include <sys/wait.h>

#include "target_common.h"

enum { kSlots = 8, kSendSlots = 2, kSlotBytes = 4096, kMessageBytes = 1024 };
/* After the receive and send slots: where the client writes (server) and reads back (client). */
enum { kTargetSlot = kSlots + kSendSlots, kReadbackSlot = kTargetSlot + 1, kAllSlots = kReadbackSlot + 1 };

struct Peer {
  uint16_t lid;
  uint32_t qpn;
  uint64_t target; /* address of its kTargetSlot */
  uint32_t rkey;
};

struct Side {
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_mr *mr;
  struct ibv_comp_channel *channel; /* NULL: busy polling */
  struct ibv_cq *cq;
  struct ibv_qp *qp;
  struct ibv_srq *srq; /* NULL: receives on the QP */
  char *buf; /* kSlots receive slots, kSendSlots send slots, the target and the read-back slot */
  int rdma;
  int unsignaled_replies;
  int epoll_fd; /* -1: none */
  struct Peer self, peer;
};

static void post_receive(struct Side *s, int slot) {
  struct ibv_sge sge = {(uintptr_t)(s->buf + slot * kSlotBytes), kSlotBytes, s->mr->lkey};
  struct ibv_recv_wr wr = {.wr_id = (uint64_t)slot, .sg_list = &sge, .num_sge = 1}, *bad;
  CHECK((s->srq ? ibv_post_srq_recv(s->srq, &wr, &bad) : ibv_post_recv(s->qp, &wr, &bad)) == 0);
}

/* SEND_WITH_IMM, or with `remote` an RDMA operation on the peer's target slot. */
static void post_op(struct Side *s, enum ibv_wr_opcode opcode, int slot, uint32_t len, uint32_t imm, int signaled) {
  struct ibv_sge sge = {(uintptr_t)(s->buf + slot * kSlotBytes), len, s->mr->lkey};
  struct ibv_send_wr wr = {.wr_id = 1000, .sg_list = &sge, .num_sge = 1, .opcode = opcode,
                           .send_flags = signaled ? IBV_SEND_SIGNALED : 0, .imm_data = htonl(imm)},
                     *bad;
  if (opcode != IBV_WR_SEND_WITH_IMM) {
    wr.wr.rdma.remote_addr = s->peer.target;
    wr.wr.rdma.rkey = s->peer.rkey; /* cached once at start, as programs do */
  }
  CHECK(ibv_post_send(s->qp, &wr, &bad) == 0);
}

static void post_send(struct Side *s, int slot, uint32_t len, uint32_t imm) {
  post_op(s, IBV_WR_SEND_WITH_IMM, slot, len, imm, 1);
}

/* Waits for one completion; checks it belongs to our QP (and, for a receive, to our peer). */
static struct ibv_wc wait_completion(struct Side *s) {
  struct ibv_wc wc;
  int n;
  while ((n = ibv_poll_cq(s->cq, 1, &wc)) == 0) {
    if (!s->channel) continue;
    CHECK(ibv_req_notify_cq(s->cq, 0) == 0);
    if ((n = ibv_poll_cq(s->cq, 1, &wc)) != 0) break; /* arrived before the request */
    struct ibv_cq *cq;
    void *cq_context;
    if (s->epoll_fd >= 0) {
      struct epoll_event ready;
      int n_ready;
      while ((n_ready = epoll_wait(s->epoll_fd, &ready, 1, -1)) < 0 && errno == EINTR) {
      }
      CHECK(n_ready == 1 && ready.data.u64 == 0xC0FFEE);
    }
    CHECK(ibv_get_cq_event(s->channel, &cq, &cq_context) == 0 && cq == s->cq);
    ibv_ack_cq_events(cq, 1);
  }
  CHECK(n == 1);
  if (wc.status != IBV_WC_SUCCESS) printf("completion failed: %s\n", ibv_wc_status_str(wc.status));
  CHECK(wc.status == IBV_WC_SUCCESS);
  CHECK(wc.qp_num == s->qp->qp_num);
  if (wc.opcode & IBV_WC_RECV) CHECK(wc.slid == s->peer.lid);
  return wc;
}

static void set_up(struct Side *s, int to_peer, int from_peer) {
  struct ibv_device **list = ibv_get_device_list(NULL);
  CHECK(list && list[0]);
  s->ctx = ibv_open_device(list[0]);
  CHECK(s->ctx);
  ibv_free_device_list(list);
  s->pd = ibv_alloc_pd(s->ctx);
  s->buf = calloc(kAllSlots, kSlotBytes);
  s->mr = ibv_reg_mr(s->pd, s->buf, kAllSlots * kSlotBytes,
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  if (s->channel) CHECK((s->channel = ibv_create_comp_channel(s->ctx)) != NULL);
  if (s->epoll_fd >= 0) {
    struct epoll_event watch = {.events = EPOLLIN, .data.u64 = 0xC0FFEE};
    CHECK((s->epoll_fd = epoll_create1(EPOLL_CLOEXEC)) >= 0);
    CHECK(epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->channel->fd, &watch) == 0);
  }
  s->cq = ibv_create_cq(s->ctx, 64, NULL, s->channel, 0);
  CHECK(s->pd && s->buf && s->mr && s->cq);
  if (s->srq) {
    struct ibv_srq_init_attr srq_init = {.attr = {.max_wr = 16, .max_sge = 1}};
    CHECK((s->srq = ibv_create_srq(s->pd, &srq_init)) != NULL);
  }
  struct ibv_qp_init_attr init = {.send_cq = s->cq, .recv_cq = s->cq, .srq = s->srq, .qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1}};
  s->qp = ibv_create_qp(s->pd, &init);
  CHECK(s->qp);
  struct ibv_port_attr port;
  CHECK(ibv_query_port(s->ctx, 1, &port) == 0);
  s->self.lid = port.lid;
  s->self.qpn = s->qp->qp_num;
  s->self.target = (uintptr_t)(s->buf + kTargetSlot * kSlotBytes);
  s->self.rkey = s->mr->rkey;
  transfer_all(to_peer, &s->self, sizeof s->self, 1);
  transfer_all(from_peer, &s->peer, sizeof s->peer, 0);

  struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
                          .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
  CHECK(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
  for (int slot = 0; slot < kSlots; slot++) post_receive(s, slot);
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = s->peer.qpn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = s->peer.lid;
  a.ah_attr.port_num = 1;
  CHECK(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0);
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  CHECK(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) == 0);
  /* Both ready to receive before either sends (a QP not yet in RTR does not take messages). */
  char ready = 'r';
  transfer_all(to_peer, &ready, 1, 1);
  transfer_all(from_peer, &ready, 1, 0);
}

static void tear_down(struct Side *s) {
  CHECK(ibv_destroy_qp(s->qp) == 0);
  if (s->srq) CHECK(ibv_destroy_srq(s->srq) == 0);
  CHECK(ibv_destroy_cq(s->cq) == 0);
  CHECK(ibv_dereg_mr(s->mr) == 0);
  CHECK(ibv_dealloc_pd(s->pd) == 0);
  if (s->channel) CHECK(ibv_destroy_comp_channel(s->channel) == 0);
  CHECK(ibv_close_device(s->ctx) == 0);
}

static void fill_message(char *p, long round) {
  uint64_t seed = (uint64_t)round * 7919 + 1;
  for (int i = 0; i < kMessageBytes; i += 8) {
    uint64_t v = splitmix64(&seed);
    memcpy(p + i, &v, 8);
  }
}

/* A reply's send completion may come after the client's next message: both are awaited in any
 * order, replies alternating between two send slots so none is reused before it completed. */
static void serve(struct Side *s, long rounds) {
  long round = 0;
  int sends_pending = 0;
  while (round < rounds || sends_pending > 0) {
    struct ibv_wc wc = wait_completion(s);
    if (wc.opcode == IBV_WC_SEND) {
      sends_pending--;
      continue;
    }
    CHECK(wc.opcode == (s->rdma ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV) && (wc.wc_flags & IBV_WC_WITH_IMM));
    CHECK(ntohl(wc.imm_data) == (uint32_t)round && wc.byte_len == (uint32_t)kMessageBytes);
    char expected[kMessageBytes];
    fill_message(expected, round);
    char *got = s->buf + (s->rdma ? kTargetSlot : (int)wc.wr_id) * kSlotBytes;
    CHECK(memcmp(got, expected, kMessageBytes) == 0);
    uint64_t sum = fnv1a(FNV_INIT, got, kMessageBytes);
    int send_slot = kSlots + (int)(round % 2);
    memcpy(s->buf + send_slot * kSlotBytes, &sum, sizeof sum);
    post_receive(s, (int)wc.wr_id);
    post_op(s, IBV_WR_SEND_WITH_IMM, send_slot, sizeof sum, (uint32_t)round, !s->unsignaled_replies);
    if (!s->unsignaled_replies) sends_pending++;
    round++;
  }
  /* The client's goodbye: it may still read this process's buffer until then. */
  struct ibv_wc wc = wait_completion(s);
  CHECK(wc.opcode == IBV_WC_RECV && ntohl(wc.imm_data) == (uint32_t)rounds);
}

static void drive(struct Side *s, long rounds, long delay_ms) {
  uint64_t total = FNV_INIT;
  for (long round = 0; round < rounds; round++) {
    fill_message(s->buf + kSlots * kSlotBytes, round);
    post_op(s, s->rdma ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND_WITH_IMM, kSlots, kMessageBytes, (uint32_t)round, 1);
    int sent = 0, answered = 0;
    uint64_t sum = 0;
    while (!sent || !answered) {
      struct ibv_wc wc = wait_completion(s);
      if (!(wc.opcode & IBV_WC_RECV)) { /* the send or RDMA write */
        sent = 1;
        continue;
      }
      CHECK(wc.opcode == IBV_WC_RECV && ntohl(wc.imm_data) == (uint32_t)round && wc.byte_len == (uint32_t)sizeof sum);
      memcpy(&sum, s->buf + wc.wr_id * kSlotBytes, sizeof sum);
      post_receive(s, (int)wc.wr_id);
      answered = 1;
    }
    if (s->rdma) { /* what landed in the server's buffer, read back */
      memset(s->buf + kReadbackSlot * kSlotBytes, 0, kMessageBytes);
      post_op(s, IBV_WR_RDMA_READ, kReadbackSlot, kMessageBytes, 0, 1);
      CHECK(wait_completion(s).opcode == IBV_WC_RDMA_READ);
      CHECK(memcmp(s->buf + kReadbackSlot * kSlotBytes, s->buf + kSlots * kSlotBytes, kMessageBytes) == 0);
    }
    total = fnv1a(total, &sum, sizeof sum);
    printf("step %ld message checksum %016llx running %016llx\n", round, (unsigned long long)sum,
           (unsigned long long)total);
    sleep_ms(delay_ms);
  }
  post_send(s, kSlots, 8, (uint32_t)rounds); /* goodbye */
  CHECK(wait_completion(s).opcode == IBV_WC_SEND);
  printf("done: %ld rounds, checksum %016llx\n", rounds, (unsigned long long)total);
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long rounds = arg_long(argc, argv, 1, 40), delay_ms = arg_long(argc, argv, 2, 100);
  int to_child[2], to_parent[2];
  CHECK(pipe(to_child) == 0 && pipe(to_parent) == 0);
  pid_t child = fork(); /* before any verbs object exists: each process opens its own */
  CHECK(child >= 0);
  struct Side side = {.epoll_fd = -1};
  /* Channel and SRQ: marks of the wish; set_up replaces them with the real ones. */
  for (int i = 3; i < argc; i++) {
    if (strcmp(argv[i], "events") == 0) side.channel = (struct ibv_comp_channel *)&side;
    else if (strcmp(argv[i], "epoll") == 0) side.channel = (struct ibv_comp_channel *)&side, side.epoll_fd = 0;
    else if (strcmp(argv[i], "srq") == 0) side.srq = (struct ibv_srq *)&side;
    else if (strcmp(argv[i], "rdma") == 0) side.rdma = 1;
    else if (strcmp(argv[i], "unsignaled") == 0) side.unsignaled_replies = 1;
    else CHECK(!"unknown mode");
  }
  if (child == 0) {
    set_up(&side, to_parent[1], to_child[0]);
    serve(&side, rounds);
    tear_down(&side);
    return 0;
  }
  set_up(&side, to_child[1], to_parent[0]);
  drive(&side, rounds, delay_ms);
  tear_down(&side);
  int status;
  CHECK(waitpid(child, &status, 0) == child);
  printf("server %s %d\n", WIFEXITED(status) ? "exited" : "killed by signal",
         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  return 0;
}
