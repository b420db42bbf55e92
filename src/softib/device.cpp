// The softib device: discovery, contexts, and the queries that describe the adapter and its port.
#include <endian.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "transport.h"

#undef ibv_get_device_list
#undef ibv_query_port

using namespace softib;

namespace softib {
int op_poll_cq(ibv_cq*, int, ibv_wc*);
int op_req_notify_cq(ibv_cq*, int);
int op_post_send(ibv_qp*, ibv_send_wr*, ibv_send_wr**);
int op_post_recv(ibv_qp*, ibv_recv_wr*, ibv_recv_wr**);
int op_post_srq_recv(ibv_srq*, ibv_recv_wr*, ibv_recv_wr**);
}  // namespace softib

namespace {

constexpr const char* kDeviceName = "softib0";

// softib's stand-in for /sys: FABRIC/sys, holding the device's class directories (empty: no
// attribute files). Verbs users check the class directory before they look for devices (Open
// MPI's openib BTL: SYSFS/class/infiniband must be a directory), so it has to exist.
const std::string& sysfs_dir() {
  static const std::string& dir = *[] {
    auto* d = new std::string(fabric_dir() + "/sys");
    for (const char* sub : {"", "/class", "/class/infiniband", "/class/infiniband_verbs"})
      mkdir((*d + sub).c_str(), 0700);
    mkdir((*d + "/class/infiniband/" + kDeviceName).c_str(), 0700);
    mkdir((*d + "/class/infiniband_verbs/uverbs-" + kDeviceName).c_str(), 0700);
    return d;
  }();
  return dir;
}

ibv_device* the_device() {
  static ibv_device* dev = [] {
    auto* d = static_cast<ibv_device*>(calloc(1, sizeof(ibv_device)));
    d->node_type = IBV_NODE_CA;
    d->transport_type = IBV_TRANSPORT_IB;
    snprintf(d->name, sizeof d->name, "%s", kDeviceName);
    snprintf(d->dev_name, sizeof d->dev_name, "uverbs-%s", kDeviceName);
    // Where rdma-core points them, under softib's sysfs stand-in (directories, no attributes).
    snprintf(d->dev_path, sizeof d->dev_path, "%s/class/infiniband_verbs/%s", sysfs_dir().c_str(), d->dev_name);
    snprintf(d->ibdev_path, sizeof d->ibdev_path, "%s/class/infiniband/%s", sysfs_dir().c_str(), kDeviceName);
    return d;
  }();
  return dev;
}

void fill_port_attr(Context* c, ibv_port_attr* a) {
  a->state = IBV_PORT_ACTIVE;
  a->max_mtu = IBV_MTU_4096;
  a->active_mtu = IBV_MTU_4096;
  a->gid_tbl_len = 1;
  a->port_cap_flags = IBV_PORT_CM_SUP;
  a->max_msg_sz = 1u << 31;
  a->bad_pkey_cntr = 0;
  a->qkey_viol_cntr = 0;
  a->pkey_tbl_len = 1;
  a->lid = c->lid;
  a->sm_lid = 1;
  a->lmc = 0;
  a->max_vl_num = 1;
  a->sm_sl = 0;
  a->subnet_timeout = 18;
  a->init_type_reply = 0;
  a->active_width = 2;   // 4x
  a->active_speed = 32;  // EDR
  a->phys_state = 5;     // LinkUp
  a->link_layer = IBV_LINK_LAYER_INFINIBAND;
}

int op_query_port_ex(ibv_context* context, uint8_t port, ibv_port_attr* attr, size_t len) {
  if (port != 1) return EINVAL;
  ibv_port_attr full{};
  fill_port_attr(ctx_of(context), &full);
  memcpy(attr, &full, std::min(len, sizeof full));
  return 0;
}

int op_compat_query_device(ibv_context* context, ibv_device_attr* attr);
int op_compat_query_port(ibv_context* context, uint8_t port, _compat_ibv_port_attr* attr) {
  return op_query_port_ex(context, port, reinterpret_cast<ibv_port_attr*>(attr),
                          offsetof(ibv_port_attr, port_cap_flags2));
}

// Contexts still open, so that a process that exits without closing its device (common on error
// paths) still withdraws its queue pairs and socket from the shared fabric directory.
// Never destroyed: the exit hook below may run after static destructors.
std::mutex& open_contexts_lock = *new std::mutex;
std::vector<Context*>& open_contexts = *new std::vector<Context*>;

// SOFTIB_TRANSPORT, read at every open: a restarted program re-opens its device and may be given
// another value (`stasis restart --setenv`). Empty when the value is not one softib knows.
std::optional<bool> tcp_only_from_environment() {
  const char* value = getenv("SOFTIB_TRANSPORT");
  if (!value || !*value || strcmp(value, "auto") == 0) return false;
  if (strcmp(value, "tcp") == 0) return true;
  fprintf(stderr, "softib: SOFTIB_TRANSPORT=%s is neither auto nor tcp\n", value);
  return std::nullopt;
}

__attribute__((destructor)) void withdraw_at_exit() {
  std::lock_guard<std::mutex> g(open_contexts_lock);
  for (Context* c : open_contexts) {
    for (auto& [qpn, qp] : c->qps) withdraw_qp(c->lid, qpn);
    if (!c->self.unix_path.empty()) unlink(c->self.unix_path.c_str());
  }
}

}  // namespace

SOFTIB_API ibv_device** ibv_get_device_list(int* num_devices) {
  auto** list = static_cast<ibv_device**>(calloc(2, sizeof(ibv_device*)));
  if (!list) {
    errno = ENOMEM;
    return nullptr;
  }
  list[0] = the_device();
  if (num_devices) *num_devices = 1;
  return list;
}

SOFTIB_API void ibv_free_device_list(ibv_device** list) { free(list); }

// rdma-core's `const char* ibv_get_sysfs_path(void)` (IBVERBS_1.0): the sysfs root its devices'
// paths lie under.
SOFTIB_API const char* ibv_get_sysfs_path(void) { return sysfs_dir().c_str(); }

SOFTIB_API const char* ibv_get_device_name(ibv_device* device) { return device->name; }

SOFTIB_API __be64 ibv_get_device_guid(ibv_device*) { return htobe64(host_guid()); }

SOFTIB_API int ibv_get_device_index(ibv_device*) { return 0; }

SOFTIB_API ibv_context* ibv_open_device(ibv_device* device) {
  if (device != the_device()) {
    errno = ENODEV;
    return nullptr;
  }
  std::optional<bool> tcp_only = tcp_only_from_environment();
  if (!tcp_only) {
    errno = EINVAL;
    return nullptr;
  }
  auto* c = new Context;
  c->tcp_only = *tcp_only;
  memset(&c->vctx, 0, sizeof c->vctx);
  c->vctx.sz = sizeof(verbs_context);
  c->vctx.query_port = op_query_port_ex;
  ibv_context& ctx = c->vctx.context;
  ctx.device = device;
  ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
  ctx.num_comp_vectors = 1;
  pthread_mutex_init(&ctx.mutex, nullptr);
  ctx.ops._compat_query_device = op_compat_query_device;
  ctx.ops._compat_query_port = op_compat_query_port;
  ctx.ops.poll_cq = op_poll_cq;
  ctx.ops.req_notify_cq = op_req_notify_cq;
  ctx.ops.post_send = op_post_send;
  ctx.ops.post_recv = op_post_recv;
  ctx.ops.post_srq_recv = op_post_srq_recv;
  // There is no kernel device: the command fd is /dev/null; the async fd never becomes readable.
  ctx.cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  ctx.async_fd = eventfd(0, EFD_CLOEXEC);
  c->lid = host_lid();
  uint64_t subnet = htobe64(0xfe80000000000000ull);
  uint64_t guid = htobe64(host_guid());
  memcpy(c->gid.raw, &subnet, 8);
  memcpy(c->gid.raw + 8, &guid, 8);
  if (!transport_start(c)) {
    int saved = errno;
    transport_stop(c);
    close(ctx.cmd_fd);
    close(ctx.async_fd);
    delete c;
    errno = saved ? saved : EIO;
    return nullptr;
  }
  std::lock_guard<std::mutex> g(open_contexts_lock);
  open_contexts.push_back(c);
  return &ctx;
}

SOFTIB_API int ibv_close_device(ibv_context* context) {
  Context* c = ctx_of(context);
  {
    std::lock_guard<std::mutex> g(open_contexts_lock);
    std::erase(open_contexts, c);
  }
  transport_stop(c);
  for (auto& [qpn, qp] : c->qps) withdraw_qp(c->lid, qpn);
  close(context->cmd_fd);
  close(context->async_fd);
  delete c;
  return 0;
}

SOFTIB_API ibv_context* ibv_import_device(int) {
  errno = EOPNOTSUPP;
  return nullptr;
}
SOFTIB_API ibv_pd* ibv_import_pd(ibv_context*, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
SOFTIB_API void ibv_unimport_pd(ibv_pd*) {}
SOFTIB_API ibv_mr* ibv_import_mr(ibv_pd*, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
SOFTIB_API void ibv_unimport_mr(ibv_mr*) {}
SOFTIB_API ibv_dm* ibv_import_dm(ibv_context*, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
SOFTIB_API void ibv_unimport_dm(ibv_dm*) {}

SOFTIB_API int ibv_query_device(ibv_context* context, ibv_device_attr* a) {
  memset(a, 0, sizeof *a);
  snprintf(a->fw_ver, sizeof a->fw_ver, "softib-%s", STASIS_VERSION);
  a->node_guid = htobe64(host_guid());
  a->sys_image_guid = a->node_guid;
  a->max_mr_size = ~0ull;
  a->page_size_cap = 0xfffff000;
  a->vendor_id = 0x5354;
  a->vendor_part_id = 1;
  a->hw_ver = 1;
  a->max_qp = 1 << 16;
  a->max_qp_wr = 16384;
  a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SRQ_RESIZE |
                        IBV_DEVICE_CHANGE_PHY_PORT;
  a->max_sge = 32;
  a->max_sge_rd = 32;
  a->max_cq = 1 << 16;
  a->max_cqe = 1 << 22;
  a->max_mr = 1 << 20;
  a->max_pd = 1 << 16;
  a->max_qp_rd_atom = 16;
  a->max_res_rd_atom = 16 << 16;
  a->max_qp_init_rd_atom = 16;
  a->atomic_cap = IBV_ATOMIC_NONE;
  a->max_srq = 1 << 16;
  a->max_srq_wr = 16384;
  a->max_srq_sge = 32;
  a->max_pkeys = 1;
  a->local_ca_ack_delay = 15;
  a->phys_port_cnt = 1;
  a->max_ah = 1 << 16;
  (void)context;
  return 0;
}

namespace {
int op_compat_query_device(ibv_context* context, ibv_device_attr* attr) { return ibv_query_device(context, attr); }
}  // namespace

SOFTIB_API int ibv_query_port(ibv_context* context, uint8_t port, _compat_ibv_port_attr* attr) {
  // Old callers pass the shorter structure: fill only what it had.
  return op_compat_query_port(context, port, attr);
}

SOFTIB_API int ibv_query_gid(ibv_context* context, uint8_t port, int index, ibv_gid* gid) {
  if (port != 1 || index != 0) {
    errno = EINVAL;
    return -1;
  }
  *gid = ctx_of(context)->gid;
  return 0;
}

SOFTIB_API int _ibv_query_gid_ex(ibv_context* context, uint32_t port, uint32_t index, ibv_gid_entry* entry,
                                 uint32_t flags, size_t entry_size) {
  if (flags || port != 1 || index != 0 || entry_size < sizeof *entry) return EINVAL;
  memset(entry, 0, sizeof *entry);
  entry->gid = ctx_of(context)->gid;
  entry->gid_index = 0;
  entry->port_num = 1;
  entry->gid_type = IBV_GID_TYPE_IB;
  return 0;
}

SOFTIB_API ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                                        uint32_t flags, size_t entry_size) {
  if (flags || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
  if (max_entries < 1) return -EINVAL;
  int rc = _ibv_query_gid_ex(context, 1, 0, entries, 0, entry_size);
  return rc ? -rc : 1;
}

SOFTIB_API int ibv_query_pkey(ibv_context*, uint8_t port, int index, __be16* pkey) {
  if (port != 1 || index != 0) {
    errno = EINVAL;
    return -1;
  }
  *pkey = htobe16(0xFFFF);  // the default full-membership partition
  return 0;
}

SOFTIB_API int ibv_get_pkey_index(ibv_context*, uint8_t port, __be16 pkey) {
  if (port != 1 || (be16toh(pkey) & 0x7FFF) != 0x7FFF) return -EINVAL;
  return 0;
}

// Private to rdma-core's own tools (ibv_devinfo): the GID type as sysfs would name it.
SOFTIB_API int ibv_query_gid_type(ibv_context*, uint8_t port, unsigned int index, int* type) {
  if (port != 1 || index != 0) {
    errno = EINVAL;
    return -1;
  }
  *type = 0;  // IB / RoCE v1 naming
  return 0;
}

// ---- async events: this device raises none, so a reader blocks like on an idle HCA ----

SOFTIB_API int ibv_get_async_event(ibv_context* context, ibv_async_event*) {
  uint64_t v;
  for (;;) {
    ssize_t n = read(context->async_fd, &v, sizeof v);
    if (n < 0 && errno == EINTR) continue;
    return -1;
  }
}

SOFTIB_API void ibv_ack_async_event(ibv_async_event*) {}

// ---- fork support: memory is ordinary process memory, so fork needs nothing special ----

SOFTIB_API int ibv_fork_init(void) { return 0; }
SOFTIB_API enum ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }
SOFTIB_API int ibv_dontfork_range(void*, size_t) { return 0; }
SOFTIB_API int ibv_dofork_range(void*, size_t) { return 0; }

SOFTIB_API int ibv_resolve_eth_l2_from_gid(ibv_context*, ibv_ah_attr*, uint8_t*, uint16_t*) {
  return EOPNOTSUPP;  // InfiniBand link layer: there is no Ethernet address
}
