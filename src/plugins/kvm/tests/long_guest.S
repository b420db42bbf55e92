/* A guest of the suite's own for kvm_counter's "long" modes: it enters 64-bit long mode (4-level
   page tables, PAE, EFER.LME, paging), loads a GDT with ring-3 segments, a TSS and an IDT, starts
   its LAPIC timer (periodic, 20 ms) and drops to user mode. User mode waits for the timer's
   ticks (a memory word the kernel's interrupt handler increments), counts one step per tick seen
   and asks the kernel through SYSCALL to report it; the kernel checks the counter, keeps the hash
   (hash = hash * 31 + counter) and prints both on ports 0x10 and 0x11, as kvm_counter's other
   guests. So the progress needs the timer (interrupts into ring 0 through the IDT and the TSS's
   stack), the user/kernel switches (SYSCALL's STAR, LSTAR and SFMASK, SYSEXIT's SYSENTER_CS) and
   the page tables: a restart that loses any of them stops the guest or changes its output.

   The monitor starts each vCPU in 32-bit protected mode (flat segments) at the first byte, with
   ebp = the vCPU's index, ebx = the number of steps and edi = the hash's seed. The image is linked
   at 0x1000 and runs identity-mapped.

   KVM's instruction emulator, which runs guests on the nested KVM of the suite's machine, has no
   IRETQ and no INT n, and its SYSCALL does not reach ring 0 here: user mode enters the kernel
   through an exception (UD2, delivered through the IDT and the TSS like the timer's interrupt)
   and the kernel returns to user mode with SYSEXITQ (RIP from rdx, RSP from rcx), so user code
   keeps nothing in rcx and rdx, which a return from an interrupt or a system call changes. The
   kernel runs with interrupts off (interrupt gates); they arrive in user mode only. SYSCALL's
   MSRs (STAR, LSTAR, SFMASK) are set all the same and checked at each system call with the
   other MSRs the guest set (EFER, SYSENTER_CS, FS_BASE, KERNEL_GS_BASE). */
#define PORT_COUNTER 0x10
#define PORT_HASH 0x11
#define PORT_DONE 0x12
#define PORT_FAULT 0x16        /* an exception or an unexpected vector: the monitor stops */
#define TIMER_VECTOR 0x40
#define SYSCALL_VECTOR 6       /* #UD: the system call is UD2 (see above) */
#define LAPIC 0xfee00000
#define PERCPU 0x80000         /* per vCPU: PERCPU + index * PERCPU_SIZE */
#define PERCPU_SIZE 0x8000
#define TICKS 0x0              /* per-vCPU words: the timer's ticks (user-readable) */
#define KCOUNT 0x8             /*   the last step the kernel reported */
#define KHASH 0x10             /*   its hash */
#define SCRATCH 0x20           /*   user mode's: xmm0 through memory */
#define TSS 0x100              /*   the 64-bit TSS (its RSP0 at +4) */
#define KSTACK 0x4000          /*   the kernel stack's top */
#define USTACK 0x8000          /*   the user stack's top */
#define KGS_BASE 0x5000         /* KERNEL_GS_BASE: per-vCPU area + this */
#define KERNEL_CS 0x10
#define KERNEL_DS 0x18
#define USER_DS 0x2b
#define USER_CS 0x33
#define TSS_SEL 0x40           /* vCPU i's at TSS_SEL + 16 * i */

        .text
        .code32
start:  cli
        lgdt gdt_ptr
        movl $pml4, %eax
        movl %eax, %cr3
        movl %cr4, %eax
        orl $0x620, %eax                   /* PAE; SSE (OSFXSR, OSXMMEXCPT) */
        movl %eax, %cr4
        movl $0xc0000080, %ecx             /* EFER: long mode enabled, SYSCALL enabled */
        rdmsr
        orl $0x101, %eax
        wrmsr
        movl %cr0, %eax
        orl $0x80000001, %eax              /* paging: long mode active */
        movl %eax, %cr0
        ljmp $KERNEL_CS, $kernel64

        .code64
kernel64:
        movl $KERNEL_DS, %eax
        movl %eax, %ds
        movl %eax, %es
        movl %eax, %ss
        movl %ebp, %ebp                    /* the vCPU's index; rbp = its per-vCPU area */
        shll $15, %ebp
        addl $PERCPU, %ebp
        leaq KSTACK(%rbp), %rsp
        movq $0, TICKS(%rbp)
        movq $0, KCOUNT(%rbp)
        movl %edi, %eax
        movq %rax, KHASH(%rbp)
        movl %ebx, %r12d                   /* r12 = the last step */
        /* This vCPU's TSS: RSP0, the stack an interrupt from user mode switches to. */
        leaq KSTACK(%rbp), %rax
        movq %rax, TSS+4(%rbp)
        movl %ebp, %eax                    /* TSS_SEL + 16 * index */
        subl $PERCPU, %eax
        shrl $11, %eax
        addl $TSS_SEL, %eax
        ltr %ax
        /* The IDT (shared; both vCPUs write the same gates): the timer's vector to its handler,
           every other vector to `fault`. */
        leaq idt(%rip), %rdi
        xorl %ecx, %ecx
1:      leaq fault(%rip), %rax
        cmpl $TIMER_VECTOR, %ecx
        jne 2f
        leaq timer(%rip), %rax
2:      movw $0x8e00, 4(%rdi)              /* present, ring 0, 64-bit interrupt gate */
        cmpl $SYSCALL_VECTOR, %ecx
        jne 3f
        leaq syscall_entry(%rip), %rax
3:      movw %ax, (%rdi)                   /* offset 15:0 */
        movw $KERNEL_CS, 2(%rdi)
        shrq $16, %rax
        movw %ax, 6(%rdi)                  /* offset 31:16 */
        shrq $16, %rax
        movl %eax, 8(%rdi)                 /* offset 63:32 */
        movl $0, 12(%rdi)
        addq $16, %rdi
        incl %ecx
        cmpl $256, %ecx
        jne 1b
        lidt idt_ptr(%rip)
        /* SYSCALL: LSTAR the entry, STAR its segments, SFMASK clears IF. SYSEXIT: SYSENTER_CS,
           whose +32 and +40 are the user code and stack segments of 64-bit SYSEXIT. */
        movl $0xc0000082, %ecx
        leaq syscall_entry(%rip), %rax
        movq %rax, %rdx
        shrq $32, %rdx
        wrmsr
        movl $0xc0000081, %ecx
        xorl %eax, %eax
        movl $((USER_CS - 16 - 3) << 16) | KERNEL_CS, %edx
        wrmsr
        movl $0xc0000084, %ecx
        movl $0x200, %eax
        xorl %edx, %edx
        wrmsr
        movl $0x174, %ecx
        movl $KERNEL_CS, %eax
        xorl %edx, %edx
        wrmsr
        /* FS_BASE: user mode reads the tick word through %fs; KERNEL_GS_BASE: only checked. */
        movl $0xc0000100, %ecx
        movl %ebp, %eax
        xorl %edx, %edx
        wrmsr
        movl $0xc0000102, %ecx
        leal KGS_BASE(%rbp), %eax
        wrmsr
        /* The LAPIC: enabled, its timer periodic at TIMER_VECTOR every 20,000,000 bus cycles
           (KVM's APIC bus: 1 ns each). */
        movl $LAPIC, %eax                  /* (an absolute disp32 would be sign-extended) */
        movl $0x1ff, 0xf0(%rax)
        movl $0xb, 0x3e0(%rax)
        movl $0x20000 | TIMER_VECTOR, 0x320(%rax)
        movl $20000000, 0x380(%rax)
        /* To user mode. */
        xorl %r13d, %r13d                  /* user: the ticks it has seen */
        movq $0, SCRATCH(%rbp)             /* user: its counter, in xmm0 */
        movq $0, SCRATCH+8(%rbp)
        movdqu SCRATCH(%rbp), %xmm0
        leaq user(%rip), %rdx
        leaq USTACK(%rbp), %rcx
        sti
        sysexitq

/* User mode (ring 3): one step per timer tick seen. */
user:   movq %fs:TICKS, %rax
        cmpq %rax, %r13
        je user                            /* waiting for the next tick */
        movq %rax, %r13
        movdqu %xmm0, %fs:SCRATCH          /* the counter lives in xmm0 (SSE state, XSAVE's), */
        movq %fs:SCRATCH, %rdi             /* moved through memory: the emulator has no MOVQ xmm */
        incq %rdi
        movq %rdi, %fs:SCRATCH
        movdqu %fs:SCRATCH, %xmm0
        ud2                                /* the system call: report step rdi */
        jmp user

/* The system call, UD2 from user mode (interrupts off, on the TSS's RSP0 stack: RIP, CS,
   RFLAGS, RSP, SS): rdi = the step. The kernel checks that it follows the last and that the MSRs
   it set are still there, updates the hash and reports both. */
syscall_entry:
        call check_msrs
        movq KCOUNT(%rbp), %rax
        incq %rax
        cmpq %rax, %rdi
        jne fault
        movq %rdi, KCOUNT(%rbp)
        imulq $31, KHASH(%rbp), %rax
        addq %rdi, %rax
        movl %eax, %eax
        movq %rax, KHASH(%rbp)
        movl %edi, %eax
        movw $PORT_COUNTER, %dx
        outl %eax, %dx
        movq KHASH(%rbp), %rax
        movw $PORT_HASH, %dx
        outl %eax, %dx
        cmpq %r12, %rdi
        je done
        movq (%rsp), %rdx                  /* back to user mode after the UD2 */
        addq $2, %rdx
        movq 24(%rsp), %rcx
        sti
        sysexitq
/* The MSRs long mode and its mode switches run on, as the kernel set them (EFER: long mode
   active, SYSCALL enabled): one a restart lost or changed stops the guest. */
.macro expect_msr msr, value
        movl $\msr, %ecx
        rdmsr
        shlq $32, %rdx
        orq %rdx, %rax
        cmpq \value, %rax
        jne fault
.endm
check_msrs:
        expect_msr 0xc0000080, $0x501
        expect_msr 0xc0000081, star(%rip)
        expect_msr 0xc0000082, lstar(%rip)
        expect_msr 0xc0000084, $0x200
        expect_msr 0x174, $KERNEL_CS
        expect_msr 0xc0000100, %rbp
        leaq KGS_BASE(%rbp), %rsi
        expect_msr 0xc0000102, %rsi
        ret
star:   .quad (((USER_CS - 16 - 3) << 16) | KERNEL_CS) << 32
lstar:  .quad syscall_entry

done:   movq KCOUNT(%rbp), %rsi            /* the monitor reads the final step and hash here */
        movq KHASH(%rbp), %rdi
        movw $PORT_DONE, %dx
        outl %eax, %dx
        jmp .

/* The timer's interrupt, from user mode, on the TSS's RSP0 stack: RIP, CS, RFLAGS, RSP, SS. */
timer:  pushq %rax
        movl $LAPIC, %eax
        movl $0, 0xb0(%rax)                /* end of interrupt */
        popq %rax
        incq TICKS(%rbp)
        pushq 16(%rsp)                     /* the interrupted flags, IF still off until SYSEXIT */
        andq $~0x200, (%rsp)
        popfq
        movq (%rsp), %rdx                  /* the interrupted RIP and RSP */
        movq 24(%rsp), %rcx
        sti
        sysexitq

fault:  movq (%rsp), %rax
        movw $PORT_FAULT, %dx
        outl %eax, %dx
        jmp .

        .balign 16
gdt:    .quad 0, 0
        .quad 0x00af9a000000ffff           /* 0x10 kernel code, 64-bit */
        .quad 0x00cf92000000ffff           /* 0x18 kernel data */
        .quad 0x00cffa000000ffff           /* 0x20 user code, 32-bit (STAR's base) */
        .quad 0x00cff2000000ffff           /* 0x28 user data */
        .quad 0x00affa000000ffff           /* 0x30 user code, 64-bit */
        .quad 0x00cff2000000ffff           /* 0x38 user data (SYSEXIT's stack segment) */
        .quad 0x0000890801000067, 0        /* 0x40 vCPU 0's TSS at PERCPU + TSS */
        .quad 0x0000890881000067, 0        /* 0x50 vCPU 1's TSS at PERCPU + PERCPU_SIZE + TSS */
gdt_end:
gdt_ptr: .word gdt_end - gdt - 1
        .long gdt
idt_ptr: .word 256 * 16 - 1
        .quad idt

/* Page tables: the first GiB identity-mapped (2 MiB pages, user-accessible: user mode reads
   the tick word), and the LAPIC's page uncached. */
        .balign 4096
pml4:   .quad pdpt + 0x7
        .fill 511, 8, 0
pdpt:   .quad pd_low + 0x7, 0, 0, pd_high + 0x7
        .fill 508, 8, 0
pd_low:
        .set page, 0
        .rept 512
        .quad page | 0x87
        .set page, page + 0x200000
        .endr
pd_high:
        .fill 0x1f7, 8, 0
        .quad LAPIC | 0x9b                 /* present, writable, no cache, 2 MiB */
        .fill 512 - 0x1f8, 8, 0
idt:    .fill 256 * 16, 1, 0
