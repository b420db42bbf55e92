// Which verbs device contexts a process holds: thin wrappers of ibv_open_device and
// ibv_close_device (the entry points every provider, hardware or softib, goes through) note each
// open context and its device name in a fixed table; the checkpoint refuses while any is open.
// Programs that never call them pay nothing; the ones that do pay a table slot per open.
#include "plugins/infiniband/verbs_guard.h"

#include <dlfcn.h>

struct ibv_device;
struct ibv_context;

namespace stasis::rt {
namespace {

constexpr int kMaxContexts = 64;
constexpr size_t kDeviceNameMax = 64;  // IBV_SYSFS_NAME_MAX

struct OpenContext {  // zero-initialized members: a constant table, no start-up writes
  std::atomic<ibv_context*> context{nullptr};
  char device[kDeviceNameMax] = {};
};
OpenContext g_open[kMaxContexts];
// Contexts beyond the table: still refused, without a name. A fork()ed child inherits the table
// with the memory: it holds the parent's verbs objects (and, on hardware, the device's
// descriptors) and is refused like its parent.
std::atomic<uint32_t> g_untracked{0};

using OpenFn = ibv_context* (*)(ibv_device*);
using CloseFn = int (*)(ibv_context*);
using NameFn = const char* (*)(ibv_device*);
OpenFn g_open_device;
CloseFn g_close_device;
NameFn g_device_name;

// libibverbs is often loaded after the runtime's constructor (dlopen by an MPI transport), so
// these resolve on first use; verbs calls never run in a signal handler. The versions are the
// current ABI's (IBVERBS_1.0 holds the pre-2007 compatibility entry points).
template <typename Fn>
Fn verbs_symbol(Fn& slot, const char* name) {
  if (!slot) slot = reinterpret_cast<Fn>(dlvsym(RTLD_NEXT, name, "IBVERBS_1.1"));
  if (!slot) slot = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));  // an unversioned library
  return slot;
}

// A slot is claimed before the device is opened and freed after it is closed, so a thread stopped
// anywhere inside either call leaves the context noted: refused, never missed. (No critical
// section: the InfiniBand plugin opens and closes devices from the checkpoint thread itself.)
ibv_context* const kOpening = reinterpret_cast<ibv_context*>(1);

OpenContext* claim_slot(ibv_device* device) {
  for (auto& entry : g_open) {
    ibv_context* expected = nullptr;
    if (entry.context.compare_exchange_strong(expected, kOpening)) {
      const char* name = verbs_symbol(g_device_name, "ibv_get_device_name") ? g_device_name(device) : nullptr;
      str_copy(entry.device, name ? name : "(unnamed)", sizeof entry.device);
      return &entry;
    }
  }
  g_untracked.fetch_add(1);
  return nullptr;
}

OpenContext* slot_of(ibv_context* context) {
  for (auto& entry : g_open)
    if (entry.context.load() == context) return &entry;
  return nullptr;
}

}  // namespace

bool refuse_if_verbs_in_use(LogLine& error) {
  uint32_t open = g_untracked.load();
  const char* first = nullptr;
  for (auto& entry : g_open)
    if (entry.context.load() != nullptr) {
      open++;
      if (!first) first = entry.device;
    }
  if (open > 0) {
    error << "InfiniBand verbs device context " << (first ? first : "(unnamed)") << " is open";
    if (open > 1) error << " (" << open << " contexts)";
    error << ": its queue pairs, memory registrations and keys live in the adapter and the verbs "
             "library, which this version cannot restore (see docs/infiniband.md)";
    return false;
  }
  // An RDMA device opened without libibverbs' ibv_open_device (a provider used directly, the
  // rdma_cm or umad character devices): the same state, reached another way.
  bool refused = false;
  for_each_proc_number("/proc/self/fd", [&](long fd, const char* name, long dir) {
    char target[256];
    long len = STASIS_SYS4(SYS_readlinkat, dir, name, target, sizeof target - 1);
    if (len <= 0) return true;
    target[len] = 0;
    if (!str_starts(target, "/dev/infiniband/")) return true;
    error << "descriptor " << fd << " (" << target
          << ") is an RDMA device: its state lives in the adapter, which this version cannot "
             "restore (see docs/infiniband.md)";
    refused = true;
    return false;
  });
  return !refused;
}

}  // namespace stasis::rt

using namespace stasis::rt;

extern "C" __attribute__((visibility("default"))) ibv_context* ibv_open_device(ibv_device* device) {
  if (!verbs_symbol(g_open_device, "ibv_open_device")) return nullptr;
  OpenContext* slot = claim_slot(device);
  ibv_context* context = g_open_device(device);
  if (slot) slot->context.store(context);  // nullptr (failed): the slot is free again
  else if (!context) g_untracked.fetch_sub(1);
  return context;
}

extern "C" __attribute__((visibility("default"))) int ibv_close_device(ibv_context* context) {
  if (!verbs_symbol(g_close_device, "ibv_close_device")) return -1;
  int rc = g_close_device(context);
  if (rc != 0) return rc;
  if (OpenContext* slot = slot_of(context)) slot->context.store(nullptr);
  else if (g_untracked.load() > 0) g_untracked.fetch_sub(1);
  return rc;
}
