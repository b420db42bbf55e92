// Restart side of ssh sessions (README.md): how the remote half of an ssh relay is reached again.
#pragma once
#include <string>
#include <vector>

#include "image/reader.h"

namespace stasis::restore {

// For the remote half of an ssh relay (a process running stasis-ssh-relay --serve): the words that
// start an ssh session as its own was started (the ssh program, its options, -l USER), read from
// its command line in its image, and -n (the session takes no input from the restart). Empty for
// any other process; the restore table's part_launcher. Throws stasis::Error when the
// image's command line cannot be read.
std::vector<std::string> ssh_launcher_of(const image::Image& img);

}  // namespace stasis::restore
