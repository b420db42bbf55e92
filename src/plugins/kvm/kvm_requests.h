// The KVM ioctl requests whose argument ends in a flexible array, numbered as a C program (and
// the kernel) numbers them. <linux/kvm.h> declares those arrays with __DECLARE_FLEX_ARRAY,
// which in C++ adds an empty struct of one byte: sizeof, and so the size field of the request
// number, differs (KVM_GET_MSR_INDEX_LIST is 0xc004ae02 in C, 0xc008ae02 in C++, which the
// kernel refuses with EINVAL, and the wrapper would never match a program's call).
#pragma once
#include <linux/kvm.h>

namespace stasis::kvm_c {
constexpr unsigned long request(unsigned dir, unsigned nr, unsigned c_size) {
  return _IOC(dir, KVMIO, nr, c_size);
}
constexpr unsigned kRW = _IOC_READ | _IOC_WRITE;
constexpr unsigned long kGetMsrIndexList = request(kRW, 0x02, 4);   // struct kvm_msr_list
constexpr unsigned long kGetMsrs = request(kRW, 0x88, 8);           // struct kvm_msrs
constexpr unsigned long kSetMsrs = request(_IOC_WRITE, 0x89, 8);
constexpr unsigned long kSetCpuid = request(_IOC_WRITE, 0x8a, 8);   // struct kvm_cpuid
constexpr unsigned long kSetSignalMask = request(_IOC_WRITE, 0x8b, 4);  // struct kvm_signal_mask
constexpr unsigned long kSetCpuid2 = request(_IOC_WRITE, 0x90, 8);  // struct kvm_cpuid2
constexpr unsigned long kGetCpuid2 = request(kRW, 0x91, 8);
constexpr unsigned long kGetXsave = request(_IOC_READ, 0xa4, 4096);  // struct kvm_xsave
constexpr unsigned long kSetXsave = request(_IOC_WRITE, 0xa5, 4096);
constexpr unsigned long kSetGsiRouting = request(_IOC_WRITE, 0x6a, 8);  // struct kvm_irq_routing
constexpr unsigned long kGetNestedState = request(kRW, 0xbe, 128);    // struct kvm_nested_state
}  // namespace stasis::kvm_c
