// Loader-side halves of stasis_context_save (src/runtime/context.S): resume a saved context in
// this thread, or clone a new thread of this process that resumes one.
        .text
// void loader_context_resume(const StasisCpuContext* ctx)  -- never returns
        .globl loader_context_resume
        .type loader_context_resume, @function
loader_context_resume:
        movq %rdi, %rsi
resume_from_rsi:
        ldmxcsr 64(%rsi)
        fldcw 68(%rsi)
        movq 16(%rsi), %rbx
        movq 24(%rsi), %rbp
        movq 32(%rsi), %r12
        movq 40(%rsi), %r13
        movq 48(%rsi), %r14
        movq 56(%rsi), %r15
        movq 0(%rsi), %rsp
        movl $1, %eax
        jmpq *8(%rsi)
        .size loader_context_resume, .-loader_context_resume

// long loader_clone_resume(unsigned long flags, void* stack, int* ptid, int* ctid,
//                          unsigned long tls, const StasisCpuContext* ctx)
// Returns the new tid (or -errno) in the caller; the child resumes ctx and never returns here.
        .globl loader_clone_resume
        .type loader_clone_resume, @function
loader_clone_resume:
        movq %r9, %r11              /* ctx: r11 is clobbered by syscall, so keep it in r9 */
        movq %rcx, %r10             /* 4th syscall argument */
        movq %r8, %r8               /* tls already in r8 */
        movl $56, %eax              /* __NR_clone: (flags, stack, ptid, ctid, tls) */
        syscall
        testq %rax, %rax
        jnz 1f
        movq %r9, %rsi              /* child: r9 survived the syscall */
        jmp resume_from_rsi
1:      ret
        .size loader_clone_resume, .-loader_clone_resume
        .section .note.GNU-stack,"",@progbits
