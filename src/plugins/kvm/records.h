// The image records of a KVM virtual machine and its vCPUs: kind_data of STASIS_FD_KVM_VM and
// STASIS_FD_KVM_VCPU, and the state each saves as FD_DATA (STASIS_FD_DATA_KVM_VM_STATE,
// STASIS_FD_DATA_KVM_VCPU_STATE). Fixed-size structs of the kernel's own KVM types, so that the
// runtime (no allocation) can fill them in place and hand them to the kernel as they are.
#pragma once
#include <linux/kvm.h>

#include "image/kind_data.h"

#define STASIS_KVM_VM_MAGIC 0x4d56524b53495453ull    /* "STISKRVM" */
#define STASIS_KVM_VCPU_MAGIC 0x5043564b53495453ull  /* "STISKVCP" */
#define STASIS_KVM_MAX_SLOTS 32
#define STASIS_KVM_MAX_CPUID 256
#define STASIS_KVM_MAX_MSRS 512
#define STASIS_KVM_MAX_RUN_BYTES (4 * 4096)  // kvm_run, the port I/O page, the coalesced MMIO ring
#define STASIS_KVM_MAX_RUN_MAPS 4
// How the program wired the VM (construction.cc records each call, recreate.cc makes it again).
#define STASIS_KVM_MAX_CAPS 16          // KVM_ENABLE_CAP on a VM (8 on a vCPU)
#define STASIS_KVM_MAX_VCPU_CAPS 8
#define STASIS_KVM_MAX_ROUTES 128       // KVM_SET_GSI_ROUTING entries
#define STASIS_KVM_MAX_IOEVENTFDS 64
#define STASIS_KVM_MAX_IRQFDS 32
#define STASIS_KVM_MAX_COALESCED 16     // KVM_REGISTER_COALESCED_MMIO zones (MMIO and PIO)
#define STASIS_KVM_MSR_BITMAP_BYTES 256 // of one KVM_X86_SET_MSR_FILTER range (2048 MSRs)

// kind_data of both kinds.
typedef struct StasisKvmData {
  uint64_t vm_fd;    // [0] the VM's descriptor (for a VM: its own number)
  uint64_t vcpu_id;  // [1] a vCPU's id (KVM_CREATE_VCPU's argument); 0 for a VM
} StasisKvmData;
STASIS_KIND_FIELD(StasisKvmData, vm_fd, 0);
STASIS_KIND_FIELD(StasisKvmData, vcpu_id, 1);

// The layouts of struct kvm_cpuid2 and struct kvm_msrs with room for their entries.
typedef struct StasisKvmCpuid {
  uint32_t nent, padding;
  struct kvm_cpuid_entry2 entries[STASIS_KVM_MAX_CPUID];
} StasisKvmCpuid;
typedef struct StasisKvmMsrs {
  uint32_t nmsrs, pad;
  struct kvm_msr_entry entries[STASIS_KVM_MAX_MSRS];
} StasisKvmMsrs;

// struct kvm_irq_routing with room for its entries.
typedef struct StasisKvmRouting {
  uint32_t nr, flags;
  struct kvm_irq_routing_entry entries[STASIS_KVM_MAX_ROUTES];
} StasisKvmRouting;

// KVM_X86_SET_MSR_FILTER's argument with its bitmaps copied (the program's may be gone: QEMU's
// is on its stack).
typedef struct StasisKvmMsrFilter {
  uint32_t set;  // the program set a filter
  uint32_t flags;
  struct {
    uint32_t flags, nmsrs, base, reserved;
  } ranges[KVM_MSR_FILTER_MAX_RANGES];
  uint8_t bitmaps[KVM_MSR_FILTER_MAX_RANGES][STASIS_KVM_MSR_BITMAP_BYTES];
} StasisKvmMsrFilter;

// How the program wired the VM after making it, each as it last stood (the wrapper follows
// deassignments and unregistrations).
typedef struct StasisKvmVmWiring {
  uint32_t cap_count;  // in the order enabled
  uint32_t split_irqchip;  // KVM_CAP_SPLIT_IRQCHIP enabled: LAPICs in the kernel, no PIC/IOAPIC
  uint32_t ioeventfd_count, irqfd_count, coalesced_count, routing_set;
  struct kvm_enable_cap caps[STASIS_KVM_MAX_CAPS];
  struct kvm_ioeventfd ioeventfds[STASIS_KVM_MAX_IOEVENTFDS];
  struct kvm_irqfd irqfds[STASIS_KVM_MAX_IRQFDS];
  struct kvm_coalesced_mmio_zone coalesced[STASIS_KVM_MAX_COALESCED];
  StasisKvmMsrFilter msr_filter;
  StasisKvmRouting routing;  // when routing_set
} StasisKvmVmWiring;

// The same for a vCPU.
typedef struct StasisKvmVcpuWiring {
  uint32_t cap_count;
  uint32_t have_mce, have_signal_mask, have_tpr_access, have_vapic, reserved;
  struct kvm_enable_cap caps[STASIS_KVM_MAX_VCPU_CAPS];
  uint64_t mce_cap;           // KVM_X86_SETUP_MCE
  uint64_t signal_mask;       // KVM_SET_SIGNAL_MASK, as the program gave it (8-byte sigset)
  struct kvm_tpr_access_ctl tpr_access;  // KVM_TPR_ACCESS_REPORTING
  struct kvm_vapic_addr vapic;           // KVM_SET_VAPIC_ADDR
} StasisKvmVcpuWiring;

// How the program built the VM (the runtime's ioctl wrapper saw each call: nothing reads these
// back), then the state the kernel gives back at the checkpoint.
typedef struct StasisKvmVmState {
  uint64_t magic;  // STASIS_KVM_VM_MAGIC
  uint64_t type;   // KVM_CREATE_VM's argument
  uint64_t tss_addr, identity_map_addr;
  uint32_t have_tss_addr, have_identity_map_addr;
  uint32_t irqchip;  // KVM_CREATE_IRQCHIP was called: PIC, IOAPIC, a LAPIC per vCPU
  uint32_t pit;      // KVM_CREATE_PIT2 was called (with pit_config)
  struct kvm_pit_config pit_config;
  uint32_t slot_count;
  uint32_t reserved;
  struct kvm_userspace_memory_region slots[STASIS_KVM_MAX_SLOTS];
  StasisKvmVmWiring wiring;
  struct kvm_clock_data clock;
  struct kvm_irqchip pic_master, pic_slave, ioapic;  // when irqchip
  struct kvm_pit_state2 pit_state;                   // when pit
} StasisKvmVmState;

// One mapping of the vCPU descriptor (its kvm_run area) in the program's memory.
typedef struct StasisKvmRunMapping {
  uint64_t addr, len, offset;
  uint32_t prot, reserved;
} StasisKvmRunMapping;

// A vCPU, in the order Firecracker saves it (mp_state first: reading it may change the LAPIC).
typedef struct StasisKvmVcpuState {
  uint64_t magic;  // STASIS_KVM_VCPU_MAGIC
  int32_t vm_fd;
  uint32_t vcpu_id;
  uint32_t run_bytes;  // KVM_GET_VCPU_MMAP_SIZE
  uint32_t mapping_count;
  StasisKvmRunMapping mappings[STASIS_KVM_MAX_RUN_MAPS];
  uint32_t tsc_khz;  // 0: the kernel did not say
  uint32_t have_xcrs;
  uint32_t have_xsave;  // 0: KVM offers no XSAVE (KVM_CAP_XSAVE): `fpu` holds the FPU/SSE state
  // 1: stopped while its monitor answered a guest read (a port IN or an MMIO read, its RIP still
  // on the instruction): the restart runs the new vCPU into the same exit, which the monitor's
  // answer then completes.
  uint32_t pending_read;
  StasisKvmVcpuWiring wiring;  // as the program made it (construction.cc)
  struct kvm_fpu fpu;
  struct kvm_mp_state mp_state;
  struct kvm_regs regs;
  struct kvm_sregs sregs;
  uint8_t xsave[4096];  // struct kvm_xsave (KVM_GET_XSAVE: the legacy 4 KiB area; a larger one is refused)
  struct kvm_xcrs xcrs;
  struct kvm_debugregs debugregs;
  struct kvm_lapic_state lapic;  // when the VM has an in-kernel irqchip
  struct kvm_vcpu_events events;
  StasisKvmCpuid cpuid;
  StasisKvmMsrs msrs;
  // The kvm_run area as the program last saw it (the exit it may be handling), written back.
  uint8_t run[STASIS_KVM_MAX_RUN_BYTES];
} StasisKvmVcpuState;
