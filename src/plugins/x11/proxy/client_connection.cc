#include "plugins/x11/proxy/client_connection.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "plugins/x11/display.h"

namespace stasis::x11 {

namespace {

bool verbose() {
  const char* v = getenv("STASIS_X11_VERBOSE");
  return v && *v == '1';
}

// Blocking helpers for the replay, which runs while the program waits anyway; bounded so that a
// server that stops answering is reported instead of hanging the program forever.
constexpr int kReplayTimeoutMs = 10000;
constexpr const char* kServerClosed = "the X server closed the connection";

bool write_all(int fd, const uint8_t* data, size_t size, std::string& why) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      struct pollfd p = {fd, POLLOUT, 0};
      if (poll(&p, 1, kReplayTimeoutMs) <= 0) return why = "the X server stopped reading", false;
      continue;
    }
    if (n <= 0) return why = std::string("writing to the X server: ") + std::strerror(errno), false;
    data += n, size -= static_cast<size_t>(n);
  }
  return true;
}

// Reads into `buffer` until it holds at least `want` bytes.
bool read_at_least(int fd, std::vector<uint8_t>& buffer, size_t want, std::string& why) {
  while (buffer.size() < want) {
    struct pollfd p = {fd, POLLIN, 0};
    int ready = poll(&p, 1, kReplayTimeoutMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return why = "the X server did not answer in 10 s", false;
    uint8_t chunk[65536];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return why = kServerClosed, false;
    buffer.insert(buffer.end(), chunk, chunk + n);
  }
  return true;
}

uint32_t client_slot(uint32_t base, uint32_t mask) { return base / (mask + 1); }

// A request's 32-bit field at `offset`, 0 past its end (a request shorter than its kind is the
// server's to refuse; the proxy must not read beyond it).
uint32_t word_at(const std::vector<uint8_t>& request, size_t offset) {
  return offset + 4 <= request.size() ? get32(request.data() + offset) : 0;
}

// The name a QueryExtension or InternAtom request carries.
std::string name_in(const std::vector<uint8_t>& request) {
  if (request.size() < 8) return {};
  return std::string(reinterpret_cast<const char*>(request.data()) + 8,
                     std::min<size_t>(get16(request.data() + 4), request.size() - 8));
}

}  // namespace

ClientConnection::~ClientConnection() {
  close(client_fd_);
  if (server_fd_ >= 0) close(server_fd_);
  for (int fd : spare_server_fds_) close(fd);
}

bool ClientConnection::read_client() {
  uint8_t chunk[65536];
  ssize_t n = read(client_fd_, chunk, sizeof chunk);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  from_client_.insert(from_client_.end(), chunk, chunk + n);
  size_t at = 0;
  for (;;) {
    const uint8_t* p = from_client_.data() + at;
    const size_t left = from_client_.size() - at;
    if (!setup_sent_) {  // the connection set-up: byte order, version, authorization
      if (left < 12) break;
      const size_t size = 12 + pad4(get16(p + 6)) + pad4(get16(p + 8));
      if (left < size) break;
      if (p[0] != 'l') {
        fprintf(stderr, "stasis-x11-proxy: a big-endian X client; only little-endian clients are supported\n");
        return false;
      }
      setup_request_.assign(p, p + size);
      std::string why;
      if (!open_server(why)) {
        fprintf(stderr, "stasis-x11-proxy: %s\n", why.c_str());
        return false;
      }
      to_server_raw_ = setup_request_;
      setup_sent_ = true;
      at += size;
      continue;
    }
    if (left < 4) break;
    size_t size = 4 * size_t{get16(p + 2)};
    if (size == 0) {  // BIG-REQUESTS: the length follows in 32 bits
      if (left < 8) break;
      size = 4 * size_t{get32(p + 4)};
      if (size < 8) {
        fprintf(stderr, "stasis-x11-proxy: a request of length %zu from the program\n", size);
        return false;
      }
    }
    if (left < size) break;
    take_request(std::vector<uint8_t>(p, p + size));
    at += size;
  }
  from_client_.erase(from_client_.begin(), from_client_.begin() + static_cast<long>(at));
  return true;
}

void ClientConnection::take_request(std::vector<uint8_t> bytes) {
  to_server_.push_back({std::move(bytes), ++client_seq_});
}

// After a restart the re-created context may have another tag on the new server: the program's
// requests name it by the old one.
void ClientConnection::to_server_tags(std::vector<uint8_t>& bytes) const {
  if (tags_.empty() || !glx_major_ || bytes[0] != glx_major_) return;
  const size_t at = glx_context_tag_offset(bytes[1]);
  if (at == 0 || at + 4 > bytes.size()) return;
  const auto known = tags_.find(get32(&bytes[at]));
  if (known != tags_.end()) put32(&bytes[at], known->second);
}

bool ClientConnection::has_reply(const std::vector<uint8_t>& bytes) const {
  const uint8_t opcode = bytes[0];
  if (opcode < 128) return core_request_has_reply(opcode);
  if (opcode == glx_major_) return glx_request_has_reply(bytes[1]);
  if (opcode == big_requests_major_) return true;  // Enable
  for (const Extension& e : extensions_)
    if (e.major == opcode && e.name == "XC-MISC") return true;  // every XC-MISC request
  return false;
}

std::string ClientConnection::request_name(const std::vector<uint8_t>& bytes) const {
  if (bytes[0] < 128) return "request " + std::to_string(bytes[0]);
  for (const Extension& e : extensions_)
    if (e.major == bytes[0]) return e.name + " request " + std::to_string(bytes[1]);
  return "request " + std::to_string(bytes[0]) + "." + std::to_string(bytes[1]);
}

bool ClientConnection::write_server() {
  while (!to_server_raw_.empty()) {
    ssize_t n = write(server_fd_, to_server_raw_.data(), to_server_raw_.size());
    if (n < 0) return errno == EINTR || errno == EAGAIN || reconnect();
    to_server_raw_.erase(to_server_raw_.begin(), to_server_raw_.begin() + n);
  }
  while (!to_server_.empty()) {
    Request& r = to_server_.front();
    // The opcode as this server numbers the extension (another server may number it otherwise);
    // the request itself stays as the program wrote it, for the log.
    uint8_t opcode = server_opcode(r.bytes[0]);
    if (to_server_offset_ == 0) to_server_tags(r.bytes);
    struct iovec parts[2] = {{&opcode, 1}, {r.bytes.data() + 1, r.bytes.size() - 1}};
    if (to_server_offset_ > 0) parts[1] = {r.bytes.data() + to_server_offset_, r.bytes.size() - to_server_offset_};
    ssize_t n = to_server_offset_ > 0 ? writev(server_fd_, parts + 1, 1) : writev(server_fd_, parts, 2);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) return true;
      return reconnect();
    }
    to_server_offset_ += static_cast<size_t>(n);
    if (to_server_offset_ < r.bytes.size()) return true;
    to_server_offset_ = 0;
    request_sent(r);
    to_server_.pop_front();
  }
  return true;
}

// A request is the server's once written whole: it counts in the server's sequence, waits for its
// reply, and joins the log when it builds state.
void ClientConnection::request_sent(Request& r) {
  server_seq_++;
  if (r.client_seq == 0) {  // the proxy's own (GetAtomName): its answers are not the program's
    if (segments_.empty() || !segments_.back().injected) segments_.push_back({server_seq_, 0, true, client_seq_sent_});
    pending_.push_back({server_seq_, std::move(r)});
    return;
  }
  client_seq_sent_ = r.client_seq;
  const int64_t offset = static_cast<int64_t>(r.client_seq) - static_cast<int64_t>(server_seq_);
  if (segments_.empty() || segments_.back().injected || segments_.back().offset != offset)
    segments_.push_back({server_seq_, offset, false, 0});
  log_request(r.bytes);
  if (has_reply(r.bytes)) pending_.push_back({server_seq_, std::move(r)});
}

// A freed resource drops its history, unless something still in the log was made from it (a
// cursor from a pixmap or a font, a window's background pixmap, a GC's tile): then the free is
// logged too, and the replay makes, uses and frees it as the program did. "Made from" is any
// aligned word of a later request equal to the id: a false match only keeps more history.
void ClientConnection::forget_resource(const std::vector<uint8_t>& free_request) {
  std::vector<uint32_t> gone = {word_at(free_request, 4)};
  for (size_t i = 0; i < gone.size(); i++)  // a window takes its subwindows with it
    for (const Logged& l : log_)
      if (l.parent == gone[i] && l.bytes[0] == kCreateWindow) gone.push_back(l.subject);
  auto is_gone = [&](uint32_t id) { return id != 0 && std::find(gone.begin(), gone.end(), id) != gone.end(); };
  for (const Logged& l : log_) {
    if (is_gone(l.subject)) continue;
    for (size_t at = 4; at + 4 <= l.bytes.size(); at += 4)
      if (is_gone(get32(l.bytes.data() + at))) {
        log_.push_back({free_request, 0, 0});
        return;
      }
  }
  std::erase_if(log_, [&](const Logged& l) { return is_gone(l.subject); });
}

// The pruned log: what a new server must be told for the program's resources to exist there as
// they do now. Creations and changes are kept in order; a freed resource drops its history; a
// property set again replaces the older value; drawing, queries and input are never kept.
void ClientConnection::log_request(const std::vector<uint8_t>& bytes) {
  const uint8_t opcode = bytes[0];
  const uint32_t first = word_at(bytes, 4);
  if (opcode < 128) {
    switch (opcode) {
      case kDestroyWindow: case kFreePixmap: case kFreeGC: case kFreeColormap: case kFreeCursor:
      case kCloseFont:
        forget_resource(bytes);
        return;
      case kDeleteProperty: case kChangeProperty: {
        const uint32_t property = word_at(bytes, 8);
        std::erase_if(log_, [&](const Logged& l) {
          return l.subject == first && (l.bytes[0] == kChangeProperty || l.bytes[0] == kDeleteProperty) &&
                 word_at(l.bytes, 8) == property && (opcode == kDeleteProperty || bytes[1] == 0);
        });
        if (opcode == kChangeProperty) log_.push_back({bytes, first, 0});
        return;
      }
      case kMapWindow: case kUnmapWindow:
        std::erase_if(log_, [&](const Logged& l) {
          return l.subject == first && (l.bytes[0] == kMapWindow || l.bytes[0] == kUnmapWindow);
        });
        log_.push_back({bytes, first, 0});
        return;
      case kCreateWindow:
        log_.push_back({bytes, first, word_at(bytes, 8)});
        return;
      case kCopyGC:
        log_.push_back({bytes, word_at(bytes, 8), 0});
        return;
      case kChangeWindowAttributes: case kConfigureWindow: case kChangeGC: case kSetDashes:
      case kSetClipRectangles: {
        // A change sets what its value mask names (SetDashes and SetClipRectangles: all they set):
        // an earlier change of the same kind to the same resource that set no more is superseded,
        // so a program that sets a GC's colour every frame keeps one entry, not one a frame.
        const uint32_t mask = opcode == kConfigureWindow ? get16(bytes.data() + 8) : word_at(bytes, 8);
        const bool masked = opcode != kSetDashes && opcode != kSetClipRectangles;
        // (not when the GC was copied from meanwhile: the copy took the older values)
        const bool copied = std::any_of(log_.begin(), log_.end(), [&](const Logged& l) {
          return l.bytes[0] == kCopyGC && word_at(l.bytes, 4) == first;
        });
        if (!copied) std::erase_if(log_, [&](const Logged& l) {
          if (l.bytes[0] != opcode || l.subject != first) return false;
          const uint32_t older = opcode == kConfigureWindow ? get16(l.bytes.data() + 8) : word_at(l.bytes, 8);
          return !masked || (older & ~mask) == 0;
        });
        log_.push_back({bytes, first, 0});
        return;
      }
      case kMapSubwindows: case kUnmapSubwindows: case kReparentWindow: case kOpenFont: case kCreatePixmap:
      case kCreateGC: case kCreateColormap: case kCreateCursor: case kCreateGlyphCursor:
        log_.push_back({bytes, first, 0});
        return;
      default:
        return;
    }
  }
  if (opcode == big_requests_major_) {
    log_.push_back({bytes, 0, 0});
    return;
  }
  if (opcode != glx_major_) return;
  const uint8_t minor = bytes[1];
  switch (minor) {
    case kGlxDestroyContext: case kGlxDestroyGlxPixmap: case kGlxDestroyPixmap: case kGlxDestroyPbuffer:
    case kGlxDeleteWindow:
      forget_resource(bytes);
      return;
    case kGlxCreateContext: case kGlxCreateNewContext: case kGlxCreateContextAttribsArb:
    case kGlxChangeDrawableAttributes:
      log_.push_back({bytes, first, 0});
      return;
    case kGlxCreateGlxPixmap: case kGlxCreatePixmap: case kGlxCreateWindow:
      log_.push_back({bytes, word_at(bytes, 16), 0});
      return;
    case kGlxMakeCurrent: case kGlxMakeContextCurrent: {
      // The context current on the connection: the latest says it; its replay gives the context
      // its tag on the new server. Made current from nothing there (no old tag).
      std::erase_if(log_, [&](const Logged& l) {
        return l.bytes[0] == glx_major_ && (l.bytes[1] == kGlxMakeCurrent || l.bytes[1] == kGlxMakeContextCurrent);
      });
      const size_t context_at = minor == kGlxMakeCurrent ? 8 : 16;
      if (bytes.size() < context_at + 4 || word_at(bytes, context_at) == 0) return;  // released
      std::vector<uint8_t> made = bytes;
      put32(&made[glx_context_tag_offset(minor)], 0);
      log_.push_back({std::move(made), word_at(bytes, context_at), 0});
      return;
    }
    case kGlxCreatePbuffer:
      log_.push_back({bytes, word_at(bytes, 12), 0});
      return;
    case kGlxQueryVersion: case kGlxClientInfo: case kGlxSetClientInfoArb: case kGlxSetClientInfo2Arb:
      // what the client told the server of itself: the latest of each says it all
      std::erase_if(log_, [&](const Logged& l) { return l.bytes[0] == glx_major_ && l.bytes[1] == minor; });
      log_.push_back({bytes, 0, 0});
      return;
    default:
      return;
  }
}

bool ClientConnection::read_server() {
  uint8_t chunk[65536];
  ssize_t n = read(server_fd_, chunk, sizeof chunk);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) return reconnect();
  from_server_.insert(from_server_.end(), chunk, chunk + n);
  size_t at = 0;
  for (;;) {
    uint8_t* p = from_server_.data() + at;
    const size_t left = from_server_.size() - at;
    if (!setup_answered_) {
      if (left < 8) break;
      const size_t size = 8 + 4 * size_t{get16(p + 6)};
      if (left < size) break;
      setup_reply_.assign(p, p + size);
      if (p[0] == 1 && size >= 20) resource_base_ = get32(p + 12), resource_mask_ = get32(p + 16);
      to_client_.insert(to_client_.end(), p, p + size);
      setup_answered_ = true;
      at += size;
      continue;
    }
    if (left < 32) break;
    const size_t size = server_message_size(p);
    if (left < size) break;
    if (answered(p, size)) to_client_.insert(to_client_.end(), p, p + size);
    at += size;
  }
  from_server_.erase(from_server_.begin(), from_server_.begin() + static_cast<long>(at));
  return true;
}

// A message from the server: its sequence number put in the program's count, and what a reply
// tells (an extension's opcodes, an atom) taken note of. False: not for the program (an answer
// to the proxy's own request).
bool ClientConnection::answered(uint8_t* message, size_t size) {
  const uint8_t type = message[0] & 0x7f;
  if (type == kKeymapNotify) return true;  // the one message without a sequence number
  const uint64_t seq = server_seq_ - static_cast<uint16_t>(server_seq_ - get16(message + 2));
  while (segments_.size() > 1 && segments_[1].first <= seq) segments_.pop_front();
  if (segments_.empty()) return false;
  const SeqSegment& segment = segments_.front();
  const bool for_program = !segment.injected || (type != kReply && type != kError);
  if (type != kReply) to_program_codes(message);
  put16(message + 2, static_cast<uint16_t>(segment.injected ? segment.fixed : seq + segment.offset));
  while (!pending_.empty() && pending_.front().server_seq < seq) pending_.pop_front();
  if (pending_.empty() || pending_.front().server_seq != seq || (type != kReply && type != kError)) return for_program;
  const std::vector<uint8_t>& request = pending_.front().request.bytes;
  if (type == kReply && request[0] == kQueryExtension && size >= 12) {
    const std::string name = name_in(request);
    const x11::Extension kind = extension_named(name);
    if (message[8] && kind == x11::Extension::kNone) {
      std::memset(message + 8, 0, 4);  // hidden: "not present"
    } else if (message[8]) {
      auto known = std::find_if(extensions_.begin(), extensions_.end(), [&](const Extension& e) { return e.name == name; });
      if (known == extensions_.end()) {
        if (kind == x11::Extension::kGlx) glx_major_ = message[9];
        if (kind == x11::Extension::kBigRequests) big_requests_major_ = message[9];
        extensions_.push_back({name, message[9], message[10], message[11], message[9], message[10], message[11]});
      } else {  // asked again after a restart: the numbers the program already has
        message[9] = known->major, message[10] = known->first_event, message[11] = known->first_error;
      }
    }
  } else if (type == kReply && glx_major_ && request[0] == glx_major_ &&
             (request[1] == kGlxMakeCurrent || request[1] == kGlxMakeContextCurrent) && size >= 12) {
    program_tag_ = get32(message + 8);  // the program's name for it from now on: as this server's
    tags_.erase(program_tag_);
  } else if (type == kReply && request[0] == kInternAtom && get32(message + 8) != 0) {
    learn_atom(get32(message + 8), name_in(request));
  } else if (type == kReply && request[0] == kListExtensions) {
    // The same extensions as QueryExtension shows: the others are left out of the list.
    std::vector<uint8_t> reply(message, message + 32);
    uint8_t names = 0;
    size_t at = 32;
    for (unsigned i = 0; i < message[1] && at < size && at + 1 + size_t{message[at]} <= size; i++) {
      const size_t length = message[at];
      if (extension_named(std::string(reinterpret_cast<const char*>(message) + at + 1, length)) != x11::Extension::kNone) {
        reply.insert(reply.end(), message + at, message + at + 1 + length);
        names++;
      }
      at += 1 + length;
    }
    reply.resize(32 + pad4(reply.size() - 32));
    reply[1] = names;
    const uint32_t words = static_cast<uint32_t>((reply.size() - 32) / 4);
    reply[4] = words & 0xff, reply[5] = (words >> 8) & 0xff, reply[6] = (words >> 16) & 0xff, reply[7] = words >> 24;
    if (for_program) to_client_.insert(to_client_.end(), reply.begin(), reply.end());
    pending_.pop_front();
    return false;
  } else if (type == kReply && request[0] == kGetAtomName && size >= 32 + size_t{get16(message + 8)}) {
    learn_atom(word_at(request, 4), std::string(reinterpret_cast<const char*>(message) + 32, get16(message + 8)));
  }
  pending_.pop_front();
  return for_program;
}

// Atoms are numbered in the order a server first sees their names, its own (extensions, fonts'
// properties) and every client's. A new server numbers the same names alike when it is asked them
// in the old server's order, below the program's atoms included: so the proxy learns the name of
// every atom up to the highest the program holds, asking the old server for those it skipped.
void ClientConnection::learn_atom(uint32_t atom, std::string name) {
  if (atom <= kLastPredefinedAtom) return;
  atom_names_[atom] = std::move(name);
  for (; highest_atom_ < atom; highest_atom_++) {
    const uint32_t skipped = highest_atom_ + 1;
    if (atom_names_.count(skipped)) continue;
    std::vector<uint8_t> r(8);
    r[0] = kGetAtomName, put16(&r[2], 2);
    r[4] = skipped & 0xff, r[5] = (skipped >> 8) & 0xff, r[6] = (skipped >> 16) & 0xff, r[7] = skipped >> 24;
    to_server_.push_back({std::move(r), 0});
  }
}

uint8_t ClientConnection::server_opcode(uint8_t program_opcode) const {
  if (program_opcode < 128) return program_opcode;
  for (const Extension& e : extensions_)
    if (e.major == program_opcode) return e.server_major;
  return program_opcode;
}

// An event's or error's codes as the program was told them: an extension's events and errors are
// numbered from where the server put that extension. Of the extensions shown, GLX alone has any.
void ClientConnection::to_program_codes(uint8_t* message) const {
  const uint8_t type = message[0] & 0x7f;
  const Extension* from = nullptr;
  if (type == kError) {
    const uint8_t major = message[10];
    for (const Extension& e : extensions_) {
      if (e.server_major == major && major >= 128) message[10] = e.major;
      if (e.server_first_error && message[1] >= e.server_first_error &&
          (!from || e.server_first_error > from->server_first_error))
        from = &e;
    }
    if (from && message[1] >= 128) message[1] = static_cast<uint8_t>(message[1] - from->server_first_error + from->first_error);
  } else if (type == kGenericEvent) {
    const uint8_t major = message[1];
    for (const Extension& e : extensions_)
      if (e.server_major == major) message[1] = e.major;
  } else if (type >= 64) {
    for (const Extension& e : extensions_)
      if (e.server_first_event && type >= e.server_first_event && (!from || e.server_first_event > from->server_first_event))
        from = &e;
    if (from) message[0] = static_cast<uint8_t>((message[0] & 0x80) | (type - from->server_first_event + from->first_event));
  }
}

size_t ClientConnection::log_bytes() const {
  size_t bytes = 0;
  for (const Logged& l : log_) bytes += l.bytes.size();
  return bytes;
}

bool ClientConnection::write_client() {
  while (to_client_offset_ < to_client_.size()) {
    ssize_t n = write(client_fd_, to_client_.data() + to_client_offset_, to_client_.size() - to_client_offset_);
    if (n < 0) return errno == EINTR || errno == EAGAIN;
    to_client_offset_ += static_cast<size_t>(n);
  }
  to_client_.clear();
  to_client_offset_ = 0;
  return true;
}

bool ClientConnection::open_server(std::string& why) {
  server_fd_ = connect_display(display_, why);
  // Non-blocking: a server that stops reading must not stop the proxy's other connections.
  if (server_fd_ >= 0) fcntl(server_fd_, F_SETFL, fcntl(server_fd_, F_GETFL) | O_NONBLOCK);
  return server_fd_ >= 0;
}

// The server closed the connection before answering its set-up. An X server that resets (Xvfb and
// Xorg do when their last client leaves) drops the connections accepted while it resets: a program
// connecting just as another client leaves meets it (seen in the suite: a screenshot tool leaving).
// Nothing of the program's has reached the server yet, so the set-up is sent again on a new
// connection, a few times; a server that keeps closing is reported and the program told by the
// closed connection.
bool ClientConnection::setup_again() {
  constexpr int kSetupTries = 5;
  std::string why = "it closed the connection before answering the set-up";
  if (setup_tries_ < kSetupTries && server_seq_ == 0 && from_server_.empty()) {
    setup_tries_++;
    close(server_fd_);
    server_fd_ = -1;
    // The reset takes milliseconds; connections made meanwhile wait in the listening socket.
    struct timespec pause = {0, 20'000'000L * setup_tries_};
    nanosleep(&pause, nullptr);
    if (open_server(why)) {
      to_server_raw_ = setup_request_;
      if (verbose())
        fprintf(stderr, "stasis-x11-proxy: DISPLAY=%s closed the connection before answering its set-up; asking again (%d)\n",
                display_.c_str(), setup_tries_);
      return true;
    }
  }
  fprintf(stderr, "stasis-x11-proxy: the X server on DISPLAY=%s did not answer the connection set-up: %s\n",
          display_.c_str(), why.c_str());
  return false;
}

// The server's end is gone. After a restart that is the old server's connection, given back with
// its peer closed: connect to the display the restart names (STASIS_X11_DISPLAY, which `stasis
// restart` sets from its own DISPLAY), give the new server the pruned log, and carry on.
bool ClientConnection::reconnect() {
  if (!setup_answered_) return setup_again();

  if (setup_reply_[0] != 1) return false;  // never a working connection: nothing to rebuild
  const char* restart_display = getenv("STASIS_X11_DISPLAY");
  if (restart_display && *restart_display) display_ = restart_display;
  const auto start = std::chrono::steady_clock::now();
  std::string why;
  close(server_fd_);
  server_fd_ = -1;
  for (int fd : spare_server_fds_) close(fd);
  spare_server_fds_.clear();
  if (open_server(why) && replay(why)) {
    if (verbose()) {
      std::string tag;  // an indirect GLX context's tag, and the new server's where it differs
      if (program_tag_)
        tag = ", GLX context tag " + std::to_string(program_tag_) +
              (tags_.empty() ? std::string(" kept") : " now " + std::to_string(tags_.begin()->second));
      fprintf(stderr,
              "stasis-x11-proxy: reconnected to DISPLAY=%s: replayed %zu requests (%zu bytes) and %u atoms, "
              "asked %zu unanswered again%s, in %.1f ms\n",
              display_.c_str(), log_.size(), log_bytes(), highest_atom_ - kLastPredefinedAtom, asked_again_,
              tag.c_str(), std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    return true;
  }
  fprintf(stderr, "stasis-x11-proxy: the X server of the program's connection is gone and cannot be replaced: %s\n",
          why.c_str());
  return false;
}

// The new server, given the same connection set-up, must give the same client slot (so every
// resource id the program holds means the same), show the same screens, extensions and atoms;
// then it gets the log, and the requests the old one never answered are asked again.
bool ClientConnection::replay(std::string& why) {
  std::vector<uint8_t> in;
  for (int slot_tries = 0, reset_tries = 0;;) {
    in.clear();
    if (!write_all(server_fd_, setup_request_.data(), setup_request_.size(), why) ||
        !read_at_least(server_fd_, in, 8, why) || !read_at_least(server_fd_, in, 8 + 4 * size_t{get16(&in[6])}, why)) {
      // Closed unanswered: a server resetting as its last other client left (setup_again), which
      // closed the slots held here too. Start again from the lowest free slot, a few times.
      if (why != kServerClosed || in.size() >= 8 || ++reset_tries > 5) return false;
      close(server_fd_);
      for (int fd : spare_server_fds_) close(fd);
      spare_server_fds_.clear();
      usleep(20000 * reset_tries);
      if (!open_server(why)) return false;
      continue;
    }
    if (in[0] != 1)
      return why = "DISPLAY=" + display_ + " refused the connection (" +
                   std::string(reinterpret_cast<const char*>(in.data()) + 8, std::min<size_t>(in[1], in.size() - 8)) + ")",
             false;
    if (in.size() < 40 || in.size() < 40 + pad4(get16(&in[24])) + 8 * size_t{in[29]})
      return why = "DISPLAY=" + display_ + " answered the connection set-up with " + std::to_string(in.size()) +
                   " bytes, too few for its own description",
             false;
    const uint32_t base = get32(&in[12]), mask = get32(&in[16]);
    if (mask != resource_mask_) return why = "the new X server gives another resource-id mask", false;
    if (base == resource_base_) break;
    if (client_slot(base, mask) > client_slot(resource_base_, mask)) {
      // Another client has the slot. A passing one (xdpyinfo, a screenshot) leaves it soon:
      // start again from the lowest free slot, for up to 5 s.
      if (++slot_tries > 50)
        return why = "X client slot " + std::to_string(client_slot(resource_base_, mask)) + " of DISPLAY=" +
                     display_ + " is taken by another client (the program's resource ids would not be its own)",
               false;
      close(server_fd_);
      for (int fd : spare_server_fds_) close(fd);
      spare_server_fds_.clear();
      usleep(100000);
      if (!open_server(why)) return false;
      continue;
    }
    spare_server_fds_.push_back(server_fd_);  // hold this slot; the next connection gets the one after
    if (!open_server(why)) return false;
  }
  // The screens: formats, depths and visuals from after the vendor string, less what may differ
  // without harm: the roots' event masks (other clients' choices) and sizes.
  auto screens = [](std::vector<uint8_t> setup) {
    size_t at = 40 + pad4(get16(&setup[24])) + 8 * size_t{setup[29]};
    const size_t formats = 40 + pad4(get16(&setup[24]));
    for (unsigned s = 0; s < setup[28] && at + 40 <= setup.size(); s++) {
      std::memset(&setup[at + 16], 0, 12);  // current input masks, width and height (pixels, mm)
      const unsigned depths = setup[at + 39];
      at += 40;
      for (unsigned d = 0; d < depths && at + 8 <= setup.size(); d++) at += 8 + 24 * size_t{get16(&setup[at + 2])};
    }
    setup.erase(setup.begin(), setup.begin() + static_cast<long>(std::min(setup.size(), formats)));
    return setup;
  };
  if (screens(in) != screens(setup_reply_))
    return why = "the screens of DISPLAY=" + display_ + " differ from the old server's (size, depths or visuals)", false;

  server_seq_ = 0;
  std::vector<uint8_t> batch;
  auto add = [&](const std::vector<uint8_t>& r) { batch.insert(batch.end(), r.begin(), r.end()), server_seq_++; };
  // First where this server put the extensions the program uses (seq 1..E), before anything of
  // theirs is sent.
  for (const Extension& e : extensions_) {
    std::vector<uint8_t> r(8 + pad4(e.name.size()));
    r[0] = kQueryExtension, put16(&r[2], static_cast<uint16_t>(r.size() / 4)), put16(&r[4], static_cast<uint16_t>(e.name.size()));
    std::memcpy(&r[8], e.name.data(), e.name.size());
    add(r);
  }
  const uint64_t extension_queries = server_seq_;
  if (!write_all(server_fd_, batch.data(), batch.size(), why)) return false;
  batch.clear();
  in.clear();
  for (uint64_t answered = 0; answered < extension_queries;) {
    if (!read_at_least(server_fd_, in, 32, why)) return false;
    const size_t size = server_message_size(in.data());
    if (!read_at_least(server_fd_, in, size, why)) return false;
    if ((in[0] & 0x7f) == kReply) {
      Extension& e = extensions_[answered++];
      if (!in[8]) return why = "extension " + e.name + " is missing from DISPLAY=" + display_, false;
      e.server_major = in[9], e.server_first_event = in[10], e.server_first_error = in[11];
    } else if ((in[0] & 0x7f) == kError) {
      return why = "DISPLAY=" + display_ + " refused QueryExtension", false;
    }
    in.erase(in.begin(), in.begin() + static_cast<long>(size));
  }
  for (uint32_t atom = kLastPredefinedAtom + 1; atom <= highest_atom_; atom++) {  // the atom table, in order
    const auto known = atom_names_.find(atom);
    if (known == atom_names_.end())
      return why = "the name of atom " + std::to_string(atom) + " was never learned", false;
    std::vector<uint8_t> r(8 + pad4(known->second.size()));
    r[0] = kInternAtom, put16(&r[2], static_cast<uint16_t>(r.size() / 4));
    put16(&r[4], static_cast<uint16_t>(known->second.size()));
    std::memcpy(&r[8], known->second.data(), known->second.size());
    add(r);
  }
  const uint64_t queries = server_seq_;
  for (const Logged& l : log_) {
    add(l.bytes);
    batch[batch.size() - l.bytes.size()] = server_opcode(l.bytes[0]);
  }
  add({kGetInputFocus, 0, 1, 0});  // the last: its reply says everything before it was done
  if (!write_all(server_fd_, batch.data(), batch.size(), why)) return false;
  for (bool synced = false; !synced;) {
    if (!read_at_least(server_fd_, in, 32, why)) return false;
    const size_t size = server_message_size(in.data());
    if (!read_at_least(server_fd_, in, size, why)) return false;
    const uint8_t type = in[0] & 0x7f;
    const uint64_t seq = server_seq_ - static_cast<uint16_t>(server_seq_ - get16(&in[2]));
    const size_t index = seq - 1 - queries;  // in the log, for seq > queries
    if (type == kError) {
      return why = "the new X server refused " +
                   (seq > queries && index < log_.size() ? request_name(log_[index].bytes) : std::string("a query")) +
                   " of the replay (X error " + std::to_string(in[1]) + ")",
             false;
    }
    if (type == kReply && seq > extension_queries && seq <= queries) {
      const uint32_t atom = static_cast<uint32_t>(kLastPredefinedAtom + seq - extension_queries);
      if (get32(&in[8]) != atom)
        return why = "atom " + atom_names_[atom] + " is " + std::to_string(get32(&in[8])) + " on DISPLAY=" +
                     display_ + ", not " + std::to_string(atom) + " as on the old server (other clients or another "
                     "server interned other names first)",
               false;
    } else if (type == kReply && seq == server_seq_) {
      synced = true;
    } else if (type == kReply && seq > queries && index < log_.size() && log_[index].bytes[0] == glx_major_ &&
               (log_[index].bytes[1] == kGlxMakeCurrent || log_[index].bytes[1] == kGlxMakeContextCurrent)) {
      const uint32_t tag = get32(&in[8]);  // the re-created context's tag: the program holds the old one
      tags_.clear();
      if (tag != program_tag_) tags_[program_tag_] = tag;
    } else if (type == kExpose) {  // (core: no codes to translate)
      // The re-created windows are exposed: the program redraws them, as after any exposure. The
      // other events of the replay (MapNotify, ConfigureNotify...) tell it what it already knew.
      put16(&in[2], static_cast<uint16_t>(client_seq_sent_));
      to_client_.insert(to_client_.end(), in.begin(), in.begin() + 32);
    }
    in.erase(in.begin(), in.begin() + static_cast<long>(size));
  }
  from_server_ = std::move(in);
  segments_.clear();
  segments_.push_back({1, 0, true, client_seq_sent_});
  std::deque<Pending> unanswered;
  unanswered.swap(pending_);
  asked_again_ = unanswered.size();
  for (auto it = unanswered.rbegin(); it != unanswered.rend(); ++it) to_server_.push_front(std::move(it->request));
  to_server_offset_ = 0;  // a request half written to the old server goes whole to the new one
  return true;
}

}  // namespace stasis::x11
