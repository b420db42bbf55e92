// stasis_context_save(ctx): like setjmp without glibc's pointer mangling, so the restart loader
// (which has no libc) can resume the saved point. Returns 0 when saving; returns 1 when the
// loader (or stasis_context_resume) jumps back to it.
// Layout matches StasisCpuContext in src/image/format.h.
        .text
        .globl stasis_context_save
        .type stasis_context_save, @function
        .hidden stasis_context_save
stasis_context_save:
        leaq 8(%rsp), %rax          /* rsp after return */
        movq %rax, 0(%rdi)
        movq (%rsp), %rax           /* return address */
        movq %rax, 8(%rdi)
        movq %rbx, 16(%rdi)
        movq %rbp, 24(%rdi)
        movq %r12, 32(%rdi)
        movq %r13, 40(%rdi)
        movq %r14, 48(%rdi)
        movq %r15, 56(%rdi)
        stmxcsr 64(%rdi)
        fnstcw 68(%rdi)
        xorl %eax, %eax
        ret
        .size stasis_context_save, .-stasis_context_save
        .section .note.GNU-stack,"",@progbits
