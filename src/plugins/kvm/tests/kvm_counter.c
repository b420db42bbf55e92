// A small virtual machine monitor on /dev/kvm, for the KVM kind's checkpoint-kill-restart tests:
// one vCPU in 32-bit protected mode (flat segments set through KVM_SET_SREGS) runs guest code
// that counts, keeps a running hash of the counter (hash = hash * 31 + counter) and reports both
// through port I/O exits; this monitor prints "step N hash H" for each, and "done ..." when the
// guest halts after the last step. The output depends only on the guest's state, so a restart
// that loses or repeats a step, or brings back a wrong register, shows in the output.
//
// With "timer", the VM has KVM's in-kernel irqchip and the guest first programs its LAPIC timer
// (periodic, 20 ms) and then halts before each step: a step needs a timer interrupt, so a
// restart that loses the timer leaves the guest halted for good.
//
// With "2vcpus", a second vCPU (its own thread) runs the same guest code on its own counter and
// hash (seeded differently) at the same pace; its lines are not printed (their order against
// vCPU 0's would vary) but its final step and hash are, once both halted.
//
// With "irqfd", the guest's interrupts come from the monitor through KVM's wiring, which a restart
// must make again: a thread of the monitor writes an eventfd every 20 ms, which KVM_IRQFD binds
// to GSI 24, which KVM_SET_GSI_ROUTING routes as an MSI to the guest's LAPIC (vector 0x40). Each
// step also rings a doorbell (an OUT to a port KVM_IOEVENTFD binds to a second eventfd: no exit)
// and writes its hash to a port registered as coalesced PIO (KVM_REGISTER_COALESCED_MMIO: no exit,
// the write waits in the ring page of the kvm_run area, which the monitor drains and checks at the
// next exit). The vCPU runs under a KVM_SET_SIGNAL_MASK that blocks every signal, and the VM
// has KVM_CAP_HALT_POLL enabled (KVM_ENABLE_CAP). A restart that loses the irqfd or the routing
// leaves the guest halted; one that loses the ioeventfd or the coalesced zone makes the OUT exit
// to the monitor, which stops ("unexpected port access"). The monitor prints the doorbell
// eventfd's count at the end.
//
// With "reads", each step of the first guest also reads a port (a port IN exit) and adds the value
// to its hash; the monitor answers with a value of its own sequence, and paces the steps while
// it answers (half before writing the answer, half after), so a checkpoint mostly stops it in
// the middle of a read. The monitor checks that every step is one read, then the counter, then
// the hash: a read the guest makes twice after a restart, or never, stops it.
//
// With "refused", the timer guest runs, and the monitor also calls KVM_SET_GUEST_DEBUG, which
// Stasis does not restore: its checkpoint must be refused, naming the call.
//
// With "pit", the guest of "timer" is driven by the in-kernel PIT through the PIC instead.
//
// With "long GUEST" ("long2 GUEST": two vCPUs), the guest is the image GUEST (long_guest.S, built
// by tests.cmake), loaded at CODE_GPA: it enters 64-bit long mode, runs a kernel and a user mode
// and its LAPIC timer (in-kernel irqchip), and reports each step as the others do; vCPU i starts
// with ebp = i. Its kernel reports a fault (an unexpected exception, a lost MSR) on PORT_FAULT.
//
// usage: kvm_counter STEPS [PACE_MS [timer|pit|2vcpus|irqfd|reads|refused|long GUEST|long2 GUEST]]
// (exit 77: no /dev/kvm this user can open)
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define GUEST_RAM (2u << 20)
#define CODE_GPA 0x1000u
#define PORT_COUNTER 0x10
#define PORT_HASH 0x11
#define PORT_DONE 0x12
#define PORT_DOORBELL 0x13   // "irqfd": bound to an eventfd (KVM_IOEVENTFD)
#define PORT_COALESCED 0x14  // "irqfd": coalesced PIO
#define IRQFD_GSI 24
#define PORT_INPUT 0x15      // "reads": the guest reads its input here
#define PORT_FAULT 0x16      // "long": the guest's kernel met an exception or a lost MSR
#define IDT_GPA 0x500u  // 256 gates
#define GDT_GPA 0xd00u  // null, code 0x08, data 0x10: what interrupts and iret load
#define HANDLER_GPA 0x1100u

static void die(const char* what) {
  fprintf(stderr, "kvm_counter: %s: %s\n", what, strerror(errno));
  exit(1);
}

// One step of both guests (6 bytes): inc esi; imul edi, edi, 31; add edi, esi.
#define STEP_COUNT_AND_HASH 0x46, 0x6b, 0xff, 0x1f, 0x01, 0xf7
// Its report (16 bytes): mov eax, esi; mov dx, PORT_COUNTER; out dx, eax; mov eax, edi;
// mov dx, PORT_HASH; out dx, eax; then cmp esi, ebx (the last step?).
#define STEP_REPORT 0x89, 0xf0, 0x66, 0xba, PORT_COUNTER, 0x00, 0xef, 0x89, 0xf8, 0x66, 0xba, PORT_HASH, 0x00, \
                    0xef, 0x39, 0xde

// The guest: esi = counter, edi = hash, ebx = the last step (set through KVM_SET_REGS).
static const uint8_t kGuest[] = {
    STEP_COUNT_AND_HASH,           // loop:
    0xb9, 0x10, 0x00, 0x00, 0x00,  //   mov ecx, 16 (some guest work between reports; this nested KVM is slow)
    0x49,                          // spin: dec ecx
    0x75, 0xfd,                    //   jnz spin
    STEP_REPORT,
    0x75, 0xe0,                    //   jne loop
    0xf4,                          //   hlt
};

// The "reads" guest: the first guest with a read of PORT_INPUT added to each step's hash.
static const uint8_t kReadGuest[] = {
    STEP_COUNT_AND_HASH,           // loop:
    0x66, 0xba, PORT_INPUT, 0x00,  //   mov dx, PORT_INPUT
    0xed,                          //   in eax, dx
    0x01, 0xc7,                    //   add edi, eax
    STEP_REPORT,
    0x75, 0xe1,                    //   jne loop
    0xf4,                          //   hlt
};

// The "reads" guest's input for the read before step `step` (Knuth's multiplicative hash).
static uint32_t input_for(uint32_t step) { return step * 2654435761u; }

// The timer guest: the LAPIC (at 0xfee00000) enabled, its timer periodic at vector 0x40 every
// 20,000,000 bus cycles (KVM's APIC bus: 1 ns each), then it halts; each tick's handler makes
// one step. The handler never returns (it resets the stack and halts again): KVM's instruction
// emulator, which runs this guest on this nested machine, has no protected-mode iret.
static const uint8_t kTimerGuest[] = {
    0xc7, 0x05, 0xf0, 0x00, 0xe0, 0xfe, 0xff, 0x01, 0x00, 0x00,  // mov [SVR], 0x1ff: enabled
    0xc7, 0x05, 0xe0, 0x03, 0xe0, 0xfe, 0x0b, 0x00, 0x00, 0x00,  // mov [divide], 0xb: by 1
    0xc7, 0x05, 0x20, 0x03, 0xe0, 0xfe, 0x40, 0x00, 0x02, 0x00,  // mov [LVT timer], periodic | 0x40
    0xc7, 0x05, 0x80, 0x03, 0xe0, 0xfe, 0x00, 0x2d, 0x31, 0x01,  // mov [initial count], 20000000
    0xfb,                          // sti
    0xf4,                          // idle: hlt (until the next tick)
    0xeb, 0xfd,                    //   jmp idle
};
// The PIT guest: the in-kernel PIC initialised (IRQ 0 at vector 0x20, every other line masked),
// the PIT's channel 0 a rate generator every 23864 ticks of 1.193182 MHz (20 ms); then it halts.
static const uint8_t kPitGuest[] = {
    0xb0, 0x11, 0xe6, 0x20,  // ICW1: edge, cascade, ICW4 follows
    0xb0, 0x20, 0xe6, 0x21,  // ICW2: vectors from 0x20
    0xb0, 0x04, 0xe6, 0x21,  // ICW3: the slave on line 2
    0xb0, 0x01, 0xe6, 0x21,  // ICW4: 8086 mode
    0xb0, 0xfe, 0xe6, 0x21,  // OCW1: only IRQ 0
    0xb0, 0x34, 0xe6, 0x43,  // PIT: channel 0, lobyte/hibyte, mode 2
    0xb0, 0x38, 0xe6, 0x40,  //   divisor 0x5d38 (23864), low byte
    0xb0, 0x5d, 0xe6, 0x40,  //   high byte
    0xfb,                    // sti
    0xf4,                    // idle: hlt (until the next tick)
    0xeb, 0xfd,              //   jmp idle
};

// A handler's end, after its report: the last step reports PORT_DONE and stops; any other waits
// for the next interrupt (16 bytes): je done; sti; wait: hlt; jmp wait; 3 nops;
// done: mov dx, PORT_DONE; out dx, eax; jmp $.
#define HANDLER_END 0x74, 0x07, 0xfb, 0xf4, 0xeb, 0xfd, 0x90, 0x90, 0x90, 0x66, 0xba, PORT_DONE, 0x00, 0xef, 0xeb, 0xfe

// Every vector's handler: end of interrupt (to the LAPIC and the PIC: whichever delivered it),
// then one step.
static const uint8_t kTimerHandler[] = {
    0xc7, 0x05, 0xb0, 0x00, 0xe0, 0xfe, 0x00, 0x00, 0x00, 0x00,  // mov [EOI], 0 (LAPIC)
    0xb0, 0x20, 0xe6, 0x20,                                      // mov al, 0x20; out 0x20, al (PIC)
    0xbc, 0x00, 0x00, 0x10, 0x00,  //   mov esp, 0x100000 (drop the interrupt's frame)
    STEP_COUNT_AND_HASH,
    STEP_REPORT,
    HANDLER_END,
};

// The "irqfd" guest: its LAPIC enabled (software), then it halts; the monitor's MSIs wake it.
static const uint8_t kWiredGuest[] = {
    0xc7, 0x05, 0xf0, 0x00, 0xe0, 0xfe, 0xff, 0x01, 0x00, 0x00,  // mov [SVR], 0x1ff: enabled
    0xfb,                          // sti
    0xf4,                          // idle: hlt (until the next MSI)
    0xeb, 0xfd,                    //   jmp idle
};
// Its handler: end of interrupt, one step, the doorbell, the hash to the coalesced port, then the
// step's report (exits) as the timer guest's.
static const uint8_t kWiredHandler[] = {
    0xc7, 0x05, 0xb0, 0x00, 0xe0, 0xfe, 0x00, 0x00, 0x00, 0x00,  // mov [EOI], 0 (LAPIC)
    0xbc, 0x00, 0x00, 0x10, 0x00,  //   mov esp, 0x100000 (drop the interrupt's frame)
    STEP_COUNT_AND_HASH,
    0x66, 0xba, PORT_DOORBELL, 0x00, 0xef,               // mov dx, PORT_DOORBELL; out dx, eax
    0x89, 0xf8, 0x66, 0xba, PORT_COALESCED, 0x00, 0xef,  // mov eax, edi; mov dx, PORT_COALESCED; out dx, eax
    STEP_REPORT,
    HANDLER_END,
};

// The "long" guest's image, up to `max` bytes (its per-vCPU areas follow).
#define LONG_GUEST_MAX (0x80000u - CODE_GPA)
static void load_image(const char* path, uint8_t* at, size_t max) {
  FILE* f = fopen(path, "rb");
  if (!f) die(path);
  size_t got = fread(at, 1, max, f);
  if (got == 0 || !feof(f)) {
    fprintf(stderr, "kvm_counter: %s: %s\n", path, got == 0 ? "empty or unreadable" : "larger than the guest's room");
    exit(1);
  }
  fclose(f);
}

static void flat_segment(struct kvm_segment* s, uint16_t selector, uint8_t type) {
  memset(s, 0, sizeof *s);
  s->base = 0;
  s->limit = 0xffffffff;
  s->selector = selector;
  s->type = type;
  s->present = 1;
  s->db = 1;
  s->s = 1;
  s->g = 1;
}

static void pace(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {}
}

struct vcpu {
  int fd;
  uint8_t* ram;  // the guest's memory (a fault's report reads its stack)
  struct kvm_run* run;
  int print;  // vCPU 0 prints its steps
  int reads;  // "reads": the guest reads PORT_INPUT each step
  struct kvm_coalesced_mmio_ring* ring;  // "irqfd": the coalesced writes, drained at each hash
  long pace_ms;
  uint32_t final_steps, final_hash;
};

static void finish(struct vcpu* v) {
  struct kvm_regs regs;
  if (ioctl(v->fd, KVM_GET_REGS, &regs) < 0) die("KVM_GET_REGS");
  v->final_steps = (uint32_t)regs.rsi;
  v->final_hash = (uint32_t)regs.rdi;
}

// The coalesced ring holds exactly this step's write of its hash to PORT_COALESCED (made just
// before the report): a zone lost at restart would have made that OUT exit instead.
static void drain_coalesced(struct kvm_coalesced_mmio_ring* ring, uint32_t hash) {
  // KVM_COALESCED_MMIO_MAX, which needs the kernel's PAGE_SIZE: the entries of one 4 KiB page.
  const uint32_t kRingEntries = (4096 - sizeof *ring) / sizeof(struct kvm_coalesced_mmio);
  unsigned entries = 0;
  while (ring->first != ring->last) {
    struct kvm_coalesced_mmio* e = &ring->coalesced_mmio[ring->first];
    uint32_t data;
    memcpy(&data, e->data, sizeof data);
    if (e->phys_addr != PORT_COALESCED || !e->pio || e->len != 4 || data != hash) {
      fprintf(stderr, "kvm_counter: coalesced ring entry port %#llx len %u value %08x, expected the hash %08x\n",
              (unsigned long long)e->phys_addr, e->len, data, hash);
      exit(1);
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    ring->first = (ring->first + 1) % kRingEntries;
    entries++;
  }
  if (entries != 1) {
    fprintf(stderr, "kvm_counter: %u coalesced writes before the hash %08x, expected 1\n", entries, hash);
    exit(1);
  }
}

// "irqfd": one interrupt every 20 ms, through the eventfd KVM_IRQFD bound.
static void* ring_irq(void* arg) {
  int fd = *(int*)arg;
  for (;;) {
    uint64_t one = 1;
    if (write(fd, &one, sizeof one) != sizeof one) die("write the irqfd's eventfd");
    pace(20);
  }
  return NULL;
}

// The "long" guest's kernel stopped: its stack holds the exception's frame (an error code first
// for some vectors) or, from a failed check, the return address.
static void report_fault(struct vcpu* v) {
  struct kvm_regs regs;
  if (ioctl(v->fd, KVM_GET_REGS, &regs) < 0) die("KVM_GET_REGS");
  fprintf(stderr, "kvm_counter: the guest's kernel stopped on a fault at rip %#llx; its stack at %#llx:",
          (unsigned long long)regs.rip, (unsigned long long)regs.rsp);
  for (uint64_t at = regs.rsp; at < regs.rsp + 48 && at + 8 <= GUEST_RAM; at += 8) {
    uint64_t word;
    memcpy(&word, v->ram + at, sizeof word);
    fprintf(stderr, " %#llx", (unsigned long long)word);
  }
  fprintf(stderr, "\n");
  exit(1);
}

// Runs one vCPU until its guest halts (or reports PORT_DONE).
static void* run_vcpu(void* arg) {
  struct vcpu* v = arg;
  struct kvm_run* run = v->run;
  // Each step is one OUT of the counter, then one of the hash: the monitor checks that order, so
  // an OUT the guest makes twice (an exit a restart did not finish) or never stops it here, even
  // where the output would hide it (a line printed again just after a checkpoint looks legal).
  uint32_t counter = 0, last = 0;
  int have_counter = 0, have_input = 0;
  for (;;) {
    if (ioctl(v->fd, KVM_RUN, 0) < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;  // a signal (a checkpoint) came
      die("KVM_RUN");
    }
    switch (run->exit_reason) {
      case KVM_EXIT_IO: {
        if (v->reads && run->io.direction == KVM_EXIT_IO_IN && run->io.port == PORT_INPUT && run->io.size == 4 &&
            run->io.count == 1) {
          if (have_input || have_counter) {
            fprintf(stderr, "kvm_counter: the guest read its input twice for step %u\n", last + 1);
            exit(1);
          }
          pace(v->pace_ms / 2);  // a checkpoint mostly finds the read unanswered, or answered and not run
          uint32_t input = input_for(last + 1);
          memcpy((uint8_t*)run + run->io.data_offset, &input, sizeof input);
          pace(v->pace_ms - v->pace_ms / 2);
          have_input = 1;
          break;
        }
        if (run->io.direction != KVM_EXIT_IO_OUT || run->io.size != 4) {
          fprintf(stderr, "kvm_counter: unexpected port access to %#x\n", run->io.port);
          exit(1);
        }
        uint32_t value;
        memcpy(&value, (uint8_t*)run + run->io.data_offset, sizeof value);
        if (run->io.port == PORT_COUNTER) {
          if (have_counter || value != last + 1 || have_input != v->reads) {
            fprintf(stderr, "kvm_counter: the guest counted %u after %u%s\n", value, last,
                    have_counter ? " without reporting its hash" : have_input != v->reads ? " without reading its input" : "");
            exit(1);
          }
          counter = value, have_counter = 1;
        } else if (run->io.port == PORT_DONE) {
          finish(v);
          return NULL;
        } else if (run->io.port == PORT_HASH) {
          if (!have_counter) {
            fprintf(stderr, "kvm_counter: the guest reported the hash of step %u twice\n", last);
            exit(1);
          }
          if (v->ring) drain_coalesced(v->ring, value);
          last = counter, have_counter = 0, have_input = 0;
          if (v->print) {
            printf("step %u hash %08x\n", counter, value);
            fflush(stdout);
          }
          if (!v->reads) pace(v->pace_ms);
        } else if (run->io.port == PORT_FAULT) {
          report_fault(v);
        } else {
          fprintf(stderr, "kvm_counter: unexpected port access to %#x\n", run->io.port);
          exit(1);
        }
        break;
      }
      case KVM_EXIT_HLT:
        finish(v);
        return NULL;
      default:
        fprintf(stderr, "kvm_counter: unexpected exit %u\n", run->exit_reason);
        exit(1);
    }
  }
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: kvm_counter STEPS [PACE_MS [timer|pit|2vcpus|irqfd|reads|refused]]\n");
    return 2;
  }
  uint32_t steps = (uint32_t)strtoul(argv[1], NULL, 10);
  long pace_ms = argc > 2 ? strtol(argv[2], NULL, 10) : 20;
  int timer = argc > 3 && strcmp(argv[3], "timer") == 0;
  int vcpu_count = argc > 3 && strcmp(argv[3], "2vcpus") == 0 ? 2 : 1;
  int irqfd = argc > 3 && strcmp(argv[3], "irqfd") == 0;
  int refused = argc > 3 && strcmp(argv[3], "refused") == 0;
  int reads = argc > 3 && strcmp(argv[3], "reads") == 0;
  int pit = argc > 3 && strcmp(argv[3], "pit") == 0;
  int long_mode = argc > 4 && (strcmp(argv[3], "long") == 0 || strcmp(argv[3], "long2") == 0);
  if (long_mode && strcmp(argv[3], "long2") == 0) vcpu_count = 2;
  timer |= irqfd | pit | refused | long_mode;  // the timer guests: with an in-kernel irqchip, HLT no longer exits
  int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
  if (kvm < 0) {
    printf("SKIP: cannot open /dev/kvm: %s\n", strerror(errno));
    return 77;
  }
  if (ioctl(kvm, KVM_GET_API_VERSION, 0) != KVM_API_VERSION) die("KVM_GET_API_VERSION");
  int vm = ioctl(kvm, KVM_CREATE_VM, 0);
  if (vm < 0) die("KVM_CREATE_VM");
  uint8_t* ram = mmap(NULL, GUEST_RAM, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ram == MAP_FAILED) die("mmap guest RAM");
  const uint64_t gdt[3] = {0, 0x00cf9a000000ffffull, 0x00cf92000000ffffull};  // flat 4 GiB
  memcpy(ram + GDT_GPA, gdt, sizeof gdt);
  if (long_mode) {
    load_image(argv[4], ram + CODE_GPA, LONG_GUEST_MAX);
  } else if (timer) {
    if (pit) memcpy(ram + CODE_GPA, kPitGuest, sizeof kPitGuest);
    else if (irqfd) memcpy(ram + CODE_GPA, kWiredGuest, sizeof kWiredGuest);
    else memcpy(ram + CODE_GPA, kTimerGuest, sizeof kTimerGuest);
    if (irqfd) memcpy(ram + HANDLER_GPA, kWiredHandler, sizeof kWiredHandler);
    else memcpy(ram + HANDLER_GPA, kTimerHandler, sizeof kTimerHandler);
    for (int v = 0; v < 256; v++) {  // 32-bit interrupt gates, all to the handler
      uint8_t* gate = ram + IDT_GPA + 8 * v;
      gate[0] = HANDLER_GPA & 0xff, gate[1] = (HANDLER_GPA >> 8) & 0xff;
      gate[2] = 0x08, gate[3] = 0;  // the code segment
      gate[4] = 0, gate[5] = 0x8e;  // present, ring 0, interrupt gate
      gate[6] = 0, gate[7] = 0;
    }
  } else if (reads) {
    memcpy(ram + CODE_GPA, kReadGuest, sizeof kReadGuest);
  } else {
    memcpy(ram + CODE_GPA, kGuest, sizeof kGuest);
  }
  struct kvm_userspace_memory_region slot = {
      .slot = 0, .guest_phys_addr = 0, .memory_size = GUEST_RAM, .userspace_addr = (uint64_t)(uintptr_t)ram};
  if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &slot) < 0) die("KVM_SET_USER_MEMORY_REGION");
  if (ioctl(vm, KVM_SET_TSS_ADDR, 0xfffbd000ul) < 0) die("KVM_SET_TSS_ADDR");
  if (timer && ioctl(vm, KVM_CREATE_IRQCHIP, 0) < 0) die("KVM_CREATE_IRQCHIP");
  struct kvm_pit_config pit_config = {.flags = 0};
  if (pit && ioctl(vm, KVM_CREATE_PIT2, &pit_config) < 0) die("KVM_CREATE_PIT2");
  int irq_fd = -1, doorbell_fd = -1;
  if (irqfd) {
    struct kvm_enable_cap halt_poll = {.cap = KVM_CAP_HALT_POLL, .args = {0}};  // no polling: ns
    if (ioctl(vm, KVM_ENABLE_CAP, &halt_poll) < 0) die("KVM_ENABLE_CAP(KVM_CAP_HALT_POLL)");
    struct {
      struct kvm_irq_routing header;
      struct kvm_irq_routing_entry entries[1];
    } routing = {.header.nr = 1};
    routing.entries[0] = (struct kvm_irq_routing_entry){
        .gsi = IRQFD_GSI, .type = KVM_IRQ_ROUTING_MSI, .u.msi = {.address_lo = 0xfee00000u, .data = 0x40}};
    if (ioctl(vm, KVM_SET_GSI_ROUTING, &routing) < 0) die("KVM_SET_GSI_ROUTING");
    irq_fd = eventfd(0, EFD_CLOEXEC);
    struct kvm_irqfd wire = {.fd = (uint32_t)irq_fd, .gsi = IRQFD_GSI};
    if (irq_fd < 0 || ioctl(vm, KVM_IRQFD, &wire) < 0) die("KVM_IRQFD");
    doorbell_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct kvm_ioeventfd doorbell = {.addr = PORT_DOORBELL, .len = 4, .fd = doorbell_fd, .flags = KVM_IOEVENTFD_FLAG_PIO};
    if (doorbell_fd < 0 || ioctl(vm, KVM_IOEVENTFD, &doorbell) < 0) die("KVM_IOEVENTFD");
    struct kvm_coalesced_mmio_zone zone = {.addr = PORT_COALESCED, .size = 4, .pio = 1};
    if (ioctl(vm, KVM_REGISTER_COALESCED_MMIO, &zone) < 0) die("KVM_REGISTER_COALESCED_MMIO (PIO)");
  }
  // The CPUID KVM supports, as monitors give it (without one, KVM's LAPIC timer has no periodic mode).
  struct {
    struct kvm_cpuid2 header;
    struct kvm_cpuid_entry2 entries[256];
  } cpuid = {.header.nent = 256};
  if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, &cpuid) < 0) die("KVM_GET_SUPPORTED_CPUID");
  int run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
  if (run_size <= 0) die("KVM_GET_VCPU_MMAP_SIZE");

  struct vcpu vcpus[2];
  for (int i = 0; i < vcpu_count; i++) {
    struct vcpu* v = &vcpus[i];
    v->fd = ioctl(vm, KVM_CREATE_VCPU, i);
    if (v->fd < 0) die("KVM_CREATE_VCPU");
    if (ioctl(v->fd, KVM_SET_CPUID2, &cpuid) < 0) die("KVM_SET_CPUID2");
    v->run = mmap(NULL, (size_t)run_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
    if (v->run == MAP_FAILED) die("mmap kvm_run");
    v->print = i == 0;
    v->ram = ram;
    v->ring = NULL;
    v->reads = reads;
    if (irqfd) {
      if (run_size < (KVM_COALESCED_MMIO_PAGE_OFFSET + 1) * 4096) die("the kvm_run area has no coalesced ring");
      v->ring = (struct kvm_coalesced_mmio_ring*)((uint8_t*)v->run + KVM_COALESCED_MMIO_PAGE_OFFSET * 4096);
      struct {
        uint32_t len;
        uint8_t sigset[8];
      } all_blocked = {.len = 8};
      memset(all_blocked.sigset, 0xff, sizeof all_blocked.sigset);
      if (ioctl(v->fd, KVM_SET_SIGNAL_MASK, &all_blocked) < 0) die("KVM_SET_SIGNAL_MASK");
    }
    if (refused) {
      struct kvm_guest_debug none = {.control = 0};
      if (ioctl(v->fd, KVM_SET_GUEST_DEBUG, &none) < 0) die("KVM_SET_GUEST_DEBUG");
    }
    v->pace_ms = pace_ms;
    struct kvm_sregs sregs;
    if (ioctl(v->fd, KVM_GET_SREGS, &sregs) < 0) die("KVM_GET_SREGS");
    flat_segment(&sregs.cs, 0x08, 11);  // code: execute/read, accessed
    flat_segment(&sregs.ds, 0x10, 3);   // data: read/write, accessed
    sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
    sregs.cr0 |= 1;  // protected mode
    sregs.gdt.base = GDT_GPA;
    sregs.gdt.limit = sizeof gdt - 1;
    sregs.idt.base = IDT_GPA;
    sregs.idt.limit = 256 * 8 - 1;
    if (ioctl(v->fd, KVM_SET_SREGS, &sregs) < 0) die("KVM_SET_SREGS");
    struct kvm_regs regs = {.rip = CODE_GPA, .rflags = 2, .rsp = 0x100000 - 0x10000 * i, .rsi = 0,
                            .rdi = 7 + 6 * i, .rbx = steps, .rbp = (uint64_t)i};
    if (ioctl(v->fd, KVM_SET_REGS, &regs) < 0) die("KVM_SET_REGS");
    // With the in-kernel irqchip a vCPU other than the first waits for a start-up IPI: this one
    // starts where its registers say, as the first does.
    struct kvm_mp_state runnable = {.mp_state = KVM_MP_STATE_RUNNABLE};
    if (timer && i > 0 && ioctl(v->fd, KVM_SET_MP_STATE, &runnable) < 0) die("KVM_SET_MP_STATE");
  }
  pthread_t second, ringer;
  if (irqfd && pthread_create(&ringer, NULL, ring_irq, &irq_fd) != 0) die("pthread_create");
  if (vcpu_count == 2 && pthread_create(&second, NULL, run_vcpu, &vcpus[1]) != 0) die("pthread_create");
  run_vcpu(&vcpus[0]);
  if (vcpu_count == 2) {
    pthread_join(second, NULL);
    printf("vcpu 1 done steps %u hash %08x\n", vcpus[1].final_steps, vcpus[1].final_hash);
  }
  if (irqfd) {
    uint64_t rung = 0;
    if (read(doorbell_fd, &rung, sizeof rung) != sizeof rung) die("read the doorbell's eventfd");
    printf("doorbells %llu\n", (unsigned long long)rung);
  }
  printf("done steps %u hash %08x\n", vcpus[0].final_steps, vcpus[0].final_hash);
  return 0;
}
