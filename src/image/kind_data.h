// Typed access to StasisFdRecord::kind_data. Each kind of descriptor lays its state out as a named
// struct (in its folder under src/plugins/, or format.h for the ones the loader or the runtime
// share), static_assert'ed onto the bytes the image has always held there, so the format does not
// change. The copies go through __builtin_memcpy: usable in the runtime (no libc) and the CLI.
#pragma once
#include <stddef.h>

#include "image/format.h"

namespace stasis {

// Declares that `Record` is a kind_data layout: it fits, and each field sits at the byte offset
// the image format gives it (check with STASIS_KIND_FIELD below).
template <typename Record>
constexpr bool fits_kind_data() {
  return sizeof(Record) <= sizeof(StasisFdRecord::kind_data) && alignof(Record) <= alignof(uint64_t);
}
// Field `field` of `Record` is kind_data[index] (the word the format has always used).
#define STASIS_KIND_FIELD(Record, field, index) \
  static_assert(offsetof(Record, field) == (index) * sizeof(uint64_t), #Record "." #field " is kind_data[" #index "]")

template <typename Record>
inline Record kind_data_of(const StasisFdRecord& rec) {
  static_assert(fits_kind_data<Record>(), "a kind_data layout must fit kind_data");
  Record out;
  __builtin_memcpy(&out, rec.kind_data, sizeof out);
  return out;
}

template <typename Record>
inline void set_kind_data(StasisFdRecord& rec, const Record& data) {
  static_assert(fits_kind_data<Record>(), "a kind_data layout must fit kind_data");
  __builtin_memcpy(rec.kind_data, &data, sizeof data);
}

}  // namespace stasis

STASIS_KIND_FIELD(StasisExternalData, launch_fd_plus_one, 0);
