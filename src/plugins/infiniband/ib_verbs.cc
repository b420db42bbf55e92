// The InfiniBand plugin, program side: the verbs entry points the program calls, interposed
// (the plugin is preloaded before libibverbs), handing out virtual objects (ib_objects.h) and
// translating identifiers between them and the library's real objects. This file: the library's
// entry points resolved, and the device, context, protection domain and memory region calls.
// Completion channels, CQs, SRQs, address handles and QPs: ib_queues.cc. The inline
// post/poll functions of verbs.h reach the plugin through the virtual context's ops:
// ib_datapath.cc.
//
// Every wrapper that touches the library holds the gate (ib_plugin.h): a checkpoint closes it
// before any thread is stopped, so no user thread is ever stopped inside the library.
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
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
VChannel* g_channels[kMaxObjects];
VSrq* g_srqs[kMaxObjects];
VAh* g_ahs[kMaxObjects];
VQp* g_qps[kMaxObjects];
const char* g_unsupported;
std::atomic<bool> g_translating{false};

namespace {

template <typename Fn>
void resolve(Fn& slot, const char* name, void* library) {
  // IBVERBS_1.1 is the current ABI of most entry points, 1.0 that of the channel functions.
  for (const char* version : {"IBVERBS_1.1", "IBVERBS_1.0"})
    if (!slot) slot = reinterpret_cast<Fn>(dlvsym(library, name, version));
  if (!slot) slot = reinterpret_cast<Fn>(dlsym(library, name));
}

}  // namespace

void resolve_real_verbs(void* library) {
  resolve(g_real.get_device_list, "ibv_get_device_list", library);
  resolve(g_real.get_device_name, "ibv_get_device_name", library);
  resolve(g_real.open_device, "ibv_open_device", library);
  resolve(g_real.close_device, "ibv_close_device", library);
  resolve(g_real.query_device, "ibv_query_device", library);
  resolve(g_real.query_port, "ibv_query_port", library);
  resolve(g_real.query_gid, "ibv_query_gid", library);
  resolve(g_real.query_pkey, "ibv_query_pkey", library);
  resolve(g_real.alloc_pd, "ibv_alloc_pd", library);
  resolve(g_real.dealloc_pd, "ibv_dealloc_pd", library);
  resolve(g_real.reg_mr, "ibv_reg_mr", library);
  resolve(g_real.dereg_mr, "ibv_dereg_mr", library);
  resolve(g_real.create_comp_channel, "ibv_create_comp_channel", library);
  resolve(g_real.destroy_comp_channel, "ibv_destroy_comp_channel", library);
  resolve(g_real.create_cq, "ibv_create_cq", library);
  resolve(g_real.destroy_cq, "ibv_destroy_cq", library);
  resolve(g_real.get_cq_event, "ibv_get_cq_event", library);
  resolve(g_real.ack_cq_events, "ibv_ack_cq_events", library);
  resolve(g_real.create_qp, "ibv_create_qp", library);
  resolve(g_real.modify_qp, "ibv_modify_qp", library);
  resolve(g_real.query_qp, "ibv_query_qp", library);
  resolve(g_real.destroy_qp, "ibv_destroy_qp", library);
  resolve(g_real.create_srq, "ibv_create_srq", library);
  resolve(g_real.modify_srq, "ibv_modify_srq", library);
  resolve(g_real.query_srq, "ibv_query_srq", library);
  resolve(g_real.destroy_srq, "ibv_destroy_srq", library);
  resolve(g_real.create_ah, "ibv_create_ah", library);
  resolve(g_real.destroy_ah, "ibv_destroy_ah", library);
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
  return destroy_virtual(g_contexts, context, g_real.close_device);
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
  VPd* pd = new_virtual(g_pds, [&] { return g_real.alloc_pd(ctx->real); });
  if (!pd) return nullptr;
  pd->ctx = ctx;
  pd->ibv.context = &ctx->ibv;
  pd->ibv.handle = pd->real->handle;
  return &pd->ibv;
}

__attribute__((visibility("default"))) int ibv_dealloc_pd(ibv_pd* vpd) {
  Gate gate;
  return destroy_virtual(g_pds, vpd, g_real.dealloc_pd);
}

__attribute__((visibility("default"))) ibv_mr* ibv_reg_mr(ibv_pd* vpd, void* addr, size_t length, int access) {
  Gate gate;
  VPd* pd = find_virtual(g_pds, vpd);
  if (!pd) return g_real.reg_mr(vpd, addr, length, access);
  VMr* mr = new_virtual(g_mrs, [&] { return g_real.reg_mr(pd->real, addr, length, access); });
  if (!mr) return nullptr;
  mr->pd = pd;
  mr->access = access;
  mr->ibv = *mr->real;
  mr->ibv.context = &pd->ctx->ibv;
  mr->ibv.pd = &pd->ibv;
  return &mr->ibv;
}

__attribute__((visibility("default"))) int ibv_dereg_mr(ibv_mr* vmr) {
  Gate gate;
  return destroy_virtual(g_mrs, vmr, g_real.dereg_mr);
}

}  // extern "C"
