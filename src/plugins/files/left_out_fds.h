// Descriptors a plugin leaves out of the image (stasis_plugin_leave_out_fds, include/stasis/plugin.h):
// the split MPI mode's lower half's, which a restart replaces (src/plugins/mpi_split/README.md).
#pragma once

namespace stasis::rt {
// Whether the checkpoint under way leaves descriptor `fd` out (no allocation, no lock).
bool is_left_out_fd(int fd);
}  // namespace stasis::rt
