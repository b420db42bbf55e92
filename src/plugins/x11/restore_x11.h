// X11 connections, restart side (restore_x11.cc): a computation launched with `stasis launch
// --x11` needs an X server at restart, the one the restart's DISPLAY names (README.md).
#pragma once
#include "image/reader.h"

namespace stasis::restore {

// Throws stasis::Error naming DISPLAY when `img` is the X proxy's and DISPLAY is unset or names
// no X server that answers; the proxy would otherwise find no server for the program after the
// restart had already replaced this process.
void check_x11_display(const image::Image& img);

}  // namespace stasis::restore
