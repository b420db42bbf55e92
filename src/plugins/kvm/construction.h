// How the program built its KVM virtual machines, as the runtime's ioctl() wrapper saw it
// (construction.cc): the kernel gives back a vCPU's registers but not a VM's memory slots, TSS
// address or whether it has an in-kernel irqchip, so those are recorded as they are made. Kept
// in the program's own memory: a restart brings the tables back with it.
#pragma once
#include <linux/kvm.h>

#include "plugins/kvm/records.h"
#include "runtime/rt.h"

namespace stasis::rt {

constexpr unsigned kKvmMaxVms = 4, kKvmMaxVcpus = 64;

struct KvmVmBuild {
  int fd = -1;             // -1: a free entry
  StasisKvmVmState built{};  // its construction fields only (zeroed: the table is constant-initialized, no start-up writes)
};
struct KvmVcpuBuild {
  int fd = -1;
  int vm_fd = -1;
  uint32_t id = 0;
  bool cpuid_set = false;  // KVM_SET_CPUID2 was called (some kernels give nothing back before)
  StasisKvmVcpuWiring wiring{};
};

// Whether `request` is a KVM ioctl (the wrapper's one cheap test for every other ioctl).
inline bool is_kvm_request(unsigned long request) { return ((request >> 8) & 0xff) == KVMIO; }
// The ioctl wrapper's KVM part: makes the call through `real` and records what builds a VM.
int kvm_ioctl(int (*real)(int, unsigned long, ...), int fd, unsigned long request, void* arg);

const KvmVmBuild* kvm_vm_built_at(int fd);
const KvmVcpuBuild* kvm_vcpu_built_at(int fd);
const KvmVcpuBuild* kvm_vcpu_entry(unsigned index);  // index < kKvmMaxVcpus
// Whether descriptor `fd` is open now on a file whose /proc/self/fd link starts with `prefix`.
bool descriptor_link_starts(int fd, const char* prefix);
// `mask` (a sigset of 8 bytes) without the checkpoint signal: a vCPU thread must take it inside
// KVM_RUN, whatever mask the program gave KVM_SET_SIGNAL_MASK.
uint64_t kvm_run_mask_without_checkpoint_signal(uint64_t mask);
// The first KVM call the program made that Stasis cannot bring back (its name), or nullptr.
const char* kvm_unsupported_call();

}  // namespace stasis::rt
