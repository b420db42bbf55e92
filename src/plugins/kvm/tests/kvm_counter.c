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
// With "irqfd", the timer guest runs, and the monitor also wires an eventfd to a guest interrupt line (KVM_IRQFD), which
// Stasis does not restore: its checkpoint must be refused, naming the call.
//
// With "pit", the guest of "timer" is driven by the in-kernel PIT through the PIC instead.
//
// usage: kvm_counter STEPS [PACE_MS [timer|pit|2vcpus|irqfd]]   (exit 77: no /dev/kvm this user can open)
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

// Every vector's handler: end of interrupt (to the LAPIC and the PIC: whichever delivered it),
// then one step.
static const uint8_t kTimerHandler[] = {
    0xc7, 0x05, 0xb0, 0x00, 0xe0, 0xfe, 0x00, 0x00, 0x00, 0x00,  // mov [EOI], 0 (LAPIC)
    0xb0, 0x20, 0xe6, 0x20,                                      // mov al, 0x20; out 0x20, al (PIC)
    0xbc, 0x00, 0x00, 0x10, 0x00,  //   mov esp, 0x100000 (drop the interrupt's frame)
    STEP_COUNT_AND_HASH,
    STEP_REPORT,
    0x74, 0x07,                    //   je done
    0xfb,                          //   sti
    0xf4,                          // wait: hlt
    0xeb, 0xfd,                    //   jmp wait
    0x90, 0x90, 0x90,              //   (padding)
    0x66, 0xba, PORT_DONE, 0x00,   // done: mov dx, PORT_DONE
    0xef,                          //   out dx, eax
    0xeb, 0xfe,                    //   jmp $
};

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
  struct kvm_run* run;
  int print;  // vCPU 0 prints its steps
  long pace_ms;
  uint32_t final_steps, final_hash;
};

static void finish(struct vcpu* v) {
  struct kvm_regs regs;
  if (ioctl(v->fd, KVM_GET_REGS, &regs) < 0) die("KVM_GET_REGS");
  v->final_steps = (uint32_t)regs.rsi;
  v->final_hash = (uint32_t)regs.rdi;
}

// Runs one vCPU until its guest halts (or reports PORT_DONE).
static void* run_vcpu(void* arg) {
  struct vcpu* v = arg;
  struct kvm_run* run = v->run;
  // Each step is one OUT of the counter, then one of the hash: the monitor checks that order, so
  // an OUT the guest makes twice (an exit a restart did not finish) or never stops it here, even
  // where the output would hide it (a line printed again just after a checkpoint looks legal).
  uint32_t counter = 0, last = 0;
  int have_counter = 0;
  for (;;) {
    if (ioctl(v->fd, KVM_RUN, 0) < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;  // a signal (a checkpoint) came
      die("KVM_RUN");
    }
    switch (run->exit_reason) {
      case KVM_EXIT_IO: {
        if (run->io.direction != KVM_EXIT_IO_OUT || run->io.size != 4) {
          fprintf(stderr, "kvm_counter: unexpected port access to %#x\n", run->io.port);
          exit(1);
        }
        uint32_t value;
        memcpy(&value, (uint8_t*)run + run->io.data_offset, sizeof value);
        if (run->io.port == PORT_COUNTER) {
          if (have_counter || value != last + 1) {
            fprintf(stderr, "kvm_counter: the guest counted %u after %u%s\n", value, last,
                    have_counter ? " without reporting its hash" : "");
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
          last = counter, have_counter = 0;
          if (v->print) {
            printf("step %u hash %08x\n", counter, value);
            fflush(stdout);
          }
          pace(v->pace_ms);
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
    fprintf(stderr, "usage: kvm_counter STEPS [PACE_MS [timer|pit|2vcpus|irqfd]]\n");
    return 2;
  }
  uint32_t steps = (uint32_t)strtoul(argv[1], NULL, 10);
  long pace_ms = argc > 2 ? strtol(argv[2], NULL, 10) : 20;
  int timer = argc > 3 && strcmp(argv[3], "timer") == 0;
  int vcpu_count = argc > 3 && strcmp(argv[3], "2vcpus") == 0 ? 2 : 1;
  int irqfd = argc > 3 && strcmp(argv[3], "irqfd") == 0;
  int pit = argc > 3 && strcmp(argv[3], "pit") == 0;
  timer |= irqfd | pit;  // the timer guest: with an in-kernel irqchip, HLT no longer exits
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
  if (timer) {
    if (pit) memcpy(ram + CODE_GPA, kPitGuest, sizeof kPitGuest);
    else memcpy(ram + CODE_GPA, kTimerGuest, sizeof kTimerGuest);
    memcpy(ram + HANDLER_GPA, kTimerHandler, sizeof kTimerHandler);
    for (int v = 0; v < 256; v++) {  // 32-bit interrupt gates, all to the handler
      uint8_t* gate = ram + IDT_GPA + 8 * v;
      gate[0] = HANDLER_GPA & 0xff, gate[1] = (HANDLER_GPA >> 8) & 0xff;
      gate[2] = 0x08, gate[3] = 0;  // the code segment
      gate[4] = 0, gate[5] = 0x8e;  // present, ring 0, interrupt gate
      gate[6] = 0, gate[7] = 0;
    }
  } else {
    memcpy(ram + CODE_GPA, kGuest, sizeof kGuest);
  }
  struct kvm_userspace_memory_region slot = {
      .slot = 0, .guest_phys_addr = 0, .memory_size = GUEST_RAM, .userspace_addr = (uint64_t)(uintptr_t)ram};
  if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &slot) < 0) die("KVM_SET_USER_MEMORY_REGION");
  if (ioctl(vm, KVM_SET_TSS_ADDR, 0xfffbd000ul) < 0) die("KVM_SET_TSS_ADDR");
  if ((timer || irqfd) && ioctl(vm, KVM_CREATE_IRQCHIP, 0) < 0) die("KVM_CREATE_IRQCHIP");
  struct kvm_pit_config pit_config = {.flags = 0};
  if (pit && ioctl(vm, KVM_CREATE_PIT2, &pit_config) < 0) die("KVM_CREATE_PIT2");
  if (irqfd) {
    struct kvm_irqfd wire = {.fd = (uint32_t)eventfd(0, EFD_CLOEXEC), .gsi = 5};
    if (ioctl(vm, KVM_IRQFD, &wire) < 0) die("KVM_IRQFD");
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
                            .rdi = 7 + 6 * i, .rbx = steps};
    if (ioctl(v->fd, KVM_SET_REGS, &regs) < 0) die("KVM_SET_REGS");
  }
  pthread_t second;
  if (vcpu_count == 2 && pthread_create(&second, NULL, run_vcpu, &vcpus[1]) != 0) die("pthread_create");
  run_vcpu(&vcpus[0]);
  if (vcpu_count == 2) {
    pthread_join(second, NULL);
    printf("vcpu 1 done steps %u hash %08x\n", vcpus[1].final_steps, vcpus[1].final_hash);
  }
  printf("done steps %u hash %08x\n", vcpus[0].final_steps, vcpus[0].final_hash);
  return 0;
}
