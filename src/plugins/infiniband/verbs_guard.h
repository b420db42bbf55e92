// Checkpoint side, in the runtime: InfiniBand verbs state lives in the adapter and in the verbs
// library (queue pairs, registrations, the peers' cached keys), not in anything the image holds.
// Until the InfiniBand plugin virtualizes it (docs/infiniband.md), a process that holds it is
// refused at checkpoint time rather than restarted with dead or stale verbs objects.
#pragma once

#include "runtime/rt.h"

namespace stasis::rt {

// User threads stopped. False, with one line in `error` naming the object, when a verbs device
// context opened through libibverbs is still open, or a descriptor of an RDMA device
// (/dev/infiniband/...) is.
bool refuse_if_verbs_in_use(LogLine& error);

}  // namespace stasis::rt
