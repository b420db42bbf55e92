/* How a forked image writer can be given memory marked MADV_DONTFORK (QEMU guest RAM), timed as
 * the pause each way would cost: lift the mark, fork, set it again (what the memory kind does);
 * copy the memory into shared memory during the pause, then fork; or let the writer read it with
 * process_vm_readv while the program waits. Figures in docs/vms.md.
 * usage: cc -O2 -o /tmp/fork_exclusions bench/fork_exclusions.c && /tmp/fork_exclusions [MIB=256] */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(int argc,char**argv){
  size_t mib=argc>1?atol(argv[1]):256, n=mib<<20;
  char*ram=mmap(0,n,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
  for(size_t i=0;i<n;i+=4096) ram[i]=(char)i;
  madvise(ram,n,MADV_DONTFORK);
  for(int r=0;r<3;r++){
    /* 1: lift the mark, fork, set it again (what the runtime does) */
    double t=now(); madvise(ram,n,MADV_DOFORK); pid_t p=fork(); if(!p)_exit(0); madvise(ram,n,MADV_DONTFORK); double lend=now()-t; waitpid(p,0,0);
    /* 2: copy into shared memory during the pause, then fork */
    t=now(); char*copy=mmap(0,n,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0); memcpy(copy,ram,n); p=fork(); if(!p)_exit(0); double cp=now()-t; waitpid(p,0,0); munmap(copy,n);
    /* 3: the writer reads it with process_vm_readv while the program waits */
    int pipefd[2]; pipe(pipefd); pid_t parent=getpid(); t=now(); p=fork();
    if(!p){char*buf=mmap(0,n,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);struct iovec l={buf,n},rr={ram,n};ssize_t got=process_vm_readv(parent,&l,1,&rr,1,0);char c=got==(ssize_t)n;write(pipefd[1],&c,1);_exit(0);}
    char ok=0; read(pipefd[0],&ok,1); double vm=now()-t; waitpid(p,0,0);
    printf("%zu MiB: lend+fork %.1f ms, copy+fork %.1f ms, process_vm_readv %.1f ms%s\n",mib,lend*1e3,cp*1e3,vm*1e3,ok?"":" (readv failed)");
  }
}
