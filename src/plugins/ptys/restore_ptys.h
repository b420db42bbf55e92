// Pseudo-terminals, restart side (restore_ptys.cc). create_ptys makes every pty of the checkpoint
// once, before the process tree is forked (masters and slaves held by different processes are
// ends of one pty); open_pty then opens a master or slave of it.
#pragma once
#include "plugins/files/restore_kinds.h"

namespace stasis::restore {
void create_ptys(const std::vector<image::Image>& images);
int open_pty(const image::Image& img, const StasisFdRecord& rec);
// In the process that becomes `proc`, after setsid and before it forks its children (who inherit
// it): a session leader whose controlling terminal was a pty of the computation takes it back.
void take_controlling_terminal(const StasisProcessRecord& proc);
// Once `proc` is in its process group: the foreground group's leader makes it the foreground again.
void restore_foreground_group(const StasisProcessRecord& proc);
void describe_pty(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state);
}  // namespace stasis::restore
