// Connections and progress for one device context. All functions expect the context lock held,
// except transport_start/transport_stop.
#pragma once
#include <atomic>

#include "internal.h"

namespace softib {

bool transport_start(Context* c);
void transport_stop(Context* c);
Conn* add_conn(Context* c, int fd, const std::string& key);
Conn* conn_to(Context* c, uint16_t lid, uint32_t qpn);  // nullptr when the QP is unknown/unreachable
void conn_failed(Context* c, Conn* k);
char* frame_reserve(Conn* k, size_t len);  // space at the end of the output buffer
void flush(Context* c, Conn* k);
void progress_now(Context* c);  // handle whatever is ready without blocking

// Implemented by the queue layer.
void handle_frame(Context* c, Conn* from, const FrameHeader& h, const char* payload, size_t len);
void qp_fail_transport(Context* c, Qp* qp);  // the QP's peer is gone: its retries start running out
void start_giving_up(Context* c, Qp* qp);  // the QP's oldest request fails when retries run out
int expire_retries(Context* c);  // fails the QPs whose retries ran out; ms until the next, or -1

}  // namespace softib
