/* A firmware image of the suite's own for QEMU's -bios (64 KiB; the CPU starts at its last 16
   bytes): a guest that runs in real mode on QEMU's in-kernel PIC and PIT. It programs the PIC
   (IRQ 0 at vector 0x20, every other line masked) and the PIT's channel 0 (a rate generator,
   20 ms), turns its LAPIC off (so the PIC's interrupt reaches the CPU directly, as KVM's
   in-kernel irqchip delivers it) and halts; each tick's handler makes one step (counter += 1;
   hash = hash * 31 + counter) and prints "step N hash H" on the first serial port. After STEPS
   steps it resets the machine, which QEMU started with -no-reboot ends with status 0.
   So the output depends only on the guest's state: a restart that loses the PIT, the PIC, a
   tick or a register shows in it (or the guest stops, halted for good). */
#define STEPS 300
#define COUNTER 0x500
#define HASH 0x504
#define SERIAL 0x3f8
        .code16
        .text
start:  cli
        xorw %ax, %ax
        movw %ax, %ds
        movw %ax, %ss
        movw $0x7000, %sp
        movl $0, COUNTER
        movl $7, HASH
        movl $0x1b, %ecx                   /* IA32_APIC_BASE: the LAPIC off */
        rdmsr
        andw $0xf7ff, %ax
        wrmsr
        movw $tick, 0x20*4                 /* the real-mode vector 0x20: F000:tick */
        movw $0xf000, 0x20*4+2
        movb $0x11, %al; outb %al, $0x20   /* ICW1: edge, cascade, ICW4 follows */
        movb $0x20, %al; outb %al, $0x21   /* ICW2: vectors from 0x20 */
        movb $0x04, %al; outb %al, $0x21   /* ICW3: the slave on line 2 */
        movb $0x01, %al; outb %al, $0x21   /* ICW4: 8086 mode */
        movb $0xfe, %al; outb %al, $0x21   /* OCW1: only IRQ 0 */
        movb $0x34, %al; outb %al, $0x43   /* PIT channel 0: lobyte/hibyte, mode 2 */
        movb $0x38, %al; outb %al, $0x40   /*   divisor 23864 (20 ms) */
        movb $0x5d, %al; outb %al, $0x40
        sti
idle:   hlt
        jmp idle

tick:   movb $0x20, %al; outb %al, $0x20   /* end of interrupt */
        movl COUNTER, %eax
        incl %eax
        movl %eax, COUNTER
        imull $31, HASH, %edx
        addl %eax, %edx
        movl %edx, HASH
        movw $msg_step, %si; call puts
        movl COUNTER, %eax; call putdec
        movw $msg_hash, %si; call puts
        movl HASH, %eax; call putdec
        movb $10, %al; call putc
        cmpl $STEPS, COUNTER
        jae reset
        iret
reset:  movb $0xfe, %al; outb %al, $0x64   /* the keyboard controller resets the machine */
1:      hlt
        jmp 1b

/* Output only (OUT exits, which a checkpoint can finish; no read of the line status). */
putc:   movw $SERIAL, %dx; outb %al, %dx; ret
puts:   movb %cs:(%si), %al
        testb %al, %al
        jz 1f
        call putc
        incw %si
        jmp puts
1:      ret
putdec: movl $10, %ecx                     /* eax in decimal */
        xorw %bx, %bx
1:      xorl %edx, %edx
        divl %ecx
        pushw %dx
        incw %bx
        testl %eax, %eax
        jnz 1b
2:      popw %ax
        addb $'0', %al
        call putc
        decw %bx
        jnz 2b
        ret
msg_step: .asciz "step "
msg_hash: .asciz " hash "
        .org 0xfff0                        /* the reset vector */
        ljmp $0xf000, $start
        .org 0x10000
