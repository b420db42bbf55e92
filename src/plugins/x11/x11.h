// X11 connections and GPU state, checkpoint side (runtime, x11.cc): a connection to an X server
// outside the computation is refused, naming the display, unless it is the X proxy's; a GPU
// device node and the Vulkan loader are refused, naming them (README.md).
#pragma once
#include "plugins/files/capture.h"

namespace stasis::rt {
int capture_x11_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
// Refused at checkpoint, naming what: a GPU's device node, and the Vulkan loader in the process.
int capture_gpu_device_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
bool capture_vulkan_refusal(const ProcessCapture& capture, LogLine& error);
}  // namespace stasis::rt
