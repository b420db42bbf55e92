// Virtual pids (README.md here): the pid table, and the pids inside signals and /proc paths. The
// runtime's other parts reach these through runtime/rt.h, which includes this file.
#pragma once
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "restart/loader_protocol.h"

namespace stasis::rt {

// ---- the pid table (vpid.cc) ------------------------------------------------------------------
// Maps the computation's pid table (made by `stasis restart`); false when there is none.
bool attach_pid_table(bool after_restart = false);
extern StasisPidTable* g_pid_table;  // nullptr until the computation's first restart
inline bool have_pid_table() { return g_pid_table != nullptr; }
// Before exec: the table back at its descriptor if the program closed it, so that the program
// exec starts (which looks only there) still finds it. Nothing without a table.
void keep_pid_table_for_exec();
// After a restart: the coordinator the restarted computation uses (false without a table).
bool pid_table_coordinator(char* host, size_t host_cap, uint16_t* port, char* secret_hex,
                           size_t secret_cap);
// After a restart: the descriptor number `stasis restart` has the outside file `key`
// (stasis_external_file_key) at, or -1 when it is not one of those.
int pid_table_outside_descriptor(uint64_t key);
bool pid_table_region(uint64_t* start, uint64_t* end);  // the mapping, for the memory plugin to skip
// After a restart: the pid space this computation's virtual pids belong to (the checkpoint's,
// not this host's), or nullptr (no table, or a checkpoint older than pid spaces).
const char* pid_table_space();
long virtual_pid_of(long real);
long real_pid_of(long virt);
void map_pid(long virt, long real);
// The virtual pid of a process the computation started after its restart (real pid `real`): the
// real one unless another process already sees that number, then a fresh one. The process itself
// and its parent (from fork's result) both ask, in either order, and get the same answer.
long claim_virtual_pid(long real);
// A pid as kill(2) takes it: positive = a process, below -1 = a process group, 0 and -1 as is.
long real_pid_argument(long pid);
inline long virtual_pid_result(long pid) { return pid > 0 ? virtual_pid_of(pid) : pid; }

// ---- pids inside signals and /proc paths (signal_pids.cc, proc_paths.cc) ---------------------
// The sender's pid in a siginfo (when its si_code says it carries one) as the program knows it.
void translate_siginfo_pid(siginfo_t* info);
// After a restart: SA_SIGINFO handlers the program installed before get a trampoline in front
// that translates si_pid (later ones get it from the sigaction wrapper).
void wrap_program_siginfo_handlers();
// sigaction once the pid table is attached: installs the trampoline, hides it from `old`.
int sigaction_translating_pids(int sig, const struct sigaction* act, struct sigaction* old);
// The handler the program installed, for a handler the kernel has (the trampoline or not).
sighandler_t program_handler(int sig, sighandler_t kernel_handler);

}  // namespace stasis::rt
