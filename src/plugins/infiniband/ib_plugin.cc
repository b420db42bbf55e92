// The InfiniBand plugin, checkpoint side (docs/infiniband.md):
//   PRE_SUSPEND   refuse what cannot be re-created; close the gate (no user thread inside verbs)
//   DRAIN         poll every CQ into its buffer until each QP's signaled sends have completed
//   ib-quiesce    (every process has drained its sends, so every message reached its receiver)
//                 poll once more, then destroy every real object and close the devices: the
//                 library's threads end and its descriptors close before the image is written
//   RESUME        re-create the objects, exchange the new QP numbers and LIDs with the peers,
//   RESTART       replay the QP transitions, re-post the outstanding receives; open the gate
// The exchange goes through the coordinator's name service (every host of the computation).
#include <dlfcn.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/fixed_text.h"
#include "plugins/infiniband/ib_plugin.h"
#include "stasis/plugin.h"

namespace stasis::ib {
namespace {

constexpr long kDrainTimeoutNs = 20'000'000'000L;
constexpr int kExchangeTimeoutMs = 30'000;

// ---- the gate ------------------------------------------------------------------------------
std::atomic<uint32_t> g_gate_closed{0};
std::atomic<int32_t> g_inside{0};
__thread int t_gate_depth __attribute__((tls_model("initial-exec")));

long now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1'000'000'000L + ts.tv_nsec;
}

void sleep_us(long us) {
  timespec ts = {0, us * 1000};
  nanosleep(&ts, nullptr);
}

void close_gate() {
  g_gate_closed.store(1);
  while (g_inside.load() != 0) sleep_us(200);
}

void open_gate() {
  g_gate_closed.store(0);
  syscall(SYS_futex, &g_gate_closed, FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

// ---- the library's threads -----------------------------------------------------------------
__thread int t_owning_library_threads __attribute__((tls_model("initial-exec")));
std::atomic<int32_t> g_library_threads{0};

struct ThreadStart {
  void* (*routine)(void*);
  void* arg;
  std::atomic<uint32_t> exempted;
};

void unexempt(void*) {
  if (stasis_plugin_exempt_thread) stasis_plugin_exempt_thread(static_cast<int>(gettid()), 0);
  g_library_threads.fetch_sub(1);
}

void* exempt_thread_start(void* p) {
  auto* start = static_cast<ThreadStart*>(p);
  void* (*routine)(void*) = start->routine;
  void* arg = start->arg;
  if (stasis_plugin_exempt_thread) stasis_plugin_exempt_thread(static_cast<int>(gettid()), 1);
  g_library_threads.fetch_add(1);
  start->exempted.store(1);  // the creator frees `start` from here on
  syscall(SYS_futex, &start->exempted, FUTEX_WAKE, 1, nullptr, nullptr, 0);
  void* result;
  pthread_cleanup_push(unexempt, nullptr);
  result = routine(arg);
  pthread_cleanup_pop(1);
  return result;
}

using PthreadCreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
PthreadCreateFn g_pthread_create;

// ---- the exchange of new identifiers -------------------------------------------------------
// Name-service keys of this re-creation: ib/GENERATION/resume/ after a checkpoint of the live
// computation, ib/GENERATION/restart/ after a restart. The entries belong to the process that
// published them (the coordinator drops them when it leaves): a restart never finds those of a
// killed computation. Each process withdraws its own at its next re-creation.
char g_exchange_prefix[64];  // "" before the first re-creation

// Looked up by user threads (UD sends and receives) concurrently: appended under a spin lock,
// the count published after the entry.
RemoteQp g_remote[kMaxObjects * 4];
std::atomic<int> g_remote_count{0};
std::atomic_flag g_remote_lock = ATOMIC_FLAG_INIT;
struct RemoteMr {
  uint16_t virtual_lid;
  uint32_t virtual_rkey, real_rkey;
};
// Looked up by user threads posting RDMA concurrently: appended under a spin lock, the count
// published after the entry.
RemoteMr g_remote_mrs[kMaxObjects * 4];
std::atomic<int> g_remote_mr_count{0};
std::atomic_flag g_remote_mr_lock = ATOMIC_FLAG_INIT;

// ib/G/STEP/ (STEP: resume, restart, drain).
void step_prefix(char* out, size_t cap, uint64_t generation, const char* step) {
  out[0] = 0;
  FixedText(out, cap) << "ib/" << generation << "/" << step << "/";
}

// PREFIX KIND-LID-NUMBER: the virtual LID (of the owner's port) and number, or real ones for rqp-.
void exchange_key(char* out, size_t cap, const char* kind, uint16_t lid, uint32_t number) {
  out[0] = 0;
  FixedText(out, cap) << g_exchange_prefix << kind << lid << "-" << number;
}

bool publish(const char* kind, uint16_t lid, uint32_t number, const void* record, size_t size) {
  char key[128];
  exchange_key(key, sizeof key, kind, lid, number);
  return stasis_plugin_ns_publish && stasis_plugin_ns_publish(key, record, static_cast<uint32_t>(size)) == 0;
}

// The record published as KIND-LID-NUMBER; waits up to `wait_ms` for it to be published.
bool lookup(const char* kind, uint16_t lid, uint32_t number, void* record, size_t size, int wait_ms) {
  char key[128];
  exchange_key(key, sizeof key, kind, lid, number);
  return stasis_plugin_ns_lookup &&
         stasis_plugin_ns_lookup(key, record, static_cast<uint32_t>(size), wait_ms) == static_cast<long>(size);
}

// The port a QP was bound to (ibv_modify_qp to INIT names it).
uint8_t port_of(const VQp* qp) {
  uint8_t port = 1;
  for (int i = 0; i < qp->modify_count; i++)
    if (qp->modifies[i].mask & IBV_QP_PORT) port = qp->modifies[i].attr.port_num;
  return port >= 1 && port <= kMaxPorts ? port : 1;
}

// Under its virtual (LID, QPN) for its peers' connections and UD sends, under its real ones for
// the receivers of its datagrams.
RemoteQp published_record(const VQp* qp) {
  uint8_t port = port_of(qp);
  return {qp->ctx->virtual_lid[port], qp->ctx->real_lid[port], qp->ibv.qp_num, qp->real->qp_num};
}

bool publish_qp(const VQp* qp) {
  RemoteQp record = published_record(qp);
  return publish("qp-", record.virtual_lid, record.virtual_qpn, &record, sizeof record) &&
         publish("rqp-", record.real_lid, record.real_qpn, &record, sizeof record);
}

// Once its transitions are replayed and its receives posted again: peers may send to it. (Before,
// a message would find it in RESET, which an adapter answers with no acknowledgement and softib
// with a retry error, or a datagram no receive: lost.)
bool publish_ready(const VQp* qp) {
  RemoteQp record = published_record(qp);
  return publish("ready-", record.virtual_lid, record.virtual_qpn, &record, sizeof record);
}

// The virtual (LID, QPN) a connected QP's RTR named, or false for a QP not connected.
bool connected_peer(const VQp* qp, uint16_t& vlid, uint32_t& vqpn) {
  bool connected = false;
  for (int i = 0; i < qp->modify_count; i++)
    if ((qp->modifies[i].mask & IBV_QP_DEST_QPN) && (qp->modifies[i].mask & IBV_QP_AV)) {
      vlid = qp->modifies[i].attr.ah_attr.dlid;
      vqpn = qp->modifies[i].attr.dest_qp_num;
      connected = true;
    }
  return connected;
}

// Under every port's virtual LID: a peer names the region's owner by the LID it connected to.
bool publish_mr(const VMr* mr) {
  for (int port = 1; port <= kMaxPorts; port++) {
    uint16_t vlid = mr->pd->ctx->virtual_lid[port];
    if (vlid && !publish("mr-", vlid, mr->ibv.rkey, &mr->real->rkey, sizeof mr->real->rkey)) return false;
  }
  return true;
}

const RemoteQp* known_remote(uint16_t vlid, uint32_t vqpn) {
  for (int i = 0, n = g_remote_count.load(std::memory_order_acquire); i < n; i++)
    if (g_remote[i].virtual_lid == vlid && g_remote[i].virtual_qpn == vqpn) return &g_remote[i];
  return nullptr;
}

const RemoteQp* known_remote_by_real(uint16_t real_lid, uint32_t real_qpn) {
  for (int i = 0, n = g_remote_count.load(std::memory_order_acquire); i < n; i++)
    if (g_remote[i].real_lid == real_lid && g_remote[i].real_qpn == real_qpn) return &g_remote[i];
  return nullptr;
}

const RemoteQp* remember_remote(const RemoteQp& record) {
  while (g_remote_lock.test_and_set(std::memory_order_acquire)) {
  }
  const RemoteQp* entry = nullptr;
  int n = g_remote_count.load();
  if (n < static_cast<int>(sizeof g_remote / sizeof g_remote[0])) {
    g_remote[n] = record;
    entry = &g_remote[n];
    g_remote_count.store(n + 1, std::memory_order_release);
  }
  g_remote_lock.clear(std::memory_order_release);
  return entry;
}

// The peer's current (LID, QPN) for the virtual pair the program gave, as published when its QP
// was made again ("/qp-") or once it was ready to take messages ("/ready-": its transitions
// replayed, its receives posted again); waits for it while objects are being re-created (`wait`).
const RemoteQp* remote_qp(uint16_t vlid, uint32_t vqpn, bool wait, const char* kind = "qp-") {
  if (const RemoteQp* known = known_remote(vlid, vqpn)) return known;
  RemoteQp record;
  return lookup(kind, vlid, vqpn, &record, sizeof record, wait ? kExchangeTimeoutMs : 0) ? remember_remote(record)
                                                                                          : nullptr;
}

// ---- the UD drain ----------------------------------------------------------------------------
// A UD send completes when the adapter has put the datagram on the wire, not when it arrived: a
// datagram may still be in flight (on softib: in a socket) when every send has completed. So each
// process counts the datagrams it posted to each peer QP and received from each; at the
// checkpoint it publishes what it sent, and after the barrier each receiver polls until it has
// received what was sent to it. A datagram the receiver dropped (no receive posted, wrong qkey)
// never comes: after kUdSettleNs the checkpoint goes on without it, as the fabric lost it.
constexpr long kUdSettleNs = 3'000'000'000L;

struct UdCount {
  uint16_t from_lid;
  uint32_t from_qpn;
  uint16_t to_lid;
  uint32_t to_qpn;
  uint64_t datagrams;
};
UdCount g_ud_sent[kMaxObjects * 4];
UdCount g_ud_received[kMaxObjects * 4];
std::atomic<int> g_ud_sent_count{0}, g_ud_received_count{0};
std::atomic_flag g_ud_lock = ATOMIC_FLAG_INIT;
// What the computation sent to this process's UD QPs, as published at this checkpoint's drain.
UdCount g_ud_expected[kMaxObjects * 4];
int g_ud_expected_count;

void count_datagrams(UdCount (&table)[kMaxObjects * 4], std::atomic<int>& used, const UdCount& key) {
  while (g_ud_lock.test_and_set(std::memory_order_acquire)) {
  }
  int count = used.load();
  int i = 0;
  while (i < count && !(table[i].from_lid == key.from_lid && table[i].from_qpn == key.from_qpn &&
                        table[i].to_lid == key.to_lid && table[i].to_qpn == key.to_qpn))
    i++;
  if (i == count && count < kMaxObjects * 4) {
    table[i] = key;
    table[i].datagrams = 0;
    used.store(++count);
  }
  if (i < count) table[i].datagrams++;
  g_ud_lock.clear(std::memory_order_release);
}

// ib/G/drain/ud-TOLID-TOQPN/ (virtual identifiers): what every sender posted to TO, each under
// FROMLID-FROMQPN.
void ud_counts_prefix(char* out, size_t cap, uint64_t generation, uint16_t to_lid, uint32_t to_qpn) {
  step_prefix(out, cap, generation, "drain");
  FixedText(out, cap) << "ud-" << to_lid << "-" << to_qpn << "/";
}

// Published before this process answers "drain" on its coordinator connection, so every count
// is in the name service once the ib-quiesce barrier begins anywhere.
bool publish_ud_counts(uint64_t generation) {
  for (int i = 0; i < g_ud_sent_count.load(); i++) {
    const UdCount& sent = g_ud_sent[i];
    char key[128];
    ud_counts_prefix(key, sizeof key, generation, sent.to_lid, sent.to_qpn);
    FixedText(key, sizeof key) << sent.from_lid << "-" << sent.from_qpn;
    if (!stasis_plugin_ns_publish || stasis_plugin_ns_publish(key, &sent, sizeof sent) != 0) return false;
  }
  return true;
}

// At ib-quiesce: the counts the computation's senders published for this process's UD QPs.
bool fetch_expected_ud_counts(uint64_t generation) {
  static char list[64 * 1024];
  g_ud_expected_count = 0;
  for (VQp* qp : g_qps) {
    if (!qp || qp->init.qp_type != IBV_QPT_UD) continue;
    char prefix[128];
    ud_counts_prefix(prefix, sizeof prefix, generation, qp->ctx->virtual_lid[port_of(qp)], qp->ibv.qp_num);
    long size = stasis_plugin_ns_list ? stasis_plugin_ns_list(prefix, list, sizeof list) : -1;
    if (size < 0 || size > static_cast<long>(sizeof list)) return false;
    for (long at = 0; at < size;) {  // key '\0', length, value
      at += static_cast<long>(strnlen(list + at, size - at)) + 1;
      uint32_t length;
      if (at + static_cast<long>(sizeof length) > size) return false;
      memcpy(&length, list + at, sizeof length);
      at += sizeof length;
      if (length == sizeof(UdCount) && at + length <= size && g_ud_expected_count < kMaxObjects * 4)
        memcpy(&g_ud_expected[g_ud_expected_count++], list + at, sizeof(UdCount));
      at += length;
    }
  }
  return true;
}

uint64_t ud_received_from(const UdCount& sent) {
  for (int i = 0; i < g_ud_received_count.load(); i++) {
    const UdCount& r = g_ud_received[i];
    if (r.from_lid == sent.from_lid && r.from_qpn == sent.from_qpn && r.to_lid == sent.to_lid && r.to_qpn == sent.to_qpn)
      return r.datagrams;
  }
  return 0;
}

// Whether every datagram the computation sent to this process's UD QPs was received.
bool ud_datagrams_arrived(bool& any_missing) {
  any_missing = false;
  for (int i = 0; i < g_ud_expected_count; i++)
    if (ud_received_from(g_ud_expected[i]) < g_ud_expected[i].datagrams) any_missing = true;
  return !any_missing;
}

// ---- refusals ------------------------------------------------------------------------------
char g_refusal[400];

void refuse(const char* what, const char* why, unsigned long number = 0, bool with_number = false) {
  g_refusal[0] = 0;
  FixedText text(g_refusal, sizeof g_refusal);
  text << what;
  if (with_number) text << " " << number;
  text << " " << why;
  if (stasis_plugin_refuse) stasis_plugin_refuse(g_refusal);
  else if (stasis_plugin_log) stasis_plugin_log(g_refusal);
}

bool refuse_unsupported() {
  if (g_unsupported) {
    refuse("InfiniBand: the process uses", g_unsupported);
    FixedText(g_refusal, sizeof g_refusal) << ", which the plugin cannot re-create yet";
    if (stasis_plugin_refuse) stasis_plugin_refuse(g_refusal);
    return true;
  }
  for (VQp* qp : g_qps) {
    if (!qp) continue;
    if (qp->unsupported) {
      refuse("InfiniBand queue pair", qp->unsupported, qp->ibv.qp_num, true);
      return true;
    }
    if (qp->unsignaled_sends) {
      refuse("InfiniBand queue pair", "posts unsignaled sends: the drain cannot tell when they completed",
             qp->ibv.qp_num, true);
      return true;
    }
  }
  return false;
}

// ---- drain, teardown, re-creation ----------------------------------------------------------
bool have_objects() {
  for (VContext* ctx : g_contexts)
    if (ctx) return true;
  return false;
}

bool drain_cq(VCq* cq) {
  ibv_wc batch[16];
  for (;;) {
    int got = ::ibv_poll_cq(cq->real, 16, batch);
    if (got < 0) return false;
    for (int i = 0; i < got; i++) {
      if (cq->drained_count == cq->drained_cap) return false;
      translate_completion(cq, &batch[i]);
      cq->drained[(cq->drained_head + cq->drained_count) % cq->drained_cap] = batch[i];
      cq->drained_count++;
    }
    if (got < 16) return true;
  }
}

bool drain_all_cqs() {
  for (VCq* cq : g_cqs)
    if (cq && cq->real && !drain_cq(cq)) {
      refuse("InfiniBand completion queue", "overflowed its drain buffer (or failed) at the checkpoint");
      return false;
    }
  return true;
}

bool drain_sends() {
  long deadline = now_ns() + kDrainTimeoutNs;
  for (;;) {
    if (!drain_all_cqs()) return false;
    VQp* waiting = nullptr;
    for (VQp* qp : g_qps)
      if (qp && qp->real && qp->sends_in_flight.load() > 0) waiting = qp;
    if (!waiting) return true;
    if (now_ns() > deadline) {
      refuse("InfiniBand queue pair", "still has sends in flight after 20 s (is its peer a process of the computation?)",
             waiting->ibv.qp_num, true);
      return false;
    }
    sleep_us(100);
  }
}

bool g_torn_down = false;

// Polls the CQs until the datagrams sent to this process have arrived (or kUdSettleNs passed).
bool await_ud_datagrams() {
  long deadline = now_ns() + kUdSettleNs;
  bool missing = false;
  while (!ud_datagrams_arrived(missing) && now_ns() < deadline) {
    sleep_us(200);
    if (!drain_all_cqs()) return false;
  }
  if (missing && stasis_plugin_log)
    stasis_plugin_log("InfiniBand: UD datagrams sent to this process did not arrive (dropped by the receiver?); "
                      "the checkpoint goes on without them");
  return true;
}

void tear_down() {
  for (VQp* qp : g_qps)
    if (qp && qp->real) {
      g_real.destroy_qp(qp->real);
      qp->real = nullptr;
    }
  for (VSrq* srq : g_srqs)
    if (srq && srq->real) {
      g_real.destroy_srq(srq->real);
      srq->real = nullptr;
    }
  for (VAh* ah : g_ahs)  // made again for the destination's LID of the day at its next send
    if (ah && ah->real) {
      g_real.destroy_ah(ah->real);
      ah->real = nullptr;
    }
  for (VChannel* ch : g_channels)
    if (ch && ch->real) take_channel_events(ch);
  for (VCq* cq : g_cqs)
    if (cq && cq->real) {
      // The library waits for every event it reported to be acknowledged (rdma-core does).
      if (cq->real_events_unacked) g_real.ack_cq_events(cq->real, cq->real_events_unacked);
      cq->real_events_unacked = 0;
      g_real.destroy_cq(cq->real);
      cq->real = nullptr;
    }
  for (VChannel* ch : g_channels)
    if (ch && ch->real) tear_down_channel(ch);
  for (VMr* mr : g_mrs)
    if (mr && mr->real) {
      g_real.dereg_mr(mr->real);
      mr->real = nullptr;
    }
  for (VPd* pd : g_pds)
    if (pd && pd->real) {
      g_real.dealloc_pd(pd->real);
      pd->real = nullptr;
    }
  for (VContext* ctx : g_contexts)
    if (ctx && ctx->real) {
      g_real.close_device(ctx->real);
      ctx->real = nullptr;
    }
  g_torn_down = true;
}

void fail_recreate(const char* what) {
  if (stasis_plugin_log) {
    char line[300] = "InfiniBand: cannot re-create ";
    FixedText(line, sizeof line) << what << "; the program's verbs calls will fail";
    stasis_plugin_log(line);
  }
}

bool same_file(const char* a, const char* b) {
  struct stat sa {}, sb {};
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// `stasis restart --ib` (STASIS_IB_LIBRARY) may name another verbs library than the one the image
// holds (softib on a host without InfiniBand). The teardown left no object of the old library
// alive, and the program only holds virtual objects, so the real ones can be made over a library
// loaded now: its entry points replace g_real's; the old one stays mapped, unused. RTLD_LOCAL:
// the program's own calls still bind to the old library's symbols, which the plugin interposes.
// False (logged) when the library cannot be loaded: nothing can be re-created then.
bool use_restart_library() {
  const char* wanted = stasis_plugin_setting ? stasis_plugin_setting("STASIS_IB_LIBRARY") : nullptr;
  if (!wanted || !*wanted) return true;
  Dl_info current{};
  const char* old_library = dladdr(reinterpret_cast<void*>(g_real.open_device), &current) && current.dli_fname
                                ? current.dli_fname
                                : "an unknown library";
  if (same_file(old_library, wanted)) return true;
  char line[400] = "InfiniBand: ";
  void* library = dlopen(wanted, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = dlerror();
    FixedText(line, sizeof line) << "cannot re-create the verbs objects: cannot load the verbs library " << wanted
                                 << " (" << (why ? why : "unknown error") << "); the program's verbs calls will fail";
    if (stasis_plugin_log) stasis_plugin_log(line);
    return false;
  }
  FixedText(line, sizeof line) << "re-creating over " << wanted << " (the image used " << old_library << ")";
  g_real = RealVerbs{};
  resolve_real_verbs(library);
  if (stasis_plugin_log) stasis_plugin_log(line);
  return true;
}

ibv_device* find_device(const char* name) {
  int count = 0;
  ibv_device** list = g_real.get_device_list(&count);  // kept: the devices must outlive contexts
  for (int i = 0; list && i < count; i++)
    if (strcmp(g_real.get_device_name(list[i]), name) == 0) return list[i];
  return nullptr;
}

bool recreate(uint64_t generation, bool restart) {
  LibraryThreads owned;
  step_prefix(g_exchange_prefix, sizeof g_exchange_prefix, generation, restart ? "restart" : "resume");
  g_remote_count.store(0);
  g_remote_mr_count.store(0);
  for (VContext* ctx : g_contexts) {
    if (!ctx) continue;
    ibv_device* device = find_device(ctx->device_name);
    if (!device || !(ctx->real = g_real.open_device(device))) return fail_recreate(ctx->device_name), false;
    learn_lids(ctx);
  }
  for (VPd* pd : g_pds)
    if (pd && !(pd->real = g_real.alloc_pd(pd->ctx->real))) return fail_recreate("a protection domain"), false;
  for (VMr* mr : g_mrs) {
    if (!mr) continue;
    if (!(mr->real = g_real.reg_mr(mr->pd->real, mr->ibv.addr, mr->ibv.length, mr->access)))
      return fail_recreate("a memory region"), false;
    // Before the QPs: a peer that sees a QP published finds the regions published too.
    if (!publish_mr(mr)) return fail_recreate("a memory region: cannot publish its new key"), false;
  }
  for (VChannel* ch : g_channels)
    if (ch && !recreate_channel(ch)) return fail_recreate("a completion channel"), false;
  for (VCq* cq : g_cqs) {
    if (!cq) continue;
    ibv_comp_channel* channel = cq->channel ? cq->channel->real : nullptr;
    if (!(cq->real = g_real.create_cq(cq->ctx->real, cq->ibv.cqe, &cq->ibv, channel, cq->comp_vector)))
      return fail_recreate("a completion queue"), false;
    // A notification the program asked for and that has not fired yet fires on the next one.
    if (cq->armed && ::ibv_req_notify_cq(cq->real, cq->armed_solicited_only) != 0)
      return fail_recreate("a completion queue's notification request"), false;
  }
  for (VSrq* srq : g_srqs) {
    if (!srq) continue;
    ibv_srq_init_attr attr = srq->init;
    attr.srq_context = &srq->ibv;
    if (!(srq->real = g_real.create_srq(srq->pd->real, &attr))) return fail_recreate("a shared receive queue"), false;
    // Before any QP is connected: no message can come yet.
    bool reposted = true;
    for_each_posted(srq->recvs, [&](const PostedRecv& posted) {
      ibv_recv_wr* bad = nullptr;
      reposted = reposted && real_post_srq_recv(srq, posted, &bad) == 0;
    });
    if (!reposted) return fail_recreate("a receive posted on a shared receive queue"), false;
  }
  for (VQp* qp : g_qps) {
    if (!qp) continue;
    ibv_qp_init_attr attr = qp->init;
    attr.send_cq = qp->send_cq->real;
    attr.recv_cq = qp->recv_cq->real;
    attr.srq = qp->srq ? qp->srq->real : nullptr;
    if (!(qp->real = g_real.create_qp(qp->pd->real, &attr))) return fail_recreate("a queue pair"), false;
    if (!publish_qp(qp)) return fail_recreate("a queue pair: cannot publish its new number"), false;
  }
  g_translating.store(true);
  for (VQp* qp : g_qps) {
    if (!qp) continue;
    for (int i = 0; i < qp->modify_count; i++)
      if (modify_real_qp(qp, qp->modifies[i].attr, qp->modifies[i].mask) != 0)
        return fail_recreate("a queue pair's state (its peer did not publish its new number)"), false;
    bool reposted = true;
    for_each_posted(qp->recvs, [&](const PostedRecv& posted) {
      ibv_recv_wr* bad = nullptr;
      reposted = reposted && real_post_recv(qp, posted, &bad) == 0;
    });
    if (!reposted) return fail_recreate("a posted receive"), false;
    if (!publish_ready(qp)) return fail_recreate("a queue pair: cannot publish that it is ready"), false;
  }
  // The program sends as soon as its threads run: each connected peer must be ready by then.
  for (VQp* qp : g_qps) {
    uint16_t vlid;
    uint32_t vqpn;
    RemoteQp ready;
    if (qp && connected_peer(qp, vlid, vqpn) && !lookup("ready-", vlid, vqpn, &ready, sizeof ready, kExchangeTimeoutMs))
      return fail_recreate("a queue pair's connection (its peer did not get ready)"), false;
  }
  g_torn_down = false;
  return true;
}

// ---- the plugin ----------------------------------------------------------------------------
bool g_gate_closed_by_checkpoint = false;

int on_event(stasis_event_t event, const stasis_event_data_t* data, void*) {
  t_gate_depth++;  // the checkpoint thread's own calls pass the gate
  int rc = 0;
  switch (event) {
    case STASIS_EVENT_PRE_SUSPEND:
      if (have_objects()) {
        if (refuse_unsupported()) {
          rc = 1;
          break;
        }
        close_gate();
        g_gate_closed_by_checkpoint = true;
      }
      break;
    case STASIS_EVENT_DRAIN:
      if (g_gate_closed_by_checkpoint && !drain_sends()) rc = 1;
      else if (g_gate_closed_by_checkpoint && !publish_ud_counts(data->generation)) {
        refuse("InfiniBand:", "cannot publish the counts of the UD datagrams it sent (coordinator's name service)");
        rc = 1;
      }
      break;
    case STASIS_EVENT_BARRIER:
      if (g_gate_closed_by_checkpoint && strcmp(data->barrier, "ib-quiesce") == 0) {
        if (!fetch_expected_ud_counts(data->generation)) {
          refuse("InfiniBand:", "cannot read the counts of the UD datagrams sent to it (coordinator's name service)");
          rc = 1;
          break;
        }
        if (!drain_all_cqs() || !await_ud_datagrams()) {
          rc = 1;
          break;
        }
        tear_down();
      }
      break;
    case STASIS_EVENT_PRE_CHECKPOINT:
      if (g_library_threads.load() != 0) {
        refuse("InfiniBand:", "the verbs library still runs threads after its devices were closed");
        rc = 1;
      }
      break;
    case STASIS_EVENT_RESUME:
    case STASIS_EVENT_RESTART:
      // This process's entries of the last re-creation and of this drain: every peer has read
      // them (the drain's before the checkpoint barrier). A restarted process has none yet.
      if (event == STASIS_EVENT_RESUME && g_gate_closed_by_checkpoint && stasis_plugin_ns_withdraw)
        stasis_plugin_ns_withdraw("ib/");
      if (g_torn_down && (event != STASIS_EVENT_RESTART || use_restart_library()))
        recreate(data->generation, event == STASIS_EVENT_RESTART);
      if (g_gate_closed_by_checkpoint) {
        g_gate_closed_by_checkpoint = false;
        open_gate();
      }
      break;
    case STASIS_EVENT_ATFORK_CHILD:
      // The parent's verbs objects are not usable here (their library state is the parent's).
      if (have_objects()) g_unsupported = "verbs objects inherited across fork() (the child of a verbs process)";
      break;
    default:
      break;
  }
  t_gate_depth--;
  return rc;
}

const char* const kBarriers[] = {"ib-quiesce", nullptr};
stasis_plugin_t g_plugin = {STASIS_PLUGIN_API_VERSION, "infiniband", on_event, nullptr, kBarriers};

__attribute__((constructor)) void register_plugin() {
  g_pthread_create = reinterpret_cast<PthreadCreateFn>(dlsym(RTLD_NEXT, "pthread_create"));
  if (stasis_register_plugin) stasis_register_plugin(&g_plugin);
}

}  // namespace

void gate_enter() {
  if (t_gate_depth++ > 0) return;
  for (;;) {
    g_inside.fetch_add(1);
    if (g_gate_closed.load() == 0) return;
    g_inside.fetch_sub(1);
    while (g_gate_closed.load() != 0)
      syscall(SYS_futex, &g_gate_closed, FUTEX_WAIT, 1, nullptr, nullptr, 0);
  }
}

void gate_leave() {
  if (--t_gate_depth == 0) g_inside.fetch_sub(1);
}

LibraryThreads::LibraryThreads() { t_owning_library_threads++; }
LibraryThreads::~LibraryThreads() { t_owning_library_threads--; }

uint16_t translate_remote_lid_back(uint16_t real_lid) {
  for (int i = 0, n = g_remote_count.load(std::memory_order_acquire); i < n; i++)
    if (g_remote[i].real_lid == real_lid) return g_remote[i].virtual_lid;
  return real_lid;
}

int modify_real_qp(VQp* qp, const ibv_qp_attr& attr, int mask) {
  ibv_qp_attr real = attr;
  if (g_translating.load() && (mask & IBV_QP_DEST_QPN) && (mask & IBV_QP_AV)) {
    const RemoteQp* remote = remote_qp(attr.ah_attr.dlid, attr.dest_qp_num, g_torn_down);
    if (!remote && g_torn_down) return EAGAIN;
    if (remote) {
      real.dest_qp_num = remote->real_qpn;
      real.ah_attr.dlid = remote->real_lid;
    }
  }
  return g_real.modify_qp(qp->real, &real, mask);
}

uint32_t real_remote_rkey(const VQp* qp, uint32_t virtual_rkey) {
  uint16_t vlid = 0;
  for (int i = 0; i < qp->modify_count; i++)
    if (qp->modifies[i].mask & IBV_QP_AV) vlid = qp->modifies[i].attr.ah_attr.dlid;
  for (int i = 0, n = g_remote_mr_count.load(std::memory_order_acquire); i < n; i++)
    if (g_remote_mrs[i].virtual_lid == vlid && g_remote_mrs[i].virtual_rkey == virtual_rkey)
      return g_remote_mrs[i].real_rkey;
  // First use since the re-creation: the peer published it then (its QPs, which this process
  // waited for, come after its regions), or it is a region the peer registered since (its key
  // is already today's). Either answer is remembered.
  RemoteMr entry = {vlid, virtual_rkey, virtual_rkey};
  lookup("mr-", vlid, virtual_rkey, &entry.real_rkey, sizeof entry.real_rkey, 0);
  while (g_remote_mr_lock.test_and_set(std::memory_order_acquire)) {
  }
  int n = g_remote_mr_count.load();
  if (n < static_cast<int>(sizeof g_remote_mrs / sizeof g_remote_mrs[0])) {
    g_remote_mrs[n] = entry;
    g_remote_mr_count.store(n + 1, std::memory_order_release);
  }
  g_remote_mr_lock.clear(std::memory_order_release);
  return entry.real_rkey;
}

RemoteQp ud_destination(uint16_t virtual_lid, uint32_t virtual_qpn) {
  if (const RemoteQp* known = known_remote(virtual_lid, virtual_qpn)) return *known;
  // Every QP of the computation is published at each re-creation (before its process's threads
  // run) and when made afterwards; only a peer outside the computation makes this wait in vain.
  RemoteQp same = {virtual_lid, virtual_lid, virtual_qpn, virtual_qpn};
  const RemoteQp* found = remote_qp(virtual_lid, virtual_qpn, true, "ready-");
  if (!found) found = remember_remote(same);
  return found ? *found : same;
}

RemoteQp ud_source(uint16_t real_lid, uint32_t real_qpn) {
  if (const RemoteQp* known = known_remote_by_real(real_lid, real_qpn)) return *known;
  RemoteQp record = {real_lid, real_lid, real_qpn, real_qpn};  // not published: made since
  lookup("rqp-", real_lid, real_qpn, &record, sizeof record, 0);
  const RemoteQp* entry = remember_remote(record);
  return entry ? *entry : record;
}

void publish_new_qp(const VQp* qp) {
  if (g_exchange_prefix[0] && publish_qp(qp)) publish_ready(qp);
}

void count_ud_sent(const VQp* qp, uint16_t virtual_dlid, uint32_t virtual_dqpn) {
  UdCount key = {qp->ctx->virtual_lid[port_of(qp)], qp->ibv.qp_num, virtual_dlid, virtual_dqpn, 0};
  count_datagrams(g_ud_sent, g_ud_sent_count, key);
}

void count_ud_received(const VQp* qp, uint16_t virtual_slid, uint32_t virtual_sqpn) {
  UdCount key = {virtual_slid, virtual_sqpn, qp->ctx->virtual_lid[port_of(qp)], qp->ibv.qp_num, 0};
  count_datagrams(g_ud_received, g_ud_received_count, key);
}

}  // namespace stasis::ib

using namespace stasis::ib;

// Threads started inside the plugin's calls into the library belong to the library: they are
// exempted from the checkpoint's stop before they run a line of their own.
extern "C" __attribute__((visibility("default"))) int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                                                     void* (*routine)(void*), void* arg) {
  if (!g_pthread_create) g_pthread_create = reinterpret_cast<PthreadCreateFn>(dlsym(RTLD_NEXT, "pthread_create"));
  if (t_owning_library_threads == 0 || !stasis_plugin_exempt_thread) return g_pthread_create(thread, attr, routine, arg);
  ThreadStart start = {routine, arg, {0}};
  int rc = g_pthread_create(thread, attr, exempt_thread_start, &start);
  if (rc != 0) return rc;
  while (start.exempted.load() == 0) syscall(SYS_futex, &start.exempted, FUTEX_WAIT, 0, nullptr, nullptr, 0);
  return 0;
}
