// End-to-end check of softib through the plain verbs API: two device contexts in one process
// (so every frame crosses a real socket between contexts) connect an RC pair and exercise RDMA
// write/read with rkey checks, send with immediate, completion channels under epoll, QP state
// checks, and fresh keys and QP numbers on re-creation; and the sysfs root the device lies under.
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                          \
  do {                                                            \
    if (!(cond)) {                                                \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                               \
      fprintf(stderr, "\n");                                      \
      ++failures;                                                 \
    }                                                             \
  } while (0)

enum { kBuf = 1 << 20 };

// rdma-core's (driver.h, not installed): the sysfs root, which verbs users such as Open MPI's
// openib BTL read (SYSFS/class/infiniband must be a directory).
const char* ibv_get_sysfs_path(void);

static int is_directory(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

struct side {
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_comp_channel* channel;
  struct ibv_cq* cq;
  struct ibv_qp* qp;
  struct ibv_mr* mr;
  char* buf;
  uint16_t lid;
};

static void open_side(struct ibv_device* dev, struct side* s, int access) {
  s->ctx = ibv_open_device(dev);
  if (!s->ctx) { perror("ibv_open_device"); exit(1); }
  struct ibv_port_attr port;
  CHECK(ibv_query_port(s->ctx, 1, &port) == 0, "query_port");
  CHECK(port.state == IBV_PORT_ACTIVE && port.lid != 0, "port state %d lid %d", port.state, port.lid);
  s->lid = port.lid;
  s->pd = ibv_alloc_pd(s->ctx);
  s->channel = ibv_create_comp_channel(s->ctx);
  s->cq = ibv_create_cq(s->ctx, 64, s, s->channel, 0);
  s->buf = calloc(1, kBuf);
  s->mr = ibv_reg_mr(s->pd, s->buf, kBuf, access);
  CHECK(s->pd && s->channel && s->cq && s->mr, "objects");
  struct ibv_qp_init_attr init = {.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 2}};
  s->qp = ibv_create_qp(s->pd, &init);
  CHECK(s->qp != NULL, "create_qp");
}

static int to_rts(struct side* s, const struct side* peer, int qp_access) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
                          .qp_access_flags = qp_access};
  if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) return 1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_4096;
  a.dest_qp_num = peer->qp->qp_num;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = peer->lid;
  a.ah_attr.port_num = 1;
  if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) return 2;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) return 3;
  return 0;
}

// Polls until one completion arrives (or 5 s pass).
static int wait_wc(struct side* s, struct ibv_wc* wc) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    int n = ibv_poll_cq(s->cq, 1, wc);
    if (n) return n;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec > 5) return 0;
  }
}

static int post(struct side* s, enum ibv_wr_opcode op, uint64_t wr_id, size_t off, uint32_t len,
                uint64_t raddr, uint32_t rkey, uint32_t imm) {
  struct ibv_sge sge = {.addr = (uintptr_t)s->buf + off, .length = len, .lkey = s->mr->lkey};
  struct ibv_send_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
                           .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(imm)};
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  struct ibv_send_wr* bad;
  return ibv_post_send(s->qp, &wr, &bad);
}

static int post_recv(struct side* s, uint64_t wr_id, size_t off, uint32_t len) {
  struct ibv_sge sge = {.addr = (uintptr_t)s->buf + off, .length = len, .lkey = s->mr->lkey};
  struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};
  struct ibv_recv_wr* bad;
  return ibv_post_recv(s->qp, &wr, &bad);
}

static void close_side(struct side* s) {
  ibv_destroy_qp(s->qp);
  ibv_dereg_mr(s->mr);
  ibv_destroy_cq(s->cq);
  ibv_destroy_comp_channel(s->channel);
  ibv_dealloc_pd(s->pd);
  ibv_close_device(s->ctx);
  free(s->buf);
}

int main(void) {
  struct ibv_device** list = ibv_get_device_list(NULL);
  if (!list || !list[0]) { fprintf(stderr, "no device\n"); return 1; }
  const char* sysfs = ibv_get_sysfs_path();
  char class_dir[4096];
  snprintf(class_dir, sizeof class_dir, "%s/class/infiniband", sysfs);
  CHECK(is_directory(class_dir), "%s must be a directory", class_dir);
  CHECK(strncmp(list[0]->ibdev_path, class_dir, strlen(class_dir)) == 0 && is_directory(list[0]->ibdev_path),
        "the device's path %s must be a directory under %s", list[0]->ibdev_path, class_dir);
  const int remote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  struct side a, b;
  open_side(list[0], &a, remote);
  open_side(list[0], &b, remote);
  CHECK(a.mr->lkey != b.mr->lkey && a.mr->rkey != b.mr->rkey && a.mr->lkey != a.mr->rkey, "keys must differ");

  // The state machine rejects an RTR transition with attributes missing, like hardware.
  struct ibv_qp_attr attr = {.qp_state = IBV_QPS_RTR};
  CHECK(ibv_modify_qp(a.qp, &attr, IBV_QP_STATE) != 0, "RESET->RTR must fail");
  CHECK(to_rts(&a, &b, remote) == 0 && to_rts(&b, &a, remote) == 0, "connect");
  struct ibv_qp_init_attr qinit;
  CHECK(ibv_query_qp(a.qp, &attr, IBV_QP_STATE, &qinit) == 0 && attr.qp_state == IBV_QPS_RTS, "RTS");

  // RDMA write a -> b, verified in b's memory.
  for (int i = 0; i < 4096; ++i) a.buf[i] = (char)(i * 7);
  struct ibv_wc wc;
  CHECK(post(&a, IBV_WR_RDMA_WRITE, 10, 0, 4096, (uintptr_t)b.buf + 8192, b.mr->rkey, 0) == 0, "post write");
  CHECK(wait_wc(&a, &wc) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE && wc.wr_id == 10,
        "write wc status %d", wc.status);
  CHECK(memcmp(a.buf, b.buf + 8192, 4096) == 0, "written data");

  // RDMA read b -> a.
  memset(b.buf + 65536, 0x5a, 100000);
  CHECK(post(&a, IBV_WR_RDMA_READ, 11, 200000, 100000, (uintptr_t)b.buf + 65536, b.mr->rkey, 0) == 0, "read");
  CHECK(wait_wc(&a, &wc) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == 100000,
        "read wc status %d", wc.status);
  CHECK(memcmp(a.buf + 200000, b.buf + 65536, 100000) == 0, "read data");

  // Send with immediate, received through the completion channel, which epoll sees.
  CHECK(post_recv(&b, 20, 500000, 4096) == 0, "post recv");
  CHECK(ibv_req_notify_cq(b.cq, 0) == 0, "arm");
  strcpy(a.buf + 300000, "hello softib");
  CHECK(post(&a, IBV_WR_SEND_WITH_IMM, 12, 300000, 13, 0, 0, 0xC0FFEE) == 0, "send imm");
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN};
  epoll_ctl(ep, EPOLL_CTL_ADD, b.channel->fd, &ev);
  CHECK(epoll_wait(ep, &ev, 1, 5000) == 1, "completion channel not readable");
  struct ibv_cq* ev_cq;
  void* ev_ctx;
  CHECK(ibv_get_cq_event(b.channel, &ev_cq, &ev_ctx) == 0 && ev_cq == b.cq && ev_ctx == &b, "cq event");
  ibv_ack_cq_events(ev_cq, 1);
  CHECK(ibv_poll_cq(b.cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
            (wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0xC0FFEE && wc.byte_len == 13 &&
            wc.src_qp == a.qp->qp_num,
        "recv imm wc status %d flags %d imm %x", wc.status, wc.wc_flags, ntohl(wc.imm_data));
  CHECK(strcmp(b.buf + 500000, "hello softib") == 0, "sent data");
  CHECK(wait_wc(&a, &wc) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND, "send wc");
  close(ep);

  // RDMA write with immediate consumes a receive on the target.
  CHECK(post_recv(&b, 21, 500000, 16) == 0, "post recv 2");
  CHECK(post(&a, IBV_WR_RDMA_WRITE_WITH_IMM, 13, 0, 64, (uintptr_t)b.buf, b.mr->rkey, 7) == 0, "write imm");
  CHECK(wait_wc(&b, &wc) && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && ntohl(wc.imm_data) == 7, "write-imm recv");
  CHECK(wait_wc(&a, &wc) && wc.status == IBV_WC_SUCCESS, "write-imm wc");

  // A wrong rkey and a range outside the MR give the requester a remote access error, and the
  // QP then flushes what follows.
  CHECK(post(&a, IBV_WR_RDMA_WRITE, 14, 0, 64, (uintptr_t)b.buf, b.mr->rkey ^ 0x100, 0) == 0, "bad rkey");
  CHECK(post(&a, IBV_WR_RDMA_WRITE, 15, 0, 64, (uintptr_t)b.buf, b.mr->rkey, 0) == 0, "after bad");
  CHECK(wait_wc(&a, &wc) && wc.wr_id == 14 && wc.status == IBV_WC_REM_ACCESS_ERR, "bad rkey wc status %s",
        ibv_wc_status_str(wc.status));
  CHECK(wait_wc(&a, &wc) && wc.wr_id == 15 && wc.status == IBV_WC_WR_FLUSH_ERR, "flush wc status %s",
        ibv_wc_status_str(wc.status));
  CHECK(ibv_query_qp(a.qp, &attr, IBV_QP_STATE, &qinit) == 0 && attr.qp_state == IBV_QPS_ERR, "QP in ERR");

  // Re-created objects get new numbers and keys.
  uint32_t old_qpn = a.qp->qp_num, old_rkey = a.mr->rkey, old_lkey = a.mr->lkey;
  close_side(&a);
  open_side(list[0], &a, remote);
  CHECK(a.qp->qp_num != old_qpn && a.mr->rkey != old_rkey && a.mr->lkey != old_lkey, "fresh numbers");

  // Reading past the end of the remote MR is refused too.
  CHECK(to_rts(&a, &b, remote) == 0, "reconnect a");
  CHECK(ibv_modify_qp(b.qp, &(struct ibv_qp_attr){.qp_state = IBV_QPS_RESET}, IBV_QP_STATE) == 0, "b reset");
  CHECK(to_rts(&b, &a, remote) == 0, "reconnect b");
  CHECK(post(&a, IBV_WR_RDMA_READ, 16, 0, 4096, (uintptr_t)b.buf + kBuf - 100, b.mr->rkey, 0) == 0, "oob read");
  CHECK(wait_wc(&a, &wc) && wc.wr_id == 16 && wc.status == IBV_WC_REM_ACCESS_ERR, "oob read status %s",
        ibv_wc_status_str(wc.status));

  close_side(&a);
  close_side(&b);
  ibv_free_device_list(list);
  if (failures) { fprintf(stderr, "%d failures\n", failures); return 1; }
  printf("PASS: RDMA write/read, rkey checks, send/write with immediate, completion channel\n");
  return 0;
}
