#include "coordinator/coordinator.h"
#include "image/compression.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <set>
#include <vector>

#include "cli/coord_client.h"
#include "common/error.h"
#include "common/hmac.h"
#include "coordinator/checkpoint_store.h"
#include "protocol/wire.h"

namespace stasis::coordinator {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr size_t kSecretBytes = 32;
constexpr uint64_t kListenerTag = 0;  // epoll tags: client ids start at 1
constexpr uint64_t kSignalTag = UINT64_MAX;

std::string bounded(const char* text, size_t max) { return std::string(text, strnlen(text, max)); }

template <size_t N>
void copy_field(char (&field)[N], const std::string& value) {
  size_t n = std::min(N - 1, value.size());
  memcpy(field, value.data(), n);
  field[n] = '\0';
}

Clock::time_point after_seconds(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double round_ms(double seconds) { return std::round(seconds * 1000) / 1000; }

std::string errno_text() { return strerror(errno); }

// One line per event, prefixed with the local time, written with a single write() so lines
// from a daemon and its log readers never interleave.
class Log {
 public:
  explicit Log(int fd) : fd_(fd) {}
  void line(const std::string& text) const {
    timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    tm local;
    localtime_r(&now.tv_sec, &local);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &local);
    std::string out = fmt::format("{}.{:03} {}\n", stamp, now.tv_nsec / 1000000, text);
    ssize_t ignored = write(fd_, out.data(), out.size());
    (void)ignored;
  }

 private:
  int fd_;
};

// The secret's file exists exactly as long as the coordinator listens.
class SecretFile {
 public:
  SecretFile(std::string path, const uint8_t* secret) : path_(std::move(path)) {
    make_private_dirs(std::filesystem::path(path_).parent_path().string());
    char hex[2 * kSecretBytes + 1];
    stasis_hex_encode(secret, kSecretBytes, hex);
    write_file_durably(path_, std::string(hex) + "\n");
  }
  ~SecretFile() { unlink(path_.c_str()); }
  SecretFile(const SecretFile&) = delete;
  SecretFile& operator=(const SecretFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

enum class Role { Handshake, Process, Command };

struct Client {
  uint64_t id = 0;
  int fd = -1;
  std::string peer;  // ADDR:PORT, for the log
  Role role = Role::Handshake;
  uint8_t nonce[STASIS_NONCE_BYTES] = {};
  std::vector<uint8_t> in;
  std::string out;
  bool watching_writes = false;
  bool dead = false;     // closed at the end of this loop iteration
  bool refused = false;  // closes once AUTH_FAIL is sent; never was a process
  std::string dead_reason;
  // Processes only.
  StasisProcessInfo info{};
  bool in_computation = false;  // takes part in checkpoints (restarted: after "restart")
  std::string state;
  // Name-service keys it published (some may have been published again by another since).
  std::vector<std::string> published;

  std::string describe() const {
    return fmt::format("pid {} ({})", info.pid, bounded(info.program, sizeof info.program));
  }
};

enum class OpKind { Checkpoint, Kill, Restart };

struct Operation {
  OpKind kind = OpKind::Checkpoint;
  bool kill_after = false;
  bool full = false;              // `checkpoint --full`: no incremental images
  std::string compress;           // command override; "" = coordinator default
  std::vector<uint64_t> waiters;  // command connections awaiting the reply
  uint64_t restart_generation = 0;
  std::vector<uint64_t> restart_members;
};

struct ImageResult {
  std::string path;
  uint64_t image_bytes = 0;
  uint64_t memory_bytes = 0;
  uint64_t parent_generation = 0;  // an incremental image builds on that generation's
};

// Where a checkpoint's time goes, to tell coordinating from writing as the process count grows.
struct CheckpointTiming {
  // Seconds from the previous barrier's end (or the start) to each barrier's end, in the order
  // run: a repeated "children" barrier, with its waits, counts as one. They add up to the total.
  std::vector<std::pair<std::string, double>> barrier_seconds;
  Clock::time_point last_mark;
  uint64_t slowest_write_ns = 0;  // the longest any process took to write its image
  uint64_t messages = 0;          // barrier messages to and from processes: O(N) per checkpoint

  void barrier_ended(const std::string& name) {
    Clock::time_point now = Clock::now();
    double seconds = std::chrono::duration<double>(now - last_mark).count();
    last_mark = now;
    if (!barrier_seconds.empty() && barrier_seconds.back().first == name) {
      barrier_seconds.back().second += seconds;
    } else {
      barrier_seconds.emplace_back(name, seconds);
    }
  }
  double write_seconds() const { return static_cast<double>(slowest_write_ns) / 1e9; }
};

// The operation in progress: a sequence of barriers over a fixed set of processes.
struct RunningOp {
  Operation op;
  std::vector<uint64_t> members;         // in a stable order, for the manifest
  std::unordered_set<uint64_t> alive;    // members still connected
  std::string barrier;                   // the barrier under way; "" between barriers
  std::unordered_set<uint64_t> pending;  // members that have not answered it yet
  bool waiting_for_exits = false;        // KILL sent; waiting for disconnects
  Clock::time_point deadline;            // of the barrier or of the wait for exits
  std::string failure;                   // the first failure, one line; "" = none so far
  uint64_t generation = 0;
  std::string generation_dir;
  bool committed = false;  // MANIFEST.json and latest written
  bool resumed = false;    // "resume" done: the computation runs again
  bool aborting = false;   // failed before "resume": "commit" (abort=1) then ends it
  double pause_seconds = 0;  // from sending "suspend" until "resume" was done everywhere
  std::unordered_map<uint64_t, ImageResult> images;
  CheckpointTiming timing;
  // Process trees: each member's live children (real pids) from the "children" barrier; the
  // barrier is repeated until every child is a member, so a child forked as the checkpoint began
  // joins it (late joiners are suspended and brought up to date). A repeat asks only the members
  // that have no answer here: the parents still missing a child, and late joiners.
  std::unordered_map<uint64_t, std::vector<uint32_t>> children;
  std::unordered_set<uint64_t> late_joiners;
  std::optional<Clock::time_point> children_retry;
  Clock::time_point children_deadline;
  // The computation is still being stopped: processes may join (and leave) the checkpoint.
  bool stopping() const {
    return barrier == "suspend" || barrier == "children" || (barrier.empty() && children_retry);
  }
  Clock::time_point started;
  json success;  // the reply once committed
};

// What a process is doing while (sending) and after (done) a barrier.
std::string state_during(const std::string& barrier) {
  if (barrier == "suspend") return "suspending";
  if (barrier == "children") return "suspended";
  if (barrier == "drain") return "draining";
  if (barrier == "checkpoint") return "checkpointing";
  if (barrier == "resume") return "resuming";
  if (barrier == "commit") return "committing";
  if (barrier == "restart") return "restarting";
  return barrier;
}

std::string state_after(const std::string& barrier) {
  if (barrier == "suspend" || barrier == "drain" || barrier == "children") return "suspended";
  if (barrier == "checkpoint") return "checkpointed";
  if (barrier == "resume" || barrier == "commit") return "running";
  if (barrier == "restart") return "restarted";
  return barrier;
}

std::string peer_name(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET) {
    auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    return fmt::format("{}:{}", text, ntohs(v4->sin_port));
  }
  auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
  inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
  return fmt::format("[{}]:{}", text, ntohs(v6->sin6_port));
}

int listen_on(const std::string& host, uint16_t port, uint16_t* bound_port) {
  sockaddr_storage address{};
  socklen_t address_len;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    address_len = sizeof *v4;
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    address_len = sizeof *v6;
  } else {
    throw Error(fmt::format("--host must be a numeric IPv4 or IPv6 address, not '{}'", host));
  }
  int fd = socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(fmt::format("cannot create a socket: {}", errno_text()));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), address_len) != 0) {
    std::string why = errno == EADDRINUSE
                          ? "the port is in use (another coordinator? pick another --port)"
                          : errno_text();
    close(fd);
    throw Error(fmt::format("cannot listen on {}: {}", CoordAddress{host, port}.str(), why));
  }
  if (listen(fd, SOMAXCONN) != 0) {
    close(fd);
    throw Error(fmt::format("cannot listen: {}", errno_text()));
  }
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &address_len) != 0) {
    close(fd);
    throw Error(fmt::format("cannot read the listening address: {}", errno_text()));
  }
  *bound_port = ntohs(address.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
  return fd;
}

void fill_random(uint8_t* out, size_t len) {
  while (len > 0) {
    ssize_t n = getrandom(out, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(fmt::format("getrandom failed: {}", errno_text()));
    out += n;
    len -= static_cast<size_t>(n);
  }
}

// Thousands of processes need thousands of descriptors.
void raise_descriptor_limit() {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

class Coordinator {
 public:
  Coordinator(Options options, const Log& log) : options_(std::move(options)), log_(log) {}

  // Listens, writes the secret and the port file. Throws stasis::Error.
  void start();
  // The event loop; returns the exit status.
  int run();

 private:
  // Connections.
  void accept_clients();
  void add_client(int fd, const sockaddr_storage& address);
  void on_readable(Client& client);
  void on_writable(Client& client);
  void send(Client& client, uint16_t type, uint64_t arg, const void* payload, uint32_t len,
            uint32_t reserved = 0);
  void flush(Client& client);
  void watch_writes(Client& client, bool on);
  void drop(Client& client, const std::string& reason);
  void refuse(Client& client, const std::string& reason);
  void reap();
  Client* find(uint64_t id);

  // Messages.
  void handle_message(Client& client, const StasisMsgHeader& header, const uint8_t* payload);
  void handle_auth(Client& client, const StasisMsgHeader& header, const uint8_t* payload);
  void process_joined(Client& client);
  void learn_plugin_barriers(Client& client);
  void remove_incomplete_generation();
  void handle_command(Client& client, const StasisCommand& command);
  void handle_name_service(Client& client, const StasisMsgHeader& header, const uint8_t* payload);
  void withdraw_names(Client& client, const std::string& prefix = "");
  void reply(uint64_t command_client, bool ok, const json& body);

  // Operations.
  void enqueue(Operation op);
  void start_next_op();
  void start_checkpoint();
  void start_kill();
  void start_restart();
  void join_running_checkpoint(Client& client);
  void check_children();
  void start_barrier(const std::string& name, uint64_t arg);
  void send_barrier(Client& client, const StasisBarrier& barrier, uint64_t arg);
  void barrier_done(Client& client, const StasisBarrierDone& done);
  void barrier_complete();
  void fail(const std::string& why);
  void abandon_checkpoint();
  void commit_checkpoint();
  void kill_members();
  void member_gone(const Client& client);
  void finish_op(bool ok, json body);
  void check_deadlines();
  int next_timeout_ms() const;
  bool idle_after_work() const;
  static constexpr std::chrono::milliseconds kIdleGrace{1000};  // --exit-when-idle waits this long
  std::optional<Clock::time_point> idle_since_;
  static constexpr std::chrono::minutes kRestartPatience{10};
  static constexpr double kChildrenJoinPatienceSeconds = 20;
  std::optional<Clock::time_point> restart_expected_until_;
  json status_json() const;

  Options options_;
  const Log& log_;
  uint8_t secret_[kSecretBytes] = {};
  std::optional<SecretFile> secret_file_;
  Fd listener_;
  Fd epoll_;
  Fd signals_;
  Fd spare_fd_;  // given up to accept-and-close when out of descriptors
  uint16_t port_ = 0;
  std::string compress_;  // --compress / $STASIS_COMPRESS; "" = the processes' default

  uint64_t next_client_id_ = 1;
  std::unordered_map<uint64_t, Client> clients_;
  std::deque<std::pair<Clock::time_point, uint64_t>> handshake_deadlines_;  // in order
  std::vector<uint64_t> dead_;
  size_t process_count_ = 0;
  bool seen_process_ = false;
  bool stop_ = false;

  std::deque<Operation> queue_;
  std::optional<RunningOp> running_;
  std::map<uint64_t, std::vector<uint64_t>> restart_groups_;  // generation -> waiting processes
  struct NameEntry {
    std::string value;
    uint64_t owner = 0;  // the process that published it (0: a command; stays until replaced)
  };
  std::map<std::string, NameEntry> names_;  // ordered: NS_LIST walks a prefix
  struct NameWaiter {
    uint64_t client = 0, arg = 0;
  };
  std::multimap<std::string, NameWaiter> name_waiters_;  // NS_WAIT for keys not published yet
  std::optional<Clock::time_point> next_interval_;
  std::vector<std::string> plugin_barriers_;  // run between "drain" and "checkpoint"
  json last_checkpoint_ = nullptr;
  uint64_t checkpoints_done_ = 0;
  // The newest generation this coordinator completed: the parent incremental images may name.
  uint64_t newest_complete_ = 0;
};

void Coordinator::start() {
  raise_descriptor_limit();
  signal(SIGPIPE, SIG_IGN);

  const char* env_secret = std::getenv("STASIS_SECRET");
  if (env_secret != nullptr && *env_secret != '\0') {
    if (strlen(env_secret) != 2 * kSecretBytes ||
        stasis_hex_decode(env_secret, secret_, kSecretBytes) != 0) {
      throw Error("STASIS_SECRET must be 64 hex digits (32 bytes)");
    }
  } else {
    fill_random(secret_, kSecretBytes);
  }

  compress_ = options_.compress;
  if (compress_.empty()) {
    const char* env = std::getenv("STASIS_COMPRESS");
    if (env != nullptr) compress_ = env;
  }
  if (!compress_.empty() && !image::is_compression_name(compress_)) {
    throw Error(fmt::format("compression must be {}, not '{}'", image::kCompressionChoices, compress_));
  }

  make_private_dirs(options_.ckpt_dir);
  if (auto manifest = read_latest_manifest(options_.ckpt_dir)) {
    uint64_t generation = manifest->value("generation", uint64_t{0});
    last_checkpoint_ = {{"generation", generation},
                        {"dir", options_.ckpt_dir + "/" + generation_name(generation)},
                        {"unix_time", manifest->value("unix_time", int64_t{0})},
                        {"seconds", manifest->value("seconds", 0.0)}};
  }

  listener_.reset(listen_on(options_.host, options_.port, &port_));
  secret_file_.emplace(secret_path(CoordAddress{options_.host, port_}), secret_);

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
  signals_.reset(signalfd(-1, &stop_signals, SFD_NONBLOCK | SFD_CLOEXEC));
  epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
  if (signals_.get() < 0 || epoll_.get() < 0) {
    throw Error(fmt::format("cannot set up the event loop: {}", errno_text()));
  }
  epoll_event listen_event{.events = EPOLLIN, .data = {.u64 = kListenerTag}};
  epoll_event signal_event{.events = EPOLLIN, .data = {.u64 = kSignalTag}};
  epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listener_.get(), &listen_event);
  epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, signals_.get(), &signal_event);
  spare_fd_.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));

  if (!options_.port_file.empty()) {
    write_file_durably(options_.port_file, fmt::format("{}\n", port_));
  }
  if (options_.interval > 0) next_interval_ = after_seconds(options_.interval);
  log_.line(fmt::format("coordinator {} listening on {} (pid {}), checkpoints in {}",
                        STASIS_VERSION, CoordAddress{options_.host, port_}.str(), getpid(),
                        options_.ckpt_dir));
}

int Coordinator::run() {
  std::vector<epoll_event> events(256);
  while (!stop_) {
    int n =
        epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), next_timeout_ms());
    if (n < 0 && errno != EINTR) throw Error(fmt::format("epoll_wait: {}", errno_text()));
    for (int i = 0; i < n; i++) {
      uint64_t tag = events[i].data.u64;
      if (tag == kListenerTag) {
        accept_clients();
      } else if (tag == kSignalTag) {
        signalfd_siginfo info;
        if (read(signals_.get(), &info, sizeof info) == sizeof info) {
          log_.line(fmt::format("received SIG{}, exiting", sigabbrev_np(info.ssi_signo)));
          stop_ = true;
        }
      } else if (Client* client = find(tag); client != nullptr && !client->dead) {
        if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(*client);
        if (!client->dead && (events[i].events & EPOLLOUT)) on_writable(*client);
      }
    }
    check_deadlines();
    reap();
    // Idle for a moment, not an instant: a process that execs leaves and joins again, and the
    // program it becomes joins from its own thread a little later.
    if (options_.exit_when_idle && !idle_after_work()) idle_since_.reset();
    if (options_.exit_when_idle && idle_after_work()) {
      if (!idle_since_) idle_since_ = Clock::now();
      if (Clock::now() - *idle_since_ >= kIdleGrace) {
        log_.line("every process has left; exiting");
        break;
      }
    }
  }
  // Replies already queued (a kill's answer, say) deserve a last chance to leave.
  for (auto& [id, client] : clients_) {
    if (client.out.empty()) continue;
    int flags = fcntl(client.fd, F_GETFL);
    fcntl(client.fd, F_SETFL, flags & ~O_NONBLOCK);
    timeval timeout{.tv_sec = 1, .tv_usec = 0};
    setsockopt(client.fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    ssize_t ignored = ::send(client.fd, client.out.data(), client.out.size(), MSG_NOSIGNAL);
    (void)ignored;
  }
  for (auto& [id, client] : clients_) close(client.fd);
  clients_.clear();
  return 0;
}

Client* Coordinator::find(uint64_t id) {
  auto it = clients_.find(id);
  return it == clients_.end() ? nullptr : &it->second;
}

// ---- connections ----

void Coordinator::accept_clients() {
  for (;;) {
    sockaddr_storage address{};
    socklen_t address_len = sizeof address;
    int fd = accept4(listener_.get(), reinterpret_cast<sockaddr*>(&address), &address_len,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      add_client(fd, address);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EMFILE || errno == ENFILE) {
      // Accept and close with the spare descriptor, or the listener stays readable forever.
      log_.line("out of file descriptors: refusing a connection");
      spare_fd_.reset(-1);
      int doomed = accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (doomed >= 0) close(doomed);
      spare_fd_.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
      continue;
    }
    return;  // EAGAIN, or an error the next readiness will report again
  }
}

void Coordinator::add_client(int fd, const sockaddr_storage& address) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  uint64_t id = next_client_id_++;
  Client& client = clients_[id];
  client.id = id;
  client.fd = fd;
  client.peer = peer_name(address);
  epoll_event event{.events = EPOLLIN, .data = {.u64 = id}};
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) != 0) {
    drop(client, fmt::format("epoll_ctl: {}", errno_text()));
    return;
  }
  fill_random(client.nonce, sizeof client.nonce);
  StasisHello hello{};
  memcpy(hello.nonce, client.nonce, sizeof hello.nonce);
  hello.coordinator_pid = static_cast<uint32_t>(getpid());
  send(client, STASIS_MSG_HELLO, 0, &hello, sizeof hello);
  handshake_deadlines_.emplace_back(after_seconds(options_.handshake_timeout), id);
}

void Coordinator::on_readable(Client& client) {
  uint8_t buffer[65536];
  ssize_t n = read(client.fd, buffer, sizeof buffer);
  if (n == 0) {
    // A silent connect-and-close is someone checking that we listen: not worth a log line. A
    // process joins from its checkpoint thread, which an exec or exit may end mid-handshake.
    if (client.role == Role::Handshake && !client.in.empty()) {
      log_.line(fmt::format("connection from {} closed during the handshake (a process that "
                            "exec'd or ended as it joined, or not one of ours)", client.peer));
    }
    drop(client, "");
    return;
  }
  if (n < 0) {
    if (errno != EAGAIN && errno != EINTR) drop(client, errno_text());
    return;
  }
  client.in.insert(client.in.end(), buffer, buffer + n);

  size_t consumed = 0;
  while (!client.dead && !client.refused) {
    size_t available = client.in.size() - consumed;
    if (available < sizeof(StasisMsgHeader)) break;
    StasisMsgHeader header;
    memcpy(&header, client.in.data() + consumed, sizeof header);
    if (header.magic != STASIS_PROTOCOL_MAGIC || header.version != STASIS_PROTOCOL_VERSION ||
        header.payload_len > STASIS_MAX_PAYLOAD) {
      if (client.role == Role::Handshake) {
        refuse(client, "not speaking the stasis protocol");
      } else {
        drop(client, "protocol error: malformed message header");
      }
      break;
    }
    // Judge a handshake by its header alone: no buffering a megabyte for a stranger.
    if (client.role == Role::Handshake &&
        (header.type != STASIS_MSG_AUTH || header.payload_len != sizeof(StasisAuth))) {
      refuse(client, "protocol error: expected AUTH");
      break;
    }
    if (available < sizeof header + header.payload_len) break;
    handle_message(client, header, client.in.data() + consumed + sizeof header);
    consumed += sizeof header + header.payload_len;
  }
  client.in.erase(client.in.begin(), client.in.begin() + static_cast<ptrdiff_t>(consumed));
}

void Coordinator::on_writable(Client& client) { flush(client); }

void Coordinator::send(Client& client, uint16_t type, uint64_t arg, const void* payload,
                       uint32_t len, uint32_t reserved) {
  if (client.dead) return;
  StasisMsgHeader header{};
  header.magic = STASIS_PROTOCOL_MAGIC;
  header.version = STASIS_PROTOCOL_VERSION;
  header.type = type;
  header.payload_len = len;
  header.reserved = reserved;
  header.arg = arg;
  client.out.append(reinterpret_cast<const char*>(&header), sizeof header);
  if (len > 0) client.out.append(static_cast<const char*>(payload), len);
  flush(client);
}

void Coordinator::flush(Client& client) {
  size_t sent = 0;
  while (sent < client.out.size()) {
    ssize_t n = ::send(client.fd, client.out.data() + sent, client.out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    } else {
      client.out.clear();
      drop(client, client.refused ? "refused" : errno_text());
      return;
    }
  }
  client.out.erase(0, sent);
  watch_writes(client, !client.out.empty());
  if (client.out.empty() && client.refused && !client.dead) drop(client, "refused");
}

void Coordinator::watch_writes(Client& client, bool on) {
  if (client.watching_writes == on) return;
  epoll_event event{.events = EPOLLIN | (on ? EPOLLOUT : 0u), .data = {.u64 = client.id}};
  epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, client.fd, &event);
  client.watching_writes = on;
}

// Closing is deferred to reap() so that no handler sees a client vanish under it.
void Coordinator::drop(Client& client, const std::string& reason) {
  if (client.dead) return;
  client.dead = true;
  client.dead_reason = reason;
  dead_.push_back(client.id);
}

void Coordinator::refuse(Client& client, const std::string& reason) {
  if (client.refused || client.dead) return;
  log_.line(fmt::format("refused connection from {}: {}", client.peer, reason));
  client.refused = true;
  send(client, STASIS_MSG_AUTH_FAIL, 0, reason.data(), static_cast<uint32_t>(reason.size()));
  if (client.out.empty() && !client.dead) drop(client, "refused");
}

void Coordinator::reap() {
  while (!dead_.empty()) {
    uint64_t id = dead_.back();
    dead_.pop_back();
    auto it = clients_.find(id);
    if (it == clients_.end()) continue;
    Client& client = it->second;
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, client.fd, nullptr);
    close(client.fd);
    withdraw_names(client);
    std::erase_if(name_waiters_, [&](const auto& waiter) { return waiter.second.client == id; });
    if (client.role == Role::Process) {
      process_count_--;
      log_.line(fmt::format("process left: {}{}", client.describe(),
                            client.dead_reason.empty() ? "" : ": " + client.dead_reason));
      if (client.info.restarted) {
        auto group = restart_groups_.find(client.info.restarted_generation);
        if (group != restart_groups_.end()) std::erase(group->second, id);
      }
      member_gone(client);
    } else if (client.role == Role::Command && !client.dead_reason.empty()) {
      log_.line(
          fmt::format("command connection from {} dropped: {}", client.peer, client.dead_reason));
    }
    clients_.erase(it);
  }
}

// ---- messages ----

void Coordinator::handle_message(Client& client, const StasisMsgHeader& header,
                                 const uint8_t* payload) {
  if (client.role == Role::Handshake) {
    handle_auth(client, header, payload);
    return;
  }
  switch (header.type) {
    case STASIS_MSG_BARRIER_DONE: {
      StasisBarrierDone done;
      if (client.role != Role::Process || header.payload_len != sizeof done) {
        drop(client, "protocol error: malformed BARRIER_DONE");
        return;
      }
      memcpy(&done, payload, sizeof done);
      if (running_) running_->timing.messages++;
      barrier_done(client, done);
      return;
    }
    case STASIS_MSG_CHILDREN:
      if (client.role == Role::Process && running_ && header.payload_len % sizeof(uint32_t) == 0) {
        running_->timing.messages++;
        std::vector<uint32_t>& children = running_->children[client.id];
        children.resize(header.payload_len / sizeof(uint32_t));
        memcpy(children.data(), payload, header.payload_len);
      }
      return;
    case STASIS_MSG_REQUEST_CHECKPOINT:
      // A checkpoint already under way that includes this process satisfies the request.
      if (running_ && running_->op.kind == OpKind::Checkpoint &&
          running_->alive.count(client.id) > 0) {
        return;
      }
      log_.line(fmt::format("checkpoint requested by {}", client.describe()));
      enqueue(Operation{.kind = OpKind::Checkpoint});
      return;
    case STASIS_MSG_COMMAND: {
      StasisCommand command;
      if (client.role != Role::Command || header.payload_len != sizeof command) {
        drop(client, "protocol error: malformed COMMAND");
        return;
      }
      memcpy(&command, payload, sizeof command);
      handle_command(client, command);
      return;
    }
    case STASIS_MSG_NS_PUBLISH:
    case STASIS_MSG_NS_LOOKUP:
    case STASIS_MSG_NS_WAIT:
    case STASIS_MSG_NS_LIST:
    case STASIS_MSG_NS_WITHDRAW:
      handle_name_service(client, header, payload);
      return;
    default:
      log_.line(fmt::format("ignoring message type {} from {}", header.type, client.peer));
  }
}

void Coordinator::handle_auth(Client& client, const StasisMsgHeader&, const uint8_t* payload) {
  StasisAuth auth;
  memcpy(&auth, payload, sizeof auth);
  if (auth.role != STASIS_ROLE_PROCESS && auth.role != STASIS_ROLE_COMMAND) {
    refuse(client, fmt::format("protocol error: unknown role {}", auth.role));
    return;
  }
  uint8_t expected[STASIS_MAC_BYTES];
  stasis_auth_mac(secret_, sizeof secret_, client.nonce, auth.role, expected);
  if (!stasis_mac_equal(expected, auth.mac, sizeof expected)) {
    refuse(client, "bad secret");
    return;
  }
  StasisAuthOk ok{.client_id = client.id};
  send(client, STASIS_MSG_AUTH_OK, 0, &ok, sizeof ok);
  if (auth.role == STASIS_ROLE_COMMAND) {
    client.role = Role::Command;
    return;
  }
  client.role = Role::Process;
  client.info = auth.process;
  // Strings from the wire are only trusted once terminated.
  client.info.hostname[sizeof client.info.hostname - 1] = '\0';
  client.info.program[sizeof client.info.program - 1] = '\0';
  client.info.ckpt_dir[sizeof client.info.ckpt_dir - 1] = '\0';
  client.info.compress[sizeof client.info.compress - 1] = '\0';
  process_joined(client);
}

// Plugins add barriers to the checkpoint sequence; names that clash with the built-in ones, or
// are not plain words, are ignored (and logged) rather than trusted.
void Coordinator::learn_plugin_barriers(Client& client) {
  client.info.plugin_barriers[sizeof client.info.plugin_barriers - 1] = '\0';
  std::string list = client.info.plugin_barriers;
  size_t start = 0;
  while (start < list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string name = list.substr(start, end - start);
    start = end + 1;
    static const std::set<std::string> kBuiltIn = {"suspend", "drain", "checkpoint", "resume",
                                                   "commit", "restart", "children"};
    bool plain = !name.empty() && name.size() < 32 &&
                 std::all_of(name.begin(), name.end(), [](char c) {
                   return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
                 });
    if (!plain || kBuiltIn.count(name)) {
      log_.line(fmt::format("ignoring plugin barrier '{}' from {}", name, client.describe()));
      continue;
    }
    if (std::find(plugin_barriers_.begin(), plugin_barriers_.end(), name) == plugin_barriers_.end()) {
      plugin_barriers_.push_back(name);
      log_.line(fmt::format("checkpoints now include the plugin barrier '{}'", name));
    }
  }
}

void Coordinator::process_joined(Client& client) {
  process_count_++;
  seen_process_ = true;
  const StasisProcessInfo& info = client.info;
  std::string where = fmt::format("{} on {} from {}", client.describe(),
                                  bounded(info.hostname, sizeof info.hostname), client.peer);
  if (info.ckpt_dir[0] != '\0' && options_.ckpt_dir != info.ckpt_dir) {
    log_.line(
        fmt::format("note: {} asked for checkpoints in {}, but this coordinator writes "
                    "them to {}",
                    client.describe(), info.ckpt_dir, options_.ckpt_dir));
  }
  learn_plugin_barriers(client);
  if (options_.interval <= 0 && info.interval_seconds > 0) {
    options_.interval = info.interval_seconds;
    next_interval_ = after_seconds(options_.interval);
    log_.line(fmt::format("checkpointing every {} s, as {} asked", options_.interval,
                          client.describe()));
  }
  if (!info.restarted) {
    client.in_computation = true;
    client.state = "running";
    log_.line(fmt::format("process joined: {}", where));
    join_running_checkpoint(client);
    return;
  }
  client.state = "restarting";
  auto& group = restart_groups_[info.restarted_generation];
  group.push_back(client.id);
  size_t expected = std::max<uint32_t>(1, info.restart_process_count);
  log_.line(fmt::format("process joined: {}, restarted from generation {} ({} of {})", where,
                        info.restarted_generation, group.size(), expected));
  if (group.size() >= expected) {
    Operation op{.kind = OpKind::Restart};
    op.restart_generation = info.restarted_generation;
    op.restart_members = std::move(group);
    restart_groups_.erase(info.restarted_generation);
    if (restart_groups_.empty()) restart_expected_until_.reset();
    enqueue(std::move(op));
  }
}

// A process that joins while a checkpoint is still stopping the computation (a child forked, or
// a program exec'd, as it began) is taken into it: suspended now, and asked for its children
// with the others. Later joiners wait for the next checkpoint.
void Coordinator::join_running_checkpoint(Client& client) {
  if (!running_ || running_->op.kind != OpKind::Checkpoint) return;
  RunningOp& op = *running_;
  if (!op.stopping() || !op.failure.empty()) return;
  op.members.push_back(client.id);
  op.alive.insert(client.id);
  op.late_joiners.insert(client.id);
  log_.line(fmt::format("{} joins checkpoint {} under way", client.describe(), op.generation));
  StasisBarrier barrier{};
  copy_field(barrier.name, "suspend");
  send_barrier(client, barrier, op.generation);
  if (op.barrier == "suspend") {
    op.pending.insert(client.id);
  } else if (op.barrier == "children") {
    copy_field(barrier.name, "children");
    send_barrier(client, barrier, op.generation);
    op.pending.insert(client.id);
  }
}

// After the "children" barrier: every live child of every member must be a member.
void Coordinator::check_children() {
  RunningOp& op = *running_;
  std::set<std::pair<std::string, uint32_t>> members;
  for (uint64_t id : op.alive) {
    const Client& c = clients_.at(id);
    members.insert({bounded(c.info.hostname, sizeof c.info.hostname), c.info.pid});
  }
  std::string missing;
  size_t missing_count = 0;
  std::vector<uint64_t> incomplete_parents;
  for (const auto& [id, kids] : op.children) {
    if (op.alive.count(id) == 0) continue;
    const Client& parent = clients_.at(id);
    std::string host = bounded(parent.info.hostname, sizeof parent.info.hostname);
    size_t missing_before = missing_count;
    for (uint32_t pid : kids)
      if (!members.count({host, pid})) {
        if (missing_count++ == 0) missing = fmt::format("pid {} (a child of {})", pid, parent.describe());
      }
    if (missing_count > missing_before) incomplete_parents.push_back(id);
  }
  if (missing_count == 0) {
    op.children.clear();
    std::erase_if(op.members, [&](uint64_t id) { return op.alive.count(id) == 0; });
    start_barrier("drain", op.generation);
    return;
  }
  if (Clock::now() >= op.children_deadline) {
    fail(fmt::format("{}{} not running under Stasis (a static program, or one started with its "
                     "environment cleared?); a process tree is checkpointed only as a whole",
                     missing, missing_count > 1 ? fmt::format(" and {} more are", missing_count - 1)
                                                : std::string(" is")));
    abandon_checkpoint();
    return;
  }
  // Only these are asked again (with late joiners): a suspended process forks no new child.
  for (uint64_t id : incomplete_parents) op.children.erase(id);
  op.children_retry = Clock::now() + std::chrono::milliseconds(20);
}

void Coordinator::handle_command(Client& client, const StasisCommand& command) {
  switch (command.verb) {
    case STASIS_CMD_STATUS:
      reply(client.id, true, status_json());
      return;
    case STASIS_CMD_EXPECT_RESTART:
      restart_expected_until_ = Clock::now() + kRestartPatience;
      reply(client.id, true, {{"ok", true}});
      return;
    case STASIS_CMD_CHECKPOINT: {
      std::string compress = bounded(command.compress, sizeof command.compress);
      if (!compress.empty() && !image::is_compression_name(compress)) {
        reply(client.id, false,
              {{"ok", false},
               {"error", fmt::format("compression must be {}, not '{}'", image::kCompressionChoices,
                                     compress)}});
        return;
      }
      log_.line(fmt::format("checkpoint{} requested by a command from {}",
                            command.kill_after ? " (then kill)" : "", client.peer));
      enqueue(Operation{.kind = OpKind::Checkpoint,
                        .kill_after = command.kill_after != 0,
                        .full = command.full != 0,
                        .compress = compress,
                        .waiters = {client.id}});
      return;
    }
    case STASIS_CMD_KILL:
      log_.line(fmt::format("kill requested by a command from {}", client.peer));
      enqueue(Operation{.kind = OpKind::Kill, .waiters = {client.id}});
      return;
    default:
      reply(client.id, false,
            {{"ok", false}, {"error", fmt::format("unknown command verb {}", command.verb)}});
  }
}

void Coordinator::handle_name_service(Client& client, const StasisMsgHeader& header,
                                      const uint8_t* payload) {
  const char* text = reinterpret_cast<const char*>(payload);
  size_t key_len = strnlen(text, header.payload_len);
  std::string key(text, key_len);
  switch (header.type) {
    case STASIS_MSG_NS_PUBLISH: {
      size_t value_start = std::min<size_t>(key_len + 1, header.payload_len);
      uint64_t owner = client.role == Role::Process ? client.id : 0;
      NameEntry& entry = names_[key];
      entry = {std::string(text + value_start, header.payload_len - value_start), owner};
      if (owner) client.published.push_back(key);
      auto [first, last] = name_waiters_.equal_range(key);
      for (auto it = first; it != last; ++it)
        if (Client* waiter = find(it->second.client); waiter && !waiter->dead)
          send(*waiter, STASIS_MSG_NS_REPLY, it->second.arg, entry.value.data(),
               static_cast<uint32_t>(entry.value.size()), 0);
      name_waiters_.erase(first, last);
      return;
    }
    case STASIS_MSG_NS_WITHDRAW:
      withdraw_names(client, key);
      return;
    case STASIS_MSG_NS_LIST: {
      std::string reply;
      for (auto it = names_.lower_bound(key); it != names_.end() && it->first.starts_with(key); ++it) {
        auto length = static_cast<uint32_t>(it->second.value.size());
        reply.append(it->first).push_back('\0');
        reply.append(reinterpret_cast<const char*>(&length), sizeof length).append(it->second.value);
        if (reply.size() > STASIS_MAX_PAYLOAD) break;
      }
      bool complete = reply.size() <= STASIS_MAX_PAYLOAD;
      send(client, STASIS_MSG_NS_REPLY, header.arg, reply.data(),
           complete ? static_cast<uint32_t>(reply.size()) : 0, complete ? 0 : 1);
      return;
    }
    default: {  // NS_LOOKUP, NS_WAIT
      auto it = names_.find(key);
      if (it != names_.end()) {
        send(client, STASIS_MSG_NS_REPLY, header.arg, it->second.value.data(),
             static_cast<uint32_t>(it->second.value.size()), 0);
      } else if (header.type == STASIS_MSG_NS_WAIT) {
        name_waiters_.emplace(key, NameWaiter{client.id, header.arg});
      } else {
        send(client, STASIS_MSG_NS_REPLY, header.arg, nullptr, 0, 1);
      }
    }
  }
}

void Coordinator::withdraw_names(Client& client, const std::string& prefix) {
  std::erase_if(client.published, [&](const std::string& key) {
    if (!key.starts_with(prefix)) return false;
    if (auto it = names_.find(key); it != names_.end() && it->second.owner == client.id) names_.erase(it);
    return true;
  });
}

void Coordinator::reply(uint64_t command_client, bool ok, const json& body) {
  Client* client = find(command_client);
  if (client == nullptr || client->dead) return;
  std::string text = body.dump();
  send(*client, STASIS_MSG_COMMAND_REPLY, ok ? 0 : 1, text.data(),
       static_cast<uint32_t>(text.size()));
}

// ---- operations ----

void Coordinator::enqueue(Operation op) {
  if (op.kind == OpKind::Checkpoint) {
    // Identical requests waiting their turn become one checkpoint with several waiters.
    for (Operation& queued : queue_) {
      if (queued.kind == OpKind::Checkpoint && queued.kill_after == op.kill_after &&
          queued.full == op.full && queued.compress == op.compress) {
        queued.waiters.insert(queued.waiters.end(), op.waiters.begin(), op.waiters.end());
        return;
      }
    }
  }
  queue_.push_back(std::move(op));
  start_next_op();
}

void Coordinator::start_next_op() {
  while (!running_ && !queue_.empty()) {
    running_.emplace();
    running_->op = std::move(queue_.front());
    running_->started = Clock::now();
    running_->timing.last_mark = running_->started;
    queue_.pop_front();
    switch (running_->op.kind) {
      case OpKind::Checkpoint:
        start_checkpoint();
        break;
      case OpKind::Kill:
        start_kill();
        break;
      case OpKind::Restart:
        start_restart();
        break;
    }
  }
}

void Coordinator::start_checkpoint() {
  RunningOp& op = *running_;
  for (auto& [id, client] : clients_) {
    if (client.role == Role::Process && client.in_computation && !client.dead) {
      op.members.push_back(id);
    }
  }
  if (op.members.empty()) {
    finish_op(false, {{"ok", false}, {"error", "no processes are connected to this coordinator"}});
    return;
  }
  std::sort(op.members.begin(), op.members.end());
  op.alive.insert(op.members.begin(), op.members.end());
  op.generation = next_generation(options_.ckpt_dir);
  op.generation_dir = options_.ckpt_dir + "/" + generation_name(op.generation);
  if (mkdir(op.generation_dir.c_str(), 0700) != 0) {
    std::string why = fmt::format("cannot create {}: {}", op.generation_dir, errno_text());
    log_.line("checkpoint failed: " + why);
    finish_op(false, {{"ok", false}, {"error", why}});
    return;
  }
  log_.line(fmt::format("checkpoint {} started: {} process{}", op.generation, op.members.size(),
                        op.members.size() == 1 ? "" : "es"));
  start_barrier("suspend", op.generation);
}

void Coordinator::start_kill() {
  RunningOp& op = *running_;
  for (auto& [id, client] : clients_) {
    if (client.role == Role::Process && !client.dead) op.members.push_back(id);
  }
  if (op.members.empty()) {
    finish_op(false, {{"ok", false}, {"error", "no processes are connected to this coordinator"}});
    return;
  }
  op.alive.insert(op.members.begin(), op.members.end());
  log_.line(
      fmt::format("killing {} process{}", op.members.size(), op.members.size() == 1 ? "" : "es"));
  kill_members();
}

void Coordinator::start_restart() {
  RunningOp& op = *running_;
  for (uint64_t id : op.op.restart_members) {
    Client* client = find(id);
    if (client != nullptr && !client->dead) op.members.push_back(id);
  }
  if (op.members.empty()) {
    finish_op(false, nullptr);
    return;
  }
  op.alive.insert(op.members.begin(), op.members.end());
  log_.line(fmt::format("restart of generation {}: {} process{} connected",
                        op.op.restart_generation, op.members.size(),
                        op.members.size() == 1 ? "" : "es"));
  start_barrier("restart", op.op.restart_generation);
}

void Coordinator::start_barrier(const std::string& name, uint64_t arg) {
  RunningOp& op = *running_;
  op.barrier = name;
  op.pending.clear();
  for (uint64_t id : op.alive) {
    // A repeated "children" barrier asks only the members that have not answered it.
    if (name != "children" || op.children.count(id) == 0) op.pending.insert(id);
  }
  op.deadline = after_seconds(options_.barrier_timeout);
  StasisBarrier barrier{};
  copy_field(barrier.name, name);
  // Every barrier of a checkpoint names its directory: plugins that share objects between
  // processes decide there, before "checkpoint", who saves them (plugins/ipc/sysv.cc at "drain").
  copy_field(barrier.ckpt_dir, op.generation_dir);
  if (name == "checkpoint") {
    copy_field(barrier.compress, op.op.compress.empty() ? compress_ : op.op.compress);
    barrier.kill_after = op.op.kill_after ? 1 : 0;
    // Processes that track their dirty pages since that generation's images write increments.
    barrier.parent_generation = op.op.full ? 0 : newest_complete_;
  }
  if (name == "commit") barrier.abort = op.failure.empty() ? 0 : 1;
  for (uint64_t id : op.members) {
    if (op.pending.count(id) > 0) send_barrier(clients_.at(id), barrier, arg);
  }
  if (op.pending.empty()) barrier_complete();
}

void Coordinator::send_barrier(Client& client, const StasisBarrier& barrier, uint64_t arg) {
  client.state = state_during(barrier.name);
  running_->timing.messages++;
  send(client, STASIS_MSG_BARRIER, arg, &barrier, sizeof barrier);
}

void Coordinator::barrier_done(Client& client, const StasisBarrierDone& done) {
  std::string name = bounded(done.name, sizeof done.name);
  if (running_ && running_->late_joiners.count(client.id) && name == "suspend" &&
      running_->barrier != "suspend") {  // a late joiner catching up
    if (done.status != 0)
      fail(fmt::format("process {} failed to suspend: {}", client.describe(),
                       bounded(done.message, sizeof done.message)));
    return;
  }
  if (!running_ || running_->barrier != name || running_->pending.count(client.id) == 0) {
    log_.line(
        fmt::format("ignoring an unexpected BARRIER_DONE \"{}\" from {}", name, client.describe()));
    return;
  }
  RunningOp& op = *running_;
  op.pending.erase(client.id);
  if (done.status != 0) {
    std::string message = bounded(done.message, sizeof done.message);
    std::replace(message.begin(), message.end(), '\n', ' ');
    if (message.empty()) message = fmt::format("error {}", done.status);
    client.state = "failed " + name;
    fail(fmt::format("process {} failed to {}: {}", client.describe(), name, message));
  } else {
    client.state = state_after(name);
    // The image is named at "checkpoint" (written in place) or at "commit" (a forked writer
    // finished it); the later answer wins.
    if ((name == "checkpoint" || name == "commit") && done.image_path[0] != '\0') {
      op.images[client.id] = ImageResult{bounded(done.image_path, sizeof done.image_path),
                                         done.image_bytes, done.memory_bytes,
                                         done.parent_generation};
      op.timing.slowest_write_ns = std::max(op.timing.slowest_write_ns, done.write_nanoseconds);
    }
  }
  if (op.pending.empty()) barrier_complete();
}

// Records the first failure; a checkpoint that has one is abandoned after the current barrier.
void Coordinator::fail(const std::string& why) {
  log_.line(why);
  if (running_ && running_->failure.empty()) running_->failure = why;
}

void Coordinator::barrier_complete() {
  RunningOp& op = *running_;
  std::string finished = op.barrier;
  op.barrier.clear();
  op.pending.clear();
  op.timing.barrier_ended(finished);

  if (op.op.kind == OpKind::Restart) {
    if (finished == "restart") {
      start_barrier("resume", op.op.restart_generation);
      return;
    }
    for (uint64_t id : op.alive) clients_.at(id).in_computation = true;
    log_.line(fmt::format("restart of generation {} complete: {} process{} running",
                          op.op.restart_generation, op.alive.size(),
                          op.alive.size() == 1 ? "" : "es"));
    finish_op(true, nullptr);
    return;
  }

  // A checkpoint: suspend, drain, plugin barriers, checkpoint (each process has its snapshot:
  // written, or being written by a forked writer), resume, commit (every image is durable),
  // then MANIFEST.json and `latest`. With --kill: checkpoint, commit, KILL (no resume).
  if (finished == "resume") {
    op.resumed = true;
    op.pause_seconds = round_ms(seconds_since(op.started));
    // After a failure too: "commit" then carries abort=1, so forked writers are stopped and
    // reaped and nobody waits for an image that will not count.
    start_barrier("commit", op.generation);
    return;
  }
  if (finished == "commit" && (op.aborting || !op.failure.empty())) {
    remove_incomplete_generation();
    if (op.resumed) {
      finish_op(false, {{"ok", false}, {"error", op.failure}});
    } else {
      start_barrier("resume", op.generation);  // --kill whose commit failed: keep running
    }
    return;
  }
  if (!op.failure.empty()) {
    abandon_checkpoint();
    return;
  }
  if (finished == "suspend") {
    // A child forked as the checkpoint began joins within moments; one that has not by then
    // never will (it runs without Stasis): no reason to hold the computation for the barrier
    // timeout.
    op.children_deadline = after_seconds(std::min(options_.barrier_timeout, kChildrenJoinPatienceSeconds));
    start_barrier("children", op.generation);
  } else if (finished == "children") {
    check_children();
  } else if (finished == "checkpoint") {
    start_barrier(op.op.kill_after ? "commit" : "resume", op.generation);
  } else if (finished == "commit") {
    commit_checkpoint();
  } else {
    // "drain", then the barriers plugins added (in the order processes declared them).
    auto at = std::find(plugin_barriers_.begin(), plugin_barriers_.end(), finished);
    auto next = finished == "drain" ? plugin_barriers_.begin() : at + (at != plugin_barriers_.end());
    start_barrier(next == plugin_barriers_.end() ? "checkpoint" : *next, op.generation);
  }
}

// The computation keeps running; the partial generation disappears.
void Coordinator::abandon_checkpoint() {
  RunningOp& op = *running_;
  remove_incomplete_generation();
  if (op.resumed) {  // only "commit" can fail after "resume": nothing is left to run
    finish_op(false, {{"ok", false}, {"error", op.failure}});
    return;
  }
  log_.line(fmt::format("checkpoint {} failed after {:.3f} s; resuming", op.generation,
                        seconds_since(op.started)));
  op.aborting = true;
  start_barrier("resume", op.generation);
}

void Coordinator::remove_incomplete_generation() {
  RunningOp& op = *running_;
  if (!remove_tree(op.generation_dir)) {
    log_.line(fmt::format("could not remove the incomplete checkpoint {}", op.generation_dir));
  }
}

void Coordinator::commit_checkpoint() {
  RunningOp& op = *running_;
  Manifest manifest;
  manifest.generation = op.generation;
  manifest.unix_time = time(nullptr);
  manifest.coordinator_host = options_.host;
  manifest.coordinator_port = port_;
  json images = json::array();
  uint64_t image_bytes = 0;
  uint64_t memory_bytes = 0;
  for (uint64_t id : op.members) {
    const Client& client = clients_.at(id);
    const ImageResult& image = op.images.at(id);
    std::string path = image.path;
    if (!path.empty() && path.front() != '/') path = op.generation_dir + "/" + path;
    manifest.processes.push_back(
        ManifestProcess{.pid = client.info.pid,
                        .original_pid = client.info.original_pid,
                        .host = bounded(client.info.hostname, sizeof client.info.hostname),
                        .address = client.peer.substr(0, client.peer.rfind(':')),
                        .program = bounded(client.info.program, sizeof client.info.program),
                        .image = std::filesystem::path(path).filename().string(),
                        .image_bytes = image.image_bytes,
                        .memory_bytes = image.memory_bytes,
                        .parent_generation = image.parent_generation});
    images.push_back(path);
    image_bytes += image.image_bytes;
    memory_bytes += image.memory_bytes;
  }
  manifest.seconds = round_ms(seconds_since(op.started));
  try {
    write_manifest(options_.ckpt_dir, manifest);
    point_latest(options_.ckpt_dir, op.generation);
  } catch (const Error& e) {
    fail(fmt::format("checkpoint {} could not be recorded: {}", op.generation, e.what()));
    abandon_checkpoint();
    return;
  }
  op.committed = true;
  newest_complete_ = op.generation;
  checkpoints_done_++;
  last_checkpoint_ = {{"generation", op.generation},
                      {"dir", op.generation_dir},
                      {"unix_time", manifest.unix_time},
                      {"seconds", manifest.seconds}};
  op.success = {{"ok", true},
                {"generation", op.generation},
                {"dir", op.generation_dir},
                {"images", images},
                {"seconds", manifest.seconds},
                {"image_bytes", image_bytes},
                {"memory_bytes", memory_bytes},
                {"pause_seconds", op.pause_seconds},
                {"write_seconds", round_ms(op.timing.write_seconds())},
                {"coordination_seconds", round_ms(manifest.seconds - op.timing.write_seconds())},
                {"messages", op.timing.messages}};
  json barrier_seconds = json::object();
  std::string barrier_times;
  for (const auto& [name, seconds] : op.timing.barrier_seconds) {
    barrier_seconds[name] = round_ms(seconds);
    barrier_times += fmt::format("{}{} {:.3f}", barrier_times.empty() ? "" : ", ", name, seconds);
  }
  op.success["barrier_seconds"] = barrier_seconds;
  // One line per checkpoint, never one per process: bench/coordination_time.py reads it.
  log_.line(fmt::format("checkpoint {} timing: {} process{}, {} messages; barriers (s): {}; "
                        "slowest image write {:.3f} s; coordination {:.3f} s",
                        op.generation, op.members.size(), op.members.size() == 1 ? "" : "es",
                        op.timing.messages, barrier_times, op.timing.write_seconds(),
                        manifest.seconds - op.timing.write_seconds()));
  log_.line(
      fmt::format("checkpoint {} complete in {:.3f} s (computation paused {:.3f} s): {} image{}, "
                  "{} bytes written, {} bytes of memory",
                  op.generation, manifest.seconds, op.pause_seconds, op.members.size(),
                  op.members.size() == 1 ? "" : "s", image_bytes, memory_bytes));
  for (uint64_t removed : prune_generations(options_.ckpt_dir, options_.keep)) {
    log_.line(fmt::format("removed generation {} (--keep {})", removed, options_.keep));
  }
  if (op.op.kill_after) {
    kill_members();
  } else {
    finish_op(true, op.success);
  }
}

void Coordinator::kill_members() {
  RunningOp& op = *running_;
  op.waiting_for_exits = true;
  op.deadline = after_seconds(options_.kill_timeout);
  for (uint64_t id : op.alive) {
    Client& client = clients_.at(id);
    client.state = "killing";
    send(client, STASIS_MSG_KILL, op.generation, nullptr, 0);
  }
  if (op.alive.empty())
    finish_op(true, op.op.kind == OpKind::Kill ? json{{"ok", true}} : op.success);
}

void Coordinator::member_gone(const Client& client) {
  if (!running_ || running_->alive.erase(client.id) == 0) return;
  RunningOp& op = *running_;
  if (op.waiting_for_exits) {
    if (op.alive.empty()) {
      log_.line(fmt::format("all {} process{} ended", op.members.size(),
                            op.members.size() == 1 ? "" : "es"));
      json body = op.op.kind == OpKind::Kill ? json{{"ok", true}, {"killed", op.members.size()}}
                                             : op.success;
      finish_op(true, body);
    }
    return;
  }
  if (op.op.kind == OpKind::Checkpoint && op.stopping() && op.failure.empty()) {
    // It ended (or exec'd: the new program joins again) before the computation was stopped:
    // not part of this checkpoint; its parent records it as a zombie if it is one. It leaves
    // op.members once the computation is stopped (check_children), not in an O(N) step per exit.
    op.late_joiners.erase(client.id);
    log_.line(fmt::format("{} ended as checkpoint {} began; not part of it", client.describe(),
                          op.generation));
  } else if (op.op.kind == OpKind::Checkpoint && !op.committed) {
    fail(fmt::format("process {} disconnected during checkpoint {}", client.describe(),
                     op.generation));
  }
  if (!op.barrier.empty() && op.pending.erase(client.id) > 0 && op.pending.empty()) {
    barrier_complete();
  }
}

// `body` is taken by value: callers pass parts of running_, which is reset here.
void Coordinator::finish_op(bool ok, json body) {
  Operation finished = std::move(running_->op);
  running_.reset();
  for (uint64_t waiter : finished.waiters) reply(waiter, ok, body);
  start_next_op();
}

void Coordinator::check_deadlines() {
  Clock::time_point now = Clock::now();
  while (!handshake_deadlines_.empty() && handshake_deadlines_.front().first <= now) {
    Client* client = find(handshake_deadlines_.front().second);
    handshake_deadlines_.pop_front();
    if (client != nullptr && client->role == Role::Handshake && !client->refused) {
      refuse(*client, fmt::format("no authentication within {} s", options_.handshake_timeout));
    }
  }

  if (running_ && running_->children_retry && *running_->children_retry <= now) {
    running_->children_retry.reset();
    start_barrier("children", running_->generation);
  }

  if (running_ && running_->deadline <= now) {
    RunningOp& op = *running_;
    if (!op.barrier.empty()) {
      std::vector<std::string> late;
      for (uint64_t id : op.pending) late.push_back(clients_.at(id).describe());
      std::sort(late.begin(), late.end());
      std::string who = late.front();
      if (late.size() > 1) who += fmt::format(" and {} more", late.size() - 1);
      std::string why = fmt::format("the \"{}\" barrier timed out after {} s waiting for {}",
                                    op.barrier, options_.barrier_timeout, who);
      if (op.op.kind == OpKind::Checkpoint && !op.committed) {
        fail(why);
      } else {
        log_.line(why);
      }
      barrier_complete();
    } else if (op.waiting_for_exits) {
      std::string why =
          fmt::format("{} process{} did not exit within {} s of being told to", op.alive.size(),
                      op.alive.size() == 1 ? "" : "es", options_.kill_timeout);
      log_.line(why);
      if (op.op.kind == OpKind::Kill) {
        finish_op(false, {{"ok", false}, {"error", why}});
      } else {
        json body = op.success;
        body["warning"] = why;
        finish_op(true, body);
      }
    }
  }

  if (next_interval_ && *next_interval_ <= now) {
    next_interval_ = after_seconds(options_.interval);
    bool anyone = std::any_of(clients_.begin(), clients_.end(), [](const auto& entry) {
      return entry.second.role == Role::Process && entry.second.in_computation &&
             !entry.second.dead;
    });
    bool checkpoint_pending = (running_ && running_->op.kind == OpKind::Checkpoint) ||
                              std::any_of(queue_.begin(), queue_.end(), [](const Operation& op) {
                                return op.kind == OpKind::Checkpoint;
                              });
    if (anyone && !checkpoint_pending) {
      log_.line("interval checkpoint");
      enqueue(Operation{.kind = OpKind::Checkpoint});
    }
  }
}

int Coordinator::next_timeout_ms() const {
  std::optional<Clock::time_point> soonest;
  auto consider = [&](Clock::time_point t) {
    if (!soonest || t < *soonest) soonest = t;
  };
  if (!handshake_deadlines_.empty()) consider(handshake_deadlines_.front().first);
  if (running_ && (!running_->barrier.empty() || running_->waiting_for_exits)) {
    consider(running_->deadline);
  }
  if (running_ && running_->children_retry) consider(*running_->children_retry);
  if (next_interval_) consider(*next_interval_);
  if (idle_since_) consider(*idle_since_ + kIdleGrace);
  if (restart_expected_until_) consider(*restart_expected_until_);
  if (!dead_.empty()) return 0;
  if (!soonest) return -1;
  auto wait = std::chrono::ceil<std::chrono::milliseconds>(*soonest - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(wait, 0, 3600 * 1000));
}

bool Coordinator::idle_after_work() const {
  if (restart_expected_until_ && Clock::now() < *restart_expected_until_) return false;
  return seen_process_ && process_count_ == 0 && !running_ && queue_.empty();
}

json Coordinator::status_json() const {
  std::vector<const Client*> processes;
  for (const auto& [id, client] : clients_) {
    if (client.role == Role::Process && !client.dead) processes.push_back(&client);
  }
  std::sort(processes.begin(), processes.end(),
            [](const Client* a, const Client* b) { return a->id < b->id; });
  json list = json::array();
  for (const Client* client : processes) {
    const StasisProcessInfo& info = client->info;
    list.push_back({{"id", client->id},
                    {"pid", info.pid},
                    {"original_pid", info.original_pid},
                    {"host", bounded(info.hostname, sizeof info.hostname)},
                    {"program", bounded(info.program, sizeof info.program)},
                    {"restarted", info.restarted != 0},
                    {"state", client->state}});
  }
  std::string state = processes.empty() ? "idle" : "running";
  if (running_ && running_->op.kind == OpKind::Checkpoint) state = "checkpointing";
  if (running_ && running_->op.kind == OpKind::Restart) state = "restarting";
  return {{"coordinator",
           {{"pid", getpid()},
            {"host", options_.host},
            {"port", port_},
            {"ckpt_dir", options_.ckpt_dir},
            {"interval", options_.interval}}},
          {"state", state},
          {"processes", list},
          {"last_checkpoint", last_checkpoint_},
          {"checkpoints_done", checkpoints_done_}};
}

// Detaches (double fork, setsid), and tells the waiting parent through `ready` once listening.
int run_daemon(const Options& options) {
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) throw Error(fmt::format("pipe: {}", errno_text()));
  pid_t child = fork();
  if (child < 0) throw Error(fmt::format("fork: {}", errno_text()));
  if (child > 0) {
    close(ready[1]);
    std::string message;
    char buffer[512];
    ssize_t n;
    while ((n = read(ready[0], buffer, sizeof buffer)) != 0) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      message.append(buffer, static_cast<size_t>(n));
    }
    close(ready[0]);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (message == "ok") return 0;
    if (message.empty()) throw Error("the coordinator daemon exited before it was ready");
    throw Error(message);
  }

  close(ready[0]);
  setsid();
  pid_t daemon = fork();
  if (daemon != 0) _exit(daemon < 0 ? 1 : 0);

  auto tell_parent = [&](const std::string& message) {
    ssize_t ignored = write(ready[1], message.data(), message.size());
    (void)ignored;
    close(ready[1]);
  };
  if (chdir("/") != 0) {
    tell_parent("cannot change directory to /");
    return 1;
  }
  // Only the ready pipe survives: a caller reading our output must see end-of-file.
  int null_fd = open("/dev/null", O_RDWR);
  dup2(null_fd, STDIN_FILENO);
  dup2(null_fd, STDOUT_FILENO);
  dup2(null_fd, STDERR_FILENO);
  if (ready[1] > 3) close_range(3, static_cast<unsigned>(ready[1]) - 1, 0);
  close_range(static_cast<unsigned>(ready[1]) + 1, ~0u, 0);

  try {
    make_private_dirs(options.ckpt_dir);
    std::string log_path =
        options.log_file.empty() ? options.ckpt_dir + "/coordinator.log" : options.log_file;
    Fd log_fd(open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (log_fd.get() < 0) throw Error(fmt::format("cannot open {}: {}", log_path, errno_text()));
    Log log(log_fd.get());
    Coordinator coordinator(options, log);
    try {
      coordinator.start();
    } catch (const Error& e) {
      log.line(fmt::format("cannot start: {}", e.what()));
      throw;
    }
    tell_parent("ok");
    try {
      return coordinator.run();
    } catch (const std::exception& e) {
      log.line(fmt::format("fatal: {}", e.what()));
      return 1;
    }
  } catch (const std::exception& e) {
    tell_parent(e.what());
    return 1;
  }
}

}  // namespace

int run_coordinator(Options options) {
  // A daemon runs in /, so every path is made absolute first.
  options.ckpt_dir = resolve_ckpt_dir(options.ckpt_dir);
  if (!options.port_file.empty()) {
    options.port_file = std::filesystem::absolute(options.port_file).string();
  }
  if (!options.log_file.empty()) {
    options.log_file = std::filesystem::absolute(options.log_file).string();
  }
  if (options.interval < 0 || options.barrier_timeout <= 0) {
    throw Error("--interval and --barrier-timeout must be positive numbers of seconds");
  }
  if (options.daemon) return run_daemon(options);
  Log log(STDERR_FILENO);
  Coordinator coordinator(options, log);
  coordinator.start();
  return coordinator.run();
}

}  // namespace stasis::coordinator
