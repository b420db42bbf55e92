// KVM at restart, in the restarted process (its runtime, before the program's threads run): a VM
// belongs to the memory of the process that makes it, so it is made here, where the loader has
// put the guest's memory back. `stasis restart` left a memfd with each saved state at the VM's
// and each vCPU's descriptor number (restore_kvm.cc); this builds the VM as the program did
// (construction.h), sets the saved state in Firecracker's order, maps each kvm_run area where
// the program had it, and puts the objects at their numbers. A failure ends the process: a VM
// that is half restored must not run.
#include <sys/mman.h>

#include "plugins/kvm/construction.h"
#include "plugins/kvm/kvm_requests.h"

namespace stasis::rt {
namespace {

class Rebuild {
 public:
  explicit Rebuild(LogLine& error) : error_(error) {}

  // Every VM whose descriptor holds a saved state; false (error says why) when one failed.
  bool run() {
    for (int fd = 0; fd < 1024; fd++) {
      const KvmVmBuild* vm = kvm_vm_built_at(fd);
      if (vm && descriptor_link_starts(fd, "/memfd:stasis-kvm-vm-state") && !rebuild_vm(fd)) return false;
    }
    for (unsigned i = 0; i < kKvmMaxVcpus; i++)  // each vCPU came back with its VM
      if (const KvmVcpuBuild* v = kvm_vcpu_entry(i); v->fd >= 0 && descriptor_link_starts(v->fd, "/memfd:stasis-kvm-vcpu-state")) {
        fail(v->fd, "a saved vCPU whose VM was not rebuilt");
        return false;
      }
    return true;
  }

 private:
  long ioctl(long fd, unsigned long request, const void* arg, const char* name) {
    long r = STASIS_SYS3(SYS_ioctl, fd, request, arg);
    if (r < 0 && ok_) {
      error_ << "restart: KVM descriptor " << current_ << ": " << name << " failed (errno " << -r << ")";
      ok_ = false;
    }
    return r;
  }

  // The saved state at `fd` into fresh memory (unmapped by the caller); nullptr on failure.
  template <typename State>
  State* load(int fd, uint64_t magic) {
    long mem = STASIS_SYS6(SYS_mmap, 0, sizeof(State), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem < 0 && mem > -4096) {
      fail(fd, "no memory to read its saved state");
      return nullptr;
    }
    auto* state = reinterpret_cast<State*>(mem);
    long got = STASIS_SYS4(SYS_pread64, fd, state, sizeof(State), 0);
    if (got != static_cast<long>(sizeof(State)) || state->magic != magic) {
      fail(fd, "its saved state is damaged");
      STASIS_SYS2(SYS_munmap, mem, sizeof(State));
      return nullptr;
    }
    return state;
  }

  void fail(int fd, const char* why) {
    if (ok_) error_ << "restart: KVM descriptor " << fd << ": " << why;
    ok_ = false;
  }

  // The new object `made` takes descriptor `number` (with the placeholder's FD_CLOEXEC).
  bool place(long made, int number) {
    long flags = STASIS_SYS2(SYS_fcntl, number, F_GETFD);
    long r = STASIS_SYS3(SYS_dup3, made, number, (flags > 0 && (flags & FD_CLOEXEC)) ? O_CLOEXEC : 0);
    STASIS_SYS1(SYS_close, made);
    if (r != number) fail(number, "cannot put the new KVM object at its number");
    return ok_;
  }

  bool rebuild_vm(int vm_number) {
    current_ = vm_number;
    auto* s = load<StasisKvmVmState>(vm_number, STASIS_KVM_VM_MAGIC);
    if (!s) return false;
    long dev = STASIS_SYS3(SYS_open, "/dev/kvm", O_RDWR | O_CLOEXEC, 0);
    long vm = dev < 0 ? dev : ioctl(dev, KVM_CREATE_VM, reinterpret_cast<void*>(s->type), "KVM_CREATE_VM");
    if (dev < 0) fail(vm_number, "/dev/kvm cannot be opened");
    const StasisKvmVmWiring& w = s->wiring;
    enable_caps(vm, w.caps, w.cap_count);  // before anything they change (vCPUs, the irqchip)
    if (ok_ && s->have_tss_addr) ioctl(vm, KVM_SET_TSS_ADDR, reinterpret_cast<void*>(s->tss_addr), "KVM_SET_TSS_ADDR");
    if (ok_ && s->have_identity_map_addr) ioctl(vm, KVM_SET_IDENTITY_MAP_ADDR, &s->identity_map_addr, "KVM_SET_IDENTITY_MAP_ADDR");
    if (ok_ && s->irqchip) ioctl(vm, KVM_CREATE_IRQCHIP, nullptr, "KVM_CREATE_IRQCHIP");
    if (ok_ && s->pit) ioctl(vm, KVM_CREATE_PIT2, &s->pit_config, "KVM_CREATE_PIT2");
    if (ok_ && w.msr_filter.set) set_msr_filter(vm, w.msr_filter);
    for (uint32_t i = 0; ok_ && i < s->slot_count && i < STASIS_KVM_MAX_SLOTS; i++)
      ioctl(vm, KVM_SET_USER_MEMORY_REGION, &s->slots[i], "KVM_SET_USER_MEMORY_REGION");
    if (ok_ && w.routing_set) ioctl(vm, kvm_c::kSetGsiRouting, &w.routing, "KVM_SET_GSI_ROUTING");
    for (uint32_t i = 0; ok_ && i < w.coalesced_count && i < STASIS_KVM_MAX_COALESCED; i++)
      ioctl(vm, KVM_REGISTER_COALESCED_MMIO, &w.coalesced[i], "KVM_REGISTER_COALESCED_MMIO");
    for (unsigned i = 0; ok_ && i < kKvmMaxVcpus; i++) {
      const KvmVcpuBuild* v = kvm_vcpu_entry(i);
      if (v->fd >= 0 && v->vm_fd == vm_number && descriptor_link_starts(v->fd, "/memfd:stasis-kvm-vcpu-state"))
        rebuild_vcpu(static_cast<int>(dev), vm, *v, s->irqchip || w.split_irqchip);
    }
    current_ = vm_number;
    // The VM's devices and clock once its vCPUs are back (the clock exactly as saved: no
    // KVM_CLOCK_REALTIME, so the guest sees no time pass while it was saved).
    if (ok_ && s->pit) ioctl(vm, KVM_SET_PIT2, &s->pit_state, "KVM_SET_PIT2");
    s->clock.flags = 0;
    if (ok_) ioctl(vm, KVM_SET_CLOCK, &s->clock, "KVM_SET_CLOCK");
    if (ok_ && s->irqchip) {
      ioctl(vm, KVM_SET_IRQCHIP, &s->pic_master, "KVM_SET_IRQCHIP (PIC master)");
      ioctl(vm, KVM_SET_IRQCHIP, &s->pic_slave, "KVM_SET_IRQCHIP (PIC slave)");
      ioctl(vm, KVM_SET_IRQCHIP, &s->ioapic, "KVM_SET_IRQCHIP (IOAPIC)");
    }
    // The eventfds restored at their numbers, bound again once the irqchip is as saved.
    for (uint32_t i = 0; ok_ && i < w.ioeventfd_count && i < STASIS_KVM_MAX_IOEVENTFDS; i++)
      ioctl(vm, KVM_IOEVENTFD, &w.ioeventfds[i], "KVM_IOEVENTFD");
    for (uint32_t i = 0; ok_ && i < w.irqfd_count && i < STASIS_KVM_MAX_IRQFDS; i++)
      ioctl(vm, KVM_IRQFD, &w.irqfds[i], "KVM_IRQFD");
    if (dev >= 0) STASIS_SYS1(SYS_close, dev);
    STASIS_SYS2(SYS_munmap, s, sizeof *s);
    if (ok_) place(vm, vm_number);
    else if (vm >= 0) STASIS_SYS1(SYS_close, vm);
    return ok_;
  }

  void rebuild_vcpu(int dev, long vm, const KvmVcpuBuild& v, bool irqchip) {
    current_ = v.fd;
    auto* s = load<StasisKvmVcpuState>(v.fd, STASIS_KVM_VCPU_MAGIC);
    if (!s) return;
    long vcpu = ioctl(vm, KVM_CREATE_VCPU, reinterpret_cast<void*>(static_cast<uintptr_t>(s->vcpu_id)), "KVM_CREATE_VCPU");
    long run_bytes = ok_ ? ioctl(dev, KVM_GET_VCPU_MMAP_SIZE, nullptr, "KVM_GET_VCPU_MMAP_SIZE") : 0;
    if (ok_ && run_bytes != s->run_bytes) fail(v.fd, "this kernel's kvm_run area has another size");
    if (ok_ && s->tsc_khz && ioctl(vcpu, KVM_GET_TSC_KHZ, nullptr, "KVM_GET_TSC_KHZ") != s->tsc_khz &&
        STASIS_SYS3(SYS_ioctl, vcpu, KVM_SET_TSC_KHZ, s->tsc_khz) != 0)
      fail(v.fd, "its TSC frequency cannot be set to the saved one on this machine");
    // Firecracker's order: CPUID first (MP state and others depend on it), regs before events
    // (SET_REGS clears pending exceptions), sregs before the LAPIC (the APIC base), the LAPIC
    // before the MSRs (the TSC deadline), events last.
    const StasisKvmVcpuWiring& w = s->wiring;
    enable_caps(vcpu, w.caps, w.cap_count);
    if (ok_ && s->cpuid.nent) ioctl(vcpu, kvm_c::kSetCpuid2, &s->cpuid, "KVM_SET_CPUID2");
    // How the program set the vCPU up (before its MSRs: the MCE banks' count is mcg_cap's).
    if (ok_ && w.have_mce) ioctl(vcpu, KVM_X86_SETUP_MCE, &w.mce_cap, "KVM_X86_SETUP_MCE");
    if (ok_ && w.have_signal_mask) {
      struct {
        uint32_t len;
        uint64_t sigset;
      } __attribute__((packed)) mask = {8, kvm_run_mask_without_checkpoint_signal(w.signal_mask)};
      ioctl(vcpu, kvm_c::kSetSignalMask, &mask, "KVM_SET_SIGNAL_MASK");
    }
    if (ok_ && w.have_tpr_access) ioctl(vcpu, KVM_TPR_ACCESS_REPORTING, &w.tpr_access, "KVM_TPR_ACCESS_REPORTING");
    if (ok_ && w.have_vapic) ioctl(vcpu, KVM_SET_VAPIC_ADDR, &w.vapic, "KVM_SET_VAPIC_ADDR");
    if (ok_) ioctl(vcpu, KVM_SET_MP_STATE, &s->mp_state, "KVM_SET_MP_STATE");
    if (ok_) ioctl(vcpu, KVM_SET_REGS, &s->regs, "KVM_SET_REGS");
    if (ok_) ioctl(vcpu, KVM_SET_SREGS, &s->sregs, "KVM_SET_SREGS");
    if (ok_ && s->pending_read) take_pending_read_again(vcpu, *s);
    if (ok_ && s->have_xsave) ioctl(vcpu, kvm_c::kSetXsave, s->xsave, "KVM_SET_XSAVE");
    if (ok_ && !s->have_xsave) ioctl(vcpu, KVM_SET_FPU, &s->fpu, "KVM_SET_FPU");
    if (ok_ && s->have_xcrs) ioctl(vcpu, KVM_SET_XCRS, &s->xcrs, "KVM_SET_XCRS");
    if (ok_) ioctl(vcpu, KVM_SET_DEBUGREGS, &s->debugregs, "KVM_SET_DEBUGREGS");
    if (ok_ && irqchip) ioctl(vcpu, KVM_SET_LAPIC, &s->lapic, "KVM_SET_LAPIC");
    if (ok_) set_msrs(vcpu, s->msrs, v.fd);
    if (ok_) ioctl(vcpu, KVM_SET_VCPU_EVENTS, &s->events, "KVM_SET_VCPU_EVENTS");
    map_run_areas(vcpu, *s);
    STASIS_SYS2(SYS_munmap, s, sizeof *s);
    if (ok_) place(vcpu, v.fd);
    else if (vcpu >= 0) STASIS_SYS1(SYS_close, vcpu);
  }

  template <unsigned N>
  void enable_caps(long fd, const kvm_enable_cap (&caps)[N], uint32_t count) {
    for (uint32_t i = 0; ok_ && i < count && i < N; i++)
      if (long r = STASIS_SYS3(SYS_ioctl, fd, KVM_ENABLE_CAP, &caps[i]); r != 0) {
        error_ << "restart: KVM descriptor " << current_ << ": KVM_ENABLE_CAP of capability " << caps[i].cap
               << " failed (errno " << -r << ")";
        ok_ = false;
      }
  }

  // The filter with its ranges' bitmaps pointing at the saved copies.
  void set_msr_filter(long vm, const StasisKvmMsrFilter& saved) {
    kvm_msr_filter filter{};
    filter.flags = saved.flags;
    for (unsigned i = 0; i < KVM_MSR_FILTER_MAX_RANGES; i++)
      filter.ranges[i] = {saved.ranges[i].flags, saved.ranges[i].nmsrs, saved.ranges[i].base,
                          const_cast<uint8_t*>(saved.bitmaps[i])};
    ioctl(vm, KVM_X86_SET_MSR_FILTER, &filter, "KVM_X86_SET_MSR_FILTER");
  }

  // Every saved MSR. One the new vCPU refuses (a paravirtual MSR of a feature the guest's CPUID
  // does not offer: KVM reads it but will not set it) is left out when the vCPU already holds the
  // saved value; any other refusal fails the restart.
  void set_msrs(long vcpu, StasisKvmMsrs& msrs, int number) {
    for (uint32_t first = 0; ok_ && first < msrs.nmsrs;) {
      for (uint32_t i = first; i < msrs.nmsrs; i++) msrs.entries[i - first] = msrs.entries[i];  // the rest
      msrs.nmsrs -= first;
      long set = ioctl(vcpu, kvm_c::kSetMsrs, &msrs, "KVM_SET_MSRS");
      if (!ok_ || set >= static_cast<long>(msrs.nmsrs)) return;
      struct {
        uint32_t nmsrs, pad;
        kvm_msr_entry entry;
      } one = {1, 0, {msrs.entries[set].index, 0, 0}};
      if (STASIS_SYS3(SYS_ioctl, vcpu, kvm_c::kGetMsrs, &one) != 1 || one.entry.data != msrs.entries[set].data) {
        error_ << "restart: KVM descriptor " << number << ": KVM_SET_MSRS refused MSR ";
        error_.hex(msrs.entries[set].index) << " = ";
        error_.hex(msrs.entries[set].data);
        ok_ = false;
        return;
      }
      first = static_cast<uint32_t>(set) + 1;
    }
  }

  // The vCPU was stopped in a read exit its monitor had not answered yet (kvm.cc). The new vCPU,
  // its registers and memory as saved (RIP on the read) and nothing pending yet (its LAPIC,
  // events and the VM's irqchip are set after this), runs into the same exit; the program's next
  // KVM_RUN then completes it with the answer it writes into kvm_run, as it would have. Any other
  // exit means the guest did something else: the restart ends.
  void take_pending_read_again(long vcpu, const StasisKvmVcpuState& s) {
    long area = STASIS_SYS6(SYS_mmap, 0, s.run_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
    if (area < 0 && area > -4096) {
      fail(current_, "its kvm_run area cannot be mapped");
      return;
    }
    const auto* now = reinterpret_cast<const kvm_run*>(area);
    const auto* saved = reinterpret_cast<const kvm_run*>(s.run);
    long r = -EINTR;
    for (int tries = 0; r == -EINTR && tries < 100; tries++) r = STASIS_SYS3(SYS_ioctl, vcpu, KVM_RUN, 0);
    bool same = r == 0 && now->exit_reason == saved->exit_reason;
    if (same && saved->exit_reason == KVM_EXIT_IO)
      same = now->io.direction == saved->io.direction && now->io.port == saved->io.port &&
             now->io.size == saved->io.size && now->io.count == saved->io.count &&
             now->io.data_offset == saved->io.data_offset;
    else if (same)
      same = now->mmio.phys_addr == saved->mmio.phys_addr && now->mmio.len == saved->mmio.len && !now->mmio.is_write;
    if (!same && ok_) {
      error_ << "restart: KVM descriptor " << current_ << ": running into the guest read it was stopped in gave "
             << (r == 0 ? "exit " : "error ") << (r == 0 ? static_cast<long>(now->exit_reason) : -r)
             << " instead of exit " << saved->exit_reason;
      ok_ = false;
    }
    STASIS_SYS2(SYS_munmap, area, s.run_bytes);
  }

  // The kvm_run area where the program had it (the loader reserved the range), with the bytes
  // it last saw there.
  void map_run_areas(long vcpu, const StasisKvmVcpuState& s) {
    for (uint32_t i = 0; ok_ && i < s.mapping_count && i < STASIS_KVM_MAX_RUN_MAPS; i++) {
      const StasisKvmRunMapping& m = s.mappings[i];
      long at = STASIS_SYS6(SYS_mmap, m.addr, m.len, m.prot, MAP_SHARED | MAP_FIXED, vcpu, m.offset);
      if (at != static_cast<long>(m.addr)) fail(current_, "its kvm_run area cannot be mapped where it was");
    }
    if (!ok_) return;
    long area = STASIS_SYS6(SYS_mmap, 0, s.run_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
    if (area < 0 && area > -4096) {
      fail(current_, "its kvm_run area cannot be mapped");
      return;
    }
    __builtin_memcpy(reinterpret_cast<void*>(area), s.run, s.run_bytes);
    STASIS_SYS2(SYS_munmap, area, s.run_bytes);
  }

  LogLine& error_;
  bool ok_ = true;
  int current_ = -1;
};

int on_event(stasis_event_t event, const stasis_event_data_t*, void*) {
  if (event != STASIS_EVENT_RESTART) return 0;
  LogLine error;
  if (Rebuild(error).run()) return 0;
  // A VM that is half back must not run: end the process before any of its threads does.
  error << "; the process ends";
  error.emit_restart_failure();
  STASIS_SYS1(SYS_exit_group, 1);
  return 1;
}

const stasis_plugin_t g_plugin = {STASIS_PLUGIN_API_VERSION, "kvm", on_event, nullptr, nullptr};

__attribute__((constructor)) void register_kvm_plugin() { stasis_register_plugin(&g_plugin); }

}  // namespace
}  // namespace stasis::rt
