// The image records of this folder's kinds: regular files, directories and devices keep nothing in
// kind_data (path, flags and offset say it all); a descriptor from outside keeps a
// StasisExternalData (image/format.h, as the image reader writes one too; asserted in
// image/kind_data.h).
#pragma once
#include "image/kind_data.h"
