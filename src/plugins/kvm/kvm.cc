// KVM (checkpoint side): a VM the program built through ioctl() (construction.cc) and its vCPUs
// are saved: how the VM was built, its clock, irqchip and PIT; each vCPU's registers, FPU/XSAVE,
// MSRs, LAPIC, events, MP state and its kvm_run area. Anything else KVM (a VM made some other
// way, a call recorded as unsupported) is refused, naming it: the state lives in the kernel, and
// reopening /dev/kvm as a plain device would give the program an empty VM.
#include <sys/mman.h>
#include <sys/sysmacros.h>

#include "plugins/kvm/construction.h"
#include "plugins/kvm/kvm_requests.h"
#include "plugins/kvm/kvm.h"
#include "plugins/memory/mappings.h"

namespace stasis::rt {

namespace {
constexpr unsigned kKvmMajor = 10, kKvmMinor = 232;  // misc device "kvm" (devices.txt)

// Which KVM object the descriptor is, or nullptr: /dev/kvm (by its device number, whatever path
// it was opened by), anon_inode:kvm-vm, anon_inode:kvm-vcpu:N.
const char* kvm_object(const FdProbe& probe) {
  if (S_ISCHR(probe.st.st_mode) && major(probe.st.st_rdev) == kKvmMajor &&
      minor(probe.st.st_rdev) == kKvmMinor)
    return "the KVM device";
  if (str_starts(probe.link, "anon_inode:kvm-vm")) return "a KVM virtual machine";
  if (str_starts(probe.link, "anon_inode:kvm-vcpu")) return "a KVM vCPU";
  if (str_starts(probe.link, "anon_inode:kvm-")) return "a KVM object";
  return nullptr;
}

long kvm(int fd, unsigned long request, const void* arg = nullptr) {
  return STASIS_SYS3(SYS_ioctl, fd, request, arg);
}

LogLine& refuse(LogLine& error, const FdProbe& probe, const char* what) {
  return error << "descriptor " << probe.fd << " (" << probe.link << ") is " << what << ": ";
}

// Each eventfd the VM's irqfds and ioeventfds were bound to is still open at its number (the
// restart binds the eventfd restored there): one closed or replaced since is refused.
bool bindings_open(const FdProbe& probe, const StasisKvmVmWiring& w, LogLine& error) {
  auto open_eventfd = [&](int fd, const char* call) {
    if (descriptor_link_starts(fd, "anon_inode:[eventfd]")) return true;
    refuse(error, probe, "a KVM virtual machine") << "its " << call << " binding names descriptor " << fd
                                                  << ", which is no longer that eventfd; not checkpointing";
    return false;
  };
  for (uint32_t i = 0; i < w.irqfd_count; i++) {
    const kvm_irqfd& b = w.irqfds[i];
    if (!open_eventfd(static_cast<int>(b.fd), "KVM_IRQFD")) return false;
    if ((b.flags & KVM_IRQFD_FLAG_RESAMPLE) && !open_eventfd(static_cast<int>(b.resamplefd), "KVM_IRQFD (resample)"))
      return false;
  }
  for (uint32_t i = 0; i < w.ioeventfd_count; i++)
    if (!open_eventfd(w.ioeventfds[i].fd, "KVM_IOEVENTFD")) return false;
  return true;
}

bool save_vm(const FdProbe& probe, const KvmVmBuild& b, StasisKvmVmState& s, LogLine& error) {
  s = b.built;
  if (!bindings_open(probe, s.wiring, error)) return false;
  const char* failed = nullptr;
  if (kvm(probe.fd, KVM_GET_CLOCK, &s.clock) != 0) failed = "KVM_GET_CLOCK";
  s.pic_master.chip_id = KVM_IRQCHIP_PIC_MASTER;
  s.pic_slave.chip_id = KVM_IRQCHIP_PIC_SLAVE;
  s.ioapic.chip_id = KVM_IRQCHIP_IOAPIC;
  if (s.irqchip && (kvm(probe.fd, KVM_GET_IRQCHIP, &s.pic_master) != 0 ||
                    kvm(probe.fd, KVM_GET_IRQCHIP, &s.pic_slave) != 0 || kvm(probe.fd, KVM_GET_IRQCHIP, &s.ioapic) != 0))
    failed = "KVM_GET_IRQCHIP";
  if (s.pit && kvm(probe.fd, KVM_GET_PIT2, &s.pit_state) != 0) failed = "KVM_GET_PIT2";
  if (failed) refuse(error, probe, "a KVM virtual machine") << failed << " failed; not checkpointing";
  return !failed;
}

// The VM's kvm_run areas, as the program mapped them (found in /proc/self/maps by the vCPU id
// the kernel names them with).
bool find_run_mappings(const FdProbe& probe, FdDataList& data, StasisKvmVcpuState& s, LogLine& error) {
  Mapping* maps = nullptr;
  uint32_t count = read_mappings(data.arena(), &maps, error);
  if (!count) return false;
  char name[48] = "";
  FixedText(name, sizeof name) << "anon_inode:kvm-vcpu:" << s.vcpu_id;
  for (uint32_t i = 0; i < count; i++) {
    if (!str_eq(maps[i].path, name)) continue;
    if (s.mapping_count == STASIS_KVM_MAX_RUN_MAPS) {
      refuse(error, probe, "a KVM vCPU") << "it is mapped more than " << STASIS_KVM_MAX_RUN_MAPS << " times; not checkpointing";
      return false;
    }
    s.mappings[s.mapping_count++] = {maps[i].start, maps[i].end - maps[i].start, maps[i].offset, maps[i].prot, 0};
  }
  return true;
}

// The exit the program was handling when it was stopped (kvm_run as it sees it): an OUT or an
// MMIO write completes in the kernel without it, so the vCPU runs once with immediate_exit to
// finish it now (KVM keeps that half of the exit where no KVM_GET reaches). A single read (IN,
// MMIO) waits for the program's answer, which may come after the restart: the guest's RIP is
// still on the instruction, so the restart makes the new vCPU take the same exit again
// (recreate.cc) and the program's KVM_RUN completes it. A string read (INS of several) is refused.
bool finish_pending_exit(const FdProbe& probe, StasisKvmVcpuState& s, LogLine& error) {
  long area = STASIS_SYS6(SYS_mmap, 0, s.run_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, probe.fd, 0);
  if (area < 0 && area > -4096) {
    refuse(error, probe, "a KVM vCPU") << "its kvm_run area cannot be mapped (errno " << -area << "); not checkpointing";
    return false;
  }
  auto* run = reinterpret_cast<kvm_run*>(area);
  __builtin_memcpy(s.run, run, s.run_bytes);
  bool ok = true, complete = false;
  switch (run->exit_reason) {
    case KVM_EXIT_IO: complete = run->io.direction == KVM_EXIT_IO_OUT; break;
    case KVM_EXIT_MMIO: complete = run->mmio.is_write; break;
    case KVM_EXIT_UNKNOWN: case KVM_EXIT_INTR: case KVM_EXIT_HLT: case KVM_EXIT_IRQ_WINDOW_OPEN:
    case KVM_EXIT_SHUTDOWN: case KVM_EXIT_DEBUG:
      break;
    default:
      refuse(error, probe, "a KVM vCPU") << "it was stopped while its monitor handled KVM exit " << run->exit_reason
                                        << ", which Stasis cannot finish; not checkpointing";
      ok = false;
  }
  if (ok && (run->exit_reason == KVM_EXIT_IO || run->exit_reason == KVM_EXIT_MMIO) && !complete) {
    s.pending_read = run->exit_reason == KVM_EXIT_MMIO || run->io.count == 1;
    if (!s.pending_read) {
      refuse(error, probe, "a KVM vCPU") << "it was stopped while its monitor answered a string port read of "
                                        << run->io.count << " values; not checkpointing (a later checkpoint may find it "
                                                            "elsewhere)";
      ok = false;
    }
  }
  if (ok && complete) {
    run->immediate_exit = 1;
    long r = kvm(probe.fd, KVM_RUN);
    __builtin_memcpy(run, s.run, s.run_bytes);  // the program's view, as it left it
    if (r != -EINTR) {
      refuse(error, probe, "a KVM vCPU") << "finishing its pending exit gave " << r << "; not checkpointing";
      ok = false;
    }
  }
  STASIS_SYS2(SYS_munmap, area, s.run_bytes);
  return ok;
}

// struct kvm_msr_list as C lays it out: u32 nmsrs, then the indices. In C++ <linux/kvm.h>'s
// flexible array starts 4 bytes later (kvm_requests.h), which skipped the list's first MSR
// (IA32_SYSENTER_CS: a long-mode guest returning to user mode with SYSEXIT then faulted after a
// restart) and read one index past the list's end.
struct StasisKvmMsrList {
  uint32_t nmsrs;
  uint32_t indices[STASIS_KVM_MAX_MSRS];
};
static_assert(offsetof(StasisKvmMsrList, indices) == 4, "struct kvm_msr_list's C layout");

// MSR_IA32_TSC and the others KVM lists; one the kernel will not read is left out (as
// Firecracker filters its list).
bool save_msrs(int kvm_dev, const FdProbe& probe, FdDataList& data, StasisKvmVcpuState& s, LogLine& error) {
  auto* list = static_cast<StasisKvmMsrList*>(data.arena().alloc(sizeof(StasisKvmMsrList)));
  if (!list) return false;
  list->nmsrs = STASIS_KVM_MAX_MSRS;
  if (long r = kvm(kvm_dev, kvm_c::kGetMsrIndexList, list); r != 0) {
    refuse(error, probe, "a KVM vCPU") << "KVM_GET_MSR_INDEX_LIST failed (errno " << -r << ", request ";
    error.hex(kvm_c::kGetMsrIndexList) << ", list at ";
    error.hex(reinterpret_cast<uint64_t>(list)) << "); not checkpointing";
    return false;
  }
  uint32_t n = 0;
  for (uint32_t i = 0; i < list->nmsrs && i < STASIS_KVM_MAX_MSRS; i++) s.msrs.entries[n++].index = list->indices[i];
  for (;;) {
    s.msrs.nmsrs = n;
    long got = kvm(probe.fd, kvm_c::kGetMsrs, &s.msrs);
    if (got < 0) {
      refuse(error, probe, "a KVM vCPU") << "KVM_GET_MSRS failed (errno " << -got << "); not checkpointing";
      return false;
    }
    if (static_cast<uint32_t>(got) >= n) return true;
    for (uint32_t i = static_cast<uint32_t>(got); i + 1 < n; i++) s.msrs.entries[i] = s.msrs.entries[i + 1];
    n--;
  }
}

// Whether the guest runs guests of its own (VMX operation, SVM guest mode, or its global
// interrupt flag cleared): that state lives where no KVM_GET_* above reads (KVM_GET_NESTED_STATE),
// so such a vCPU is refused rather than restarted without it.
bool runs_nested_guests(int vm_fd, int vcpu_fd) {
  if (kvm(vm_fd, KVM_CHECK_EXTENSION, reinterpret_cast<void*>(KVM_CAP_NESTED_STATE)) <= 0) return false;
  struct {
    uint16_t flags, format;
    uint32_t size;
    uint64_t vmxon_pa;  // the header's first field when format is VMX
    uint8_t rest[112];
  } header{};
  static_assert(sizeof header == 128, "struct kvm_nested_state's header, as C lays it out");
  header.size = sizeof header;
  long r = kvm(vcpu_fd, kvm_c::kGetNestedState, &header);
  if (r == -E2BIG) return true;  // more than the header: a VMCS or VMCB of the guest's own
  if (r != 0) return false;      // no nested support in this kernel: nothing to lose
  if (header.format == KVM_STATE_NESTED_FORMAT_VMX) return header.vmxon_pa != ~0ull;
  return (header.flags & KVM_STATE_NESTED_GUEST_MODE) || !(header.flags & KVM_STATE_NESTED_GIF_SET);
}

bool save_vcpu(const FdProbe& probe, const KvmVcpuBuild& v, FdDataList& data, StasisKvmVcpuState& s, LogLine& error) {
  s.magic = STASIS_KVM_VCPU_MAGIC;
  s.vm_fd = v.vm_fd;
  s.vcpu_id = v.id;
  s.wiring = v.wiring;
  const KvmVmBuild* vm = kvm_vm_built_at(v.vm_fd);
  if (!vm || !descriptor_link_starts(v.vm_fd, "anon_inode:kvm-vm")) {  // rebuilt with its VM, so that must be open too
    refuse(error, probe, "a KVM vCPU") << "its VM (descriptor " << v.vm_fd << ") is no longer open; not checkpointing";
    return false;
  }
  long kvm_dev = STASIS_SYS3(SYS_open, "/dev/kvm", O_RDWR | O_CLOEXEC, 0);
  if (kvm_dev < 0) {
    refuse(error, probe, "a KVM vCPU") << "/dev/kvm cannot be opened (errno " << -kvm_dev << "); not checkpointing";
    return false;
  }
  long run_bytes = kvm(static_cast<int>(kvm_dev), KVM_GET_VCPU_MMAP_SIZE);
  long xsave_bytes = kvm(v.vm_fd, KVM_CHECK_EXTENSION, reinterpret_cast<void*>(KVM_CAP_XSAVE2));
  bool ok = true;
  if (run_bytes <= 0 || run_bytes > STASIS_KVM_MAX_RUN_BYTES) {
    refuse(error, probe, "a KVM vCPU") << "its kvm_run area is " << run_bytes << " bytes; not checkpointing";
    ok = false;
  } else if (xsave_bytes > static_cast<long>(sizeof s.xsave)) {
    refuse(error, probe, "a KVM vCPU") << "its XSAVE state is " << xsave_bytes
                                      << " bytes (AMX?), more than the 4096 Stasis saves; not checkpointing";
    ok = false;
  }
  s.run_bytes = static_cast<uint32_t>(run_bytes);
  if (ok && runs_nested_guests(v.vm_fd, probe.fd)) {
    refuse(error, probe, "a KVM vCPU") << "its guest runs guests of its own (nested virtualisation: "
                                          "KVM_GET_NESTED_STATE), which Stasis does not save; not checkpointing";
    ok = false;
  }
  ok = ok && find_run_mappings(probe, data, s, error) && finish_pending_exit(probe, s, error);
  // Firecracker's order: MP state first (reading it may deliver LAPIC events), events last.
  const char* failed = nullptr;
  long failure = 0;
  auto get = [&](unsigned long request, void* into, const char* name) {
    if (!failed && (failure = kvm(probe.fd, request, into)) < 0) failed = name;
  };
  if (ok) {
    get(KVM_GET_MP_STATE, &s.mp_state, "KVM_GET_MP_STATE");
    get(KVM_GET_REGS, &s.regs, "KVM_GET_REGS");
    get(KVM_GET_SREGS, &s.sregs, "KVM_GET_SREGS");
    // XSAVE where KVM offers it (the legacy FPU area alone would lose the AVX registers).
    s.have_xsave = kvm(v.vm_fd, KVM_CHECK_EXTENSION, reinterpret_cast<void*>(KVM_CAP_XSAVE)) > 0;
    if (s.have_xsave) get(kvm_c::kGetXsave, s.xsave, "KVM_GET_XSAVE");
    else get(KVM_GET_FPU, &s.fpu, "KVM_GET_FPU");
    s.have_xcrs = kvm(probe.fd, KVM_GET_XCRS, &s.xcrs) == 0;
    get(KVM_GET_DEBUGREGS, &s.debugregs, "KVM_GET_DEBUGREGS");
    if (vm->built.irqchip || vm->built.wiring.split_irqchip) get(KVM_GET_LAPIC, &s.lapic, "KVM_GET_LAPIC");
    long khz = kvm(probe.fd, KVM_GET_TSC_KHZ);
    s.tsc_khz = khz > 0 ? static_cast<uint32_t>(khz) : 0;
    s.cpuid.nent = STASIS_KVM_MAX_CPUID;
    if (kvm(probe.fd, kvm_c::kGetCpuid2, &s.cpuid) != 0) {  // none set: the kernel's default again
      s.cpuid.nent = 0;
      if (v.cpuid_set) get(kvm_c::kGetCpuid2, &s.cpuid, "KVM_GET_CPUID2");
    }
    if (!failed) ok = save_msrs(static_cast<int>(kvm_dev), probe, data, s, error);
    if (ok) get(KVM_GET_VCPU_EVENTS, &s.events, "KVM_GET_VCPU_EVENTS");
  }
  STASIS_SYS1(SYS_close, kvm_dev);
  if (failed) refuse(error, probe, "a KVM vCPU") << failed << " failed (errno " << -failure << "); not checkpointing";
  return ok && !failed;
}

// Keeps `state` (the arena's) as the descriptor's FD_DATA.
template <typename State>
State* new_state(FdDataList& data, LogLine& error) {
  auto* state = static_cast<State*>(data.arena().alloc(sizeof(State)));
  if (state) __builtin_memset(static_cast<void*>(state), 0, sizeof(State));
  else error << "not enough checkpoint scratch memory for a KVM state; not checkpointing";
  return state;
}

int keep_state(FdDataList& data, int fd, uint32_t tag, const void* state, uint64_t size, LogLine& error) {
  if (data.add_ref(fd, tag, state, size)) return 1;
  error << "descriptor " << fd << ": too many descriptor states for the checkpoint's list; not checkpointing";
  return -1;
}
}  // namespace

int capture_kvm_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error) {
  const char* what = kvm_object(probe);
  if (!what) return 0;
  if (const char* call = kvm_unsupported_call()) {
    refuse(error, probe, what) << "the program used " << call
                               << ", which Stasis cannot restore for a KVM virtual machine; not checkpointing "
                                  "(a QEMU guest under TCG, -accel tcg, can be checkpointed)";
    return -1;
  }
  if (str_eq(what, "the KVM device")) {  // nothing in it: reopened by path, as a plain device
    r.kind = STASIS_FD_CHARDEV;
    return 1;
  }
  const KvmVmBuild* vm = str_starts(probe.link, "anon_inode:kvm-vm") ? kvm_vm_built_at(probe.fd) : nullptr;
  const KvmVcpuBuild* vcpu = str_starts(probe.link, "anon_inode:kvm-vcpu") ? kvm_vcpu_built_at(probe.fd) : nullptr;
  if (!vm && !vcpu) {
    refuse(error, probe, what) << "Stasis did not see the program make it through ioctl() (a KVM VM it cannot "
                                  "rebuild); not checkpointing";
    return -1;
  }
  if (vm) {
    auto* state = new_state<StasisKvmVmState>(data, error);
    if (!state || !save_vm(probe, *vm, *state, error)) return -1;
    r.kind = STASIS_FD_KVM_VM;
    set_kind_data(r, StasisKvmData{static_cast<uint64_t>(probe.fd), 0});
    return keep_state(data, probe.fd, STASIS_FD_DATA_KVM_VM_STATE, state, sizeof *state, error);
  }
  auto* state = new_state<StasisKvmVcpuState>(data, error);
  if (!state || !save_vcpu(probe, *vcpu, data, *state, error)) return -1;
  r.kind = STASIS_FD_KVM_VCPU;
  set_kind_data(r, StasisKvmData{static_cast<uint64_t>(vcpu->vm_fd), vcpu->id});
  return keep_state(data, probe.fd, STASIS_FD_DATA_KVM_VCPU_STATE, state, sizeof *state, error);
}

bool claim_kvm_run_mapping(const Mapping& m, StasisRegionRecord* r) {
  if (!m.shared || !str_starts(m.path, "anon_inode:kvm-vcpu")) return false;
  if (r) r->kind = STASIS_REGION_KVM_RUN;
  return true;
}

}  // namespace stasis::rt
