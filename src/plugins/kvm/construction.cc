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
    {KVM_IRQFD, "KVM_IRQFD"},
    {KVM_IOEVENTFD, "KVM_IOEVENTFD"},
    {kvm_c::kSetGsiRouting, "KVM_SET_GSI_ROUTING"},
    {KVM_REGISTER_COALESCED_MMIO, "KVM_REGISTER_COALESCED_MMIO"},
    {KVM_ENABLE_CAP, "KVM_ENABLE_CAP"},
    {KVM_CREATE_DEVICE, "KVM_CREATE_DEVICE"},
    {KVM_SET_GUEST_DEBUG, "KVM_SET_GUEST_DEBUG"},
    {kvm_c::kSetSignalMask, "KVM_SET_SIGNAL_MASK"},
    {KVM_X86_SETUP_MCE, "KVM_X86_SETUP_MCE"},
    {KVM_CREATE_PIT, "KVM_CREATE_PIT"},
    {KVM_SET_BOOT_CPU_ID, "KVM_SET_BOOT_CPU_ID"},
    {KVM_X86_SET_MSR_FILTER, "KVM_X86_SET_MSR_FILTER"},
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
    case kvm_c::kSetCpuid:
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
    *free = KvmVcpuBuild{result, fd, static_cast<uint32_t>(reinterpret_cast<uintptr_t>(arg)), false};
    return;
  }
  if (request == kvm_c::kSetCpuid2 || request == kvm_c::kSetCpuid) {
    for (auto& vcpu : g_vcpus)
      if (vcpu.fd == fd) vcpu.cpuid_set = true;
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
    default: break;
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
  int result = real(fd, request, arg);
  if (result >= 0) record(fd, request, arg, result);
  g_busy.store(false, std::memory_order_release);
  if (block) STASIS_SYS4(SYS_rt_sigprocmask, SIG_SETMASK, &saved, nullptr, sizeof saved);
  return result;
}

const KvmVmBuild* kvm_vm_built_at(int fd) { return fd >= 0 ? vm_at(fd) : nullptr; }

const KvmVcpuBuild* kvm_vcpu_built_at(int fd) {
  for (const auto& vcpu : g_vcpus)
    if (fd >= 0 && vcpu.fd == fd) return &vcpu;
  return nullptr;
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
