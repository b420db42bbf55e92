// The KVM part of the ioctl() wrapper (construction.h): KVM requests only (one compare for any
// other ioctl). A call that builds a VM is made with the checkpoint signal blocked and recorded
// before it is unblocked, so a checkpoint never sees a descriptor the tables do not know yet.
#include "plugins/kvm/construction.h"

#include <atomic>

#include "plugins/kvm/kvm_requests.h"

namespace stasis::rt {
namespace {

KvmVmBuild g_vms[kKvmMaxVms];
KvmVcpuBuild g_vcpus[kKvmMaxVcpus];
const char* g_unsupported = nullptr;
std::atomic<bool> g_busy{false};  // between threads of the program; never held by a stopped one

// Requests on a VM or vCPU that change state Stasis neither records nor reads back at the
// checkpoint: a program that made one is refused (construction.h: kvm_unsupported_call).
struct NamedRequest {
  unsigned long request;
  const char* name;
};
constexpr NamedRequest kUnsupported[] = {
    {KVM_CREATE_DEVICE, "KVM_CREATE_DEVICE"},
    {KVM_SET_GUEST_DEBUG, "KVM_SET_GUEST_DEBUG"},
    {KVM_CREATE_PIT, "KVM_CREATE_PIT"},
    {KVM_SET_BOOT_CPU_ID, "KVM_SET_BOOT_CPU_ID"},
    {KVM_SET_PMU_EVENT_FILTER, "KVM_SET_PMU_EVENT_FILTER"},
    {KVM_SET_NR_MMU_PAGES, "KVM_SET_NR_MMU_PAGES"},
    {KVM_REINJECT_CONTROL, "KVM_REINJECT_CONTROL"},
    {KVM_XEN_HVM_CONFIG, "KVM_XEN_HVM_CONFIG"},
    {KVM_ASSIGN_SET_MSIX_NR, "device assignment"},
#ifdef KVM_SET_USER_MEMORY_REGION2  // newer kernel headers
    {KVM_SET_USER_MEMORY_REGION2, "KVM_SET_USER_MEMORY_REGION2"},
    {KVM_SET_MEMORY_ATTRIBUTES, "KVM_SET_MEMORY_ATTRIBUTES"},
    {KVM_CREATE_GUEST_MEMFD, "KVM_CREATE_GUEST_MEMFD"},
#else
    {_IOC(_IOC_WRITE, KVMIO, 0x49, 160), "KVM_SET_USER_MEMORY_REGION2"},  // struct kvm_userspace_memory_region2
#endif
    {KVM_GET_DIRTY_LOG, "KVM_GET_DIRTY_LOG (dirty-page logging)"},
};

bool builds(unsigned long request) {
  switch (request) {
    case KVM_CREATE_VM: case KVM_CREATE_VCPU: case KVM_SET_USER_MEMORY_REGION: case KVM_SET_TSS_ADDR:
    case KVM_SET_IDENTITY_MAP_ADDR: case KVM_CREATE_IRQCHIP: case KVM_CREATE_PIT2: case kvm_c::kSetCpuid2:
    case kvm_c::kSetCpuid: case KVM_ENABLE_CAP: case kvm_c::kSetGsiRouting: case KVM_IRQFD: case KVM_IOEVENTFD:
    case KVM_REGISTER_COALESCED_MMIO: case KVM_UNREGISTER_COALESCED_MMIO: case KVM_X86_SET_MSR_FILTER:
    case KVM_X86_SETUP_MCE: case kvm_c::kSetSignalMask: case KVM_TPR_ACCESS_REPORTING: case KVM_SET_VAPIC_ADDR:
      return true;
    default:
      return false;
  }
}

KvmVmBuild* vm_at(int fd) {
  for (auto& vm : g_vms)
    if (vm.fd == fd) return &vm;
  return nullptr;
}

void set_slot(StasisKvmVmState& vm, const kvm_userspace_memory_region& region) {
  uint32_t i = 0;
  while (i < vm.slot_count && vm.slots[i].slot != region.slot) i++;
  if (region.memory_size == 0) {  // deleted
    if (i < vm.slot_count) vm.slots[i] = vm.slots[--vm.slot_count];
    return;
  }
  if (i == vm.slot_count) {
    if (vm.slot_count == STASIS_KVM_MAX_SLOTS) {
      g_unsupported = "more than 32 KVM memory slots";
      return;
    }
    vm.slot_count++;
  }
  vm.slots[i] = region;
}

// struct kvm_signal_mask as C lays it out: u32 len, then the sigset (C++ moves a flexible array).
constexpr unsigned kSigsetOffset = 4;
static_assert(offsetof(StasisKvmRouting, entries) == 8, "struct kvm_irq_routing's C layout");

KvmVcpuBuild* vcpu_at(int fd) {
  for (auto& vcpu : g_vcpus)
    if (fd >= 0 && vcpu.fd == fd) return &vcpu;
  return nullptr;
}

// Capabilities whose state lives where no replay reaches (ring pages, another VM's or an SGX
// file's descriptor): the VM is refused.
const char* unrestorable_cap(uint32_t cap) {
  switch (cap) {
    case KVM_CAP_DIRTY_LOG_RING: case KVM_CAP_DIRTY_LOG_RING_ACQ_REL: return "KVM_ENABLE_CAP(KVM_CAP_DIRTY_LOG_RING)";
    case KVM_CAP_SGX_ATTRIBUTE: return "KVM_ENABLE_CAP(KVM_CAP_SGX_ATTRIBUTE)";
    case KVM_CAP_VM_COPY_ENC_CONTEXT_FROM: case KVM_CAP_VM_MOVE_ENC_CONTEXT_FROM:
      return "KVM_ENABLE_CAP (an encrypted VM's context)";
    default: return nullptr;
  }
}

template <typename Entry, unsigned N>
void append(Entry (&list)[N], uint32_t& count, const Entry& entry, const char* too_many) {
  if (count == N) g_unsupported = too_many;
  else list[count++] = entry;
}

// Removes the first entry `same` matches (a deassignment of what was assigned).
template <typename Entry, unsigned N, typename Same>
void remove_first(Entry (&list)[N], uint32_t& count, Same same) {
  for (uint32_t i = 0; i < count; i++)
    if (same(list[i])) {
      for (uint32_t j = i + 1; j < count; j++) list[j - 1] = list[j];
      count--;
      return;
    }
}

void record_msr_filter(StasisKvmMsrFilter& kept, const kvm_msr_filter& filter) {
  __builtin_memset(&kept, 0, sizeof kept);
  kept.set = 1;
  kept.flags = filter.flags;
  for (unsigned i = 0; i < KVM_MSR_FILTER_MAX_RANGES; i++) {
    const kvm_msr_filter_range& range = filter.ranges[i];
    kept.ranges[i] = {range.flags, range.nmsrs, range.base, 0};
    uint32_t bytes = (range.nmsrs + 7) / 8;
    if (bytes > STASIS_KVM_MSR_BITMAP_BYTES) g_unsupported = "KVM_X86_SET_MSR_FILTER with a range of more than 2048 MSRs";
    else if (range.nmsrs) __builtin_memcpy(kept.bitmaps[i], range.bitmap, bytes);
  }
}

void record_vcpu_call(KvmVcpuBuild& vcpu, unsigned long request, void* arg) {
  StasisKvmVcpuWiring& w = vcpu.wiring;
  switch (request) {
    case kvm_c::kSetCpuid2: case kvm_c::kSetCpuid: vcpu.cpuid_set = true; break;
    case KVM_ENABLE_CAP:
      append(w.caps, w.cap_count, *static_cast<const kvm_enable_cap*>(arg), "more than 8 KVM_ENABLE_CAP on one vCPU");
      break;
    case KVM_X86_SETUP_MCE: w.mce_cap = *static_cast<const uint64_t*>(arg), w.have_mce = 1; break;
    case kvm_c::kSetSignalMask:
      w.have_signal_mask = arg != nullptr;
      if (arg) __builtin_memcpy(&w.signal_mask, static_cast<const char*>(arg) + kSigsetOffset, sizeof w.signal_mask);
      break;
    case KVM_TPR_ACCESS_REPORTING: w.tpr_access = *static_cast<const kvm_tpr_access_ctl*>(arg), w.have_tpr_access = 1; break;
    case KVM_SET_VAPIC_ADDR: w.vapic = *static_cast<const kvm_vapic_addr*>(arg), w.have_vapic = 1; break;
    default: break;
  }
}

void record_vm_wiring(StasisKvmVmWiring& w, unsigned long request, void* arg) {
  switch (request) {
    case KVM_ENABLE_CAP: {
      const auto& cap = *static_cast<const kvm_enable_cap*>(arg);
      if (const char* refused = unrestorable_cap(cap.cap)) g_unsupported = refused;
      if (cap.cap == KVM_CAP_SPLIT_IRQCHIP) w.split_irqchip = 1;
      append(w.caps, w.cap_count, cap, "more than 16 KVM_ENABLE_CAP on one VM");
      break;
    }
    case kvm_c::kSetGsiRouting: {
      const auto& routing = *static_cast<const StasisKvmRouting*>(arg);  // the C layout, whatever nr says
      if (routing.nr > STASIS_KVM_MAX_ROUTES) {
        g_unsupported = "KVM_SET_GSI_ROUTING with more than 128 routes";
        break;
      }
      w.routing.nr = routing.nr, w.routing.flags = routing.flags, w.routing_set = 1;
      __builtin_memcpy(w.routing.entries, routing.entries, routing.nr * sizeof(kvm_irq_routing_entry));
      break;
    }
    case KVM_IRQFD: {
      const auto& irqfd = *static_cast<const kvm_irqfd*>(arg);
      if (irqfd.flags & KVM_IRQFD_FLAG_DEASSIGN)
        remove_first(w.irqfds, w.irqfd_count, [&](const kvm_irqfd& e) { return e.fd == irqfd.fd && e.gsi == irqfd.gsi; });
      else append(w.irqfds, w.irqfd_count, irqfd, "more than 32 KVM_IRQFD bindings on one VM");
      break;
    }
    case KVM_IOEVENTFD: {
      const auto& io = *static_cast<const kvm_ioeventfd*>(arg);
      constexpr uint32_t kDeassign = 1u << kvm_ioeventfd_flag_nr_deassign;
      constexpr uint32_t kDatamatch = 1u << kvm_ioeventfd_flag_nr_datamatch;
      if (io.flags & kDeassign)
        remove_first(w.ioeventfds, w.ioeventfd_count, [&](const kvm_ioeventfd& e) {
          return e.fd == io.fd && e.addr == io.addr && e.len == io.len &&
                 (e.flags & ~kDeassign) == (io.flags & ~kDeassign) && (!(io.flags & kDatamatch) || e.datamatch == io.datamatch);
        });
      else append(w.ioeventfds, w.ioeventfd_count, io, "more than 64 KVM_IOEVENTFD bindings on one VM");
      break;
    }
    case KVM_REGISTER_COALESCED_MMIO:
      append(w.coalesced, w.coalesced_count, *static_cast<const kvm_coalesced_mmio_zone*>(arg),
             "more than 16 KVM_REGISTER_COALESCED_MMIO zones on one VM");
      break;
    case KVM_UNREGISTER_COALESCED_MMIO: {  // as the kernel: every zone inside the one given
      const auto& zone = *static_cast<const kvm_coalesced_mmio_zone*>(arg);
      for (uint32_t i = w.coalesced_count; i-- > 0;) {
        const kvm_coalesced_mmio_zone& z = w.coalesced[i];
        if (z.pio == zone.pio && z.addr >= zone.addr && z.addr + z.size <= zone.addr + zone.size)
          w.coalesced[i] = w.coalesced[--w.coalesced_count];
      }
      break;
    }
    case KVM_X86_SET_MSR_FILTER: record_msr_filter(w.msr_filter, *static_cast<const kvm_msr_filter*>(arg)); break;
    default: break;
  }
}

// After `request` succeeded on `fd` with `result`.
void record(int fd, unsigned long request, void* arg, int result) {
  if (request == KVM_CREATE_VM) {
    for (auto& vcpu : g_vcpus)  // a number reused: whatever it was is gone
      if (vcpu.fd == result) vcpu.fd = -1;
    KvmVmBuild* free = vm_at(result) ? vm_at(result) : vm_at(-1);
    if (!free) {
      g_unsupported = "more than 4 KVM virtual machines in one process";
      return;
    }
    free->fd = result;
    __builtin_memset(&free->built, 0, sizeof free->built);
    free->built.magic = STASIS_KVM_VM_MAGIC;
    free->built.type = reinterpret_cast<uint64_t>(arg);
    return;
  }
  if (request == KVM_CREATE_VCPU) {
    if (KvmVmBuild* reused = vm_at(result)) reused->fd = -1;
    KvmVcpuBuild* free = nullptr;
    for (auto& vcpu : g_vcpus)
      if (vcpu.fd == result || (!free && vcpu.fd < 0)) free = &vcpu;
    if (!free) {
      g_unsupported = "more than 64 KVM vCPUs in one process";
      return;
    }
    *free = KvmVcpuBuild{result, fd, static_cast<uint32_t>(reinterpret_cast<uintptr_t>(arg)), false, {}};
    return;
  }
  if (KvmVcpuBuild* vcpu = vcpu_at(fd)) {
    record_vcpu_call(*vcpu, request, arg);
    return;
  }
  KvmVmBuild* vm = vm_at(fd);
  if (!vm) return;  // not a VM this wrapper saw made: the capture refuses it
  StasisKvmVmState& b = vm->built;
  switch (request) {
    case KVM_SET_USER_MEMORY_REGION: set_slot(b, *static_cast<const kvm_userspace_memory_region*>(arg)); break;
    case KVM_SET_TSS_ADDR: b.tss_addr = reinterpret_cast<uint64_t>(arg), b.have_tss_addr = 1; break;
    case KVM_SET_IDENTITY_MAP_ADDR:
      b.identity_map_addr = *static_cast<const uint64_t*>(arg), b.have_identity_map_addr = 1;
      break;
    case KVM_CREATE_IRQCHIP: b.irqchip = 1; break;
    case KVM_CREATE_PIT2: b.pit = 1, b.pit_config = *static_cast<const kvm_pit_config*>(arg); break;
    default: record_vm_wiring(b.wiring, request, arg); break;
  }
}

}  // namespace

int kvm_ioctl(int (*real)(int, unsigned long, ...), int fd, unsigned long request, void* arg) {
  if (!builds(request)) {
    for (const NamedRequest& r : kUnsupported)
      if (r.request == request && !g_unsupported) g_unsupported = r.name;
    return real(fd, request, arg);
  }
  const int signal = g_config.checkpoint_signal;
  uint64_t block = signal > 0 ? 1ull << (signal - 1) : 0, saved = 0;
  if (block) STASIS_SYS4(SYS_rt_sigprocmask, SIG_BLOCK, &block, &saved, sizeof block);
  while (g_busy.exchange(true, std::memory_order_acquire)) STASIS_SYS0(SYS_sched_yield);
  // The kernel gets the program's KVM_RUN signal mask without the checkpoint signal; the wrapper
  // records it as the program gave it.
  struct {
    uint32_t len;
    uint64_t sigset;
  } __attribute__((packed)) run_mask{};
  void* passed = arg;
  if (request == kvm_c::kSetSignalMask && arg && *static_cast<const uint32_t*>(arg) == sizeof run_mask.sigset) {
    run_mask.len = sizeof run_mask.sigset;
    __builtin_memcpy(&run_mask.sigset, static_cast<const char*>(arg) + kSigsetOffset, sizeof run_mask.sigset);
    run_mask.sigset = kvm_run_mask_without_checkpoint_signal(run_mask.sigset);
    passed = &run_mask;
  }
  int result = real(fd, request, passed);
  if (result >= 0) record(fd, request, arg, result);
  g_busy.store(false, std::memory_order_release);
  if (block) STASIS_SYS4(SYS_rt_sigprocmask, SIG_SETMASK, &saved, nullptr, sizeof saved);
  return result;
}

const KvmVmBuild* kvm_vm_built_at(int fd) { return fd >= 0 ? vm_at(fd) : nullptr; }

const KvmVcpuBuild* kvm_vcpu_built_at(int fd) { return vcpu_at(fd); }

uint64_t kvm_run_mask_without_checkpoint_signal(uint64_t mask) {
  const int signal = g_config.checkpoint_signal;
  return signal > 0 && signal <= 64 ? mask & ~(1ull << (signal - 1)) : mask;
}

const KvmVcpuBuild* kvm_vcpu_entry(unsigned index) { return &g_vcpus[index]; }

const char* kvm_unsupported_call() { return g_unsupported; }

bool descriptor_link_starts(int fd, const char* prefix) {
  char proc[32] = "", link[128];
  FixedText(proc, sizeof proc) << "/proc/self/fd/" << fd;
  long n = STASIS_SYS4(SYS_readlinkat, AT_FDCWD, proc, link, sizeof link - 1);
  if (n <= 0) return false;
  link[n] = 0;
  return str_starts(link, prefix);
}

}  // namespace stasis::rt
