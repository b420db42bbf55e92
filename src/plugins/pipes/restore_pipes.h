// Pipes and FIFOs, restart side (restore_pipes.cc). Both ends of one pipe come from one pipe.
#pragma once
#include "plugins/files/restore_kinds.h"

namespace stasis::restore {
// Makes the pipe (or opens the FIFO) `rec` is an end of, once, refilled with the bytes this end
// saved; open_pipe_end then opens ends of it (also in processes forked after).
// A FIFO must exist at restart, unless it was in a temporary directory (made again if missing).
void check_fifo(const image::Image& img, const StasisFdRecord& rec);
void create_pipe(const image::Image& img, const StasisFdRecord& rec);
int open_pipe_end(const image::Image& img, const StasisFdRecord& rec);
void describe_pipe(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state);
}  // namespace stasis::restore
