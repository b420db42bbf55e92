// What the coordinator's integration tests share: the real `stasis` binary run as a child, a
// fixture with a coordinator of its own, and stand-ins for checkpointed processes (threads
// speaking the wire protocol through wire.h, as the runtime does), so every barrier outcome can
// be chosen by the test.
#pragma once
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/hmac.h"
#include "image/framing.h"
#include "protocol/wire.h"

namespace coordinator_test {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

// Writes what the coordinator checks of an image at commit (its size, and an END record whose
// chain of headers is `checksum` at its end) after `text`; fills done's image fields.
inline void write_stand_in_image(const std::string& path, const std::string& text,
                                 uint64_t checksum, StasisBarrierDone& done) {
  StasisEndRecord end{};
  end.headers_checksum = checksum;
  StasisRecordHeader header = stasis::image::frame_record(STASIS_REC_END, STASIS_COMPRESS_NONE, 0,
                                                          &end, sizeof end, sizeof end);
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.write(reinterpret_cast<const char*>(&header), sizeof header);
  out.write(reinterpret_cast<const char*>(&end), sizeof end);
  out.close();
  strncpy(done.image_path, path.c_str(), sizeof done.image_path - 1);
  done.image_bytes = text.size() + sizeof header + sizeof end;
  done.image_checksum = checksum;
}

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

inline std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

template <typename Predicate>
bool eventually(Predicate done, std::chrono::milliseconds timeout = 10s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return done();
}

struct Output {
  int status = -1;
  std::string out;
  std::string err;
};

// A `stasis` child process; its stdout and stderr go to files read once it exits.
class StasisRun {
 public:
  // descriptors > 0: the child runs with RLIMIT_NOFILE at that (soft and hard).
  StasisRun(const fs::path& dir, const std::vector<std::string>& args, rlim_t descriptors = 0) {
    static std::atomic<int> counter{0};
    int n = counter++;
    out_path_ = dir / ("run-" + std::to_string(n) + ".out");
    err_path_ = dir / ("run-" + std::to_string(n) + ".err");
    pid_ = fork();
    if (pid_ == 0) {
      int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(out, STDOUT_FILENO);
      dup2(err, STDERR_FILENO);
      if (descriptors > 0) {
        rlimit limit{descriptors, descriptors};
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(126);
      }
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(STASIS_BINARY));
      for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
      execv(STASIS_BINARY, argv.data());
      _exit(127);
    }
  }
  pid_t pid() const { return pid_; }
  // Signals the child only while it is not reaped: once reaped, its pid may belong to anyone.
  void signal(int sig) {
    if (status_ < 0) kill(pid_, sig);
  }
  bool exited_within(std::chrono::milliseconds timeout) {
    return eventually(
        [&] {
          if (status_ >= 0) return true;
          int status;
          if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
          status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
          return true;
        },
        timeout);
  }
  Output wait() {
    if (!exited_within(120s)) {
      kill(pid_, SIGKILL);
      exited_within(5s);
    }
    return Output{status_, read_text(out_path_), read_text(err_path_)};
  }
  ~StasisRun() {
    if (status_ < 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  fs::path out_path_, err_path_;
};

// A stand-in for a process running under the runtime: answers barriers like the runtime would
// (writing a small image file at "checkpoint"), unless the test says otherwise.
class FakeProcess {
 public:
  // Called for each barrier with the answer already filled in as a healthy process would; may
  // change it (fail, delay, inspect the disk). Returning false disconnects instead of answering.
  using Hook = std::function<bool(const StasisBarrier&, StasisBarrierDone&)>;

  // `hostname` and `pid_space`: where the process says it runs (StasisProcessInfo).
  FakeProcess(uint16_t port, const std::string& secret_hex, uint32_t pid, std::string program,
              uint32_t restarted_generation = 0, const std::string& plugin_barriers = "",
              const std::string& hostname = "testhost", const std::string& pid_space = "",
              int connected_fd = -1)
      : program_(std::move(program)) {
    // connected_fd: a connection made already (to a host relay, say) instead of the coordinator.
    fd_ = connected_fd >= 0 ? connected_fd : stasis_connect_tcp("127.0.0.1", port);
    EXPECT_GE(fd_, 0) << "cannot connect to the coordinator: " << strerror(errno);
    uint8_t secret[32];
    EXPECT_EQ(stasis_hex_decode(secret_hex.c_str(), secret, sizeof secret), 0);
    StasisProcessInfo info{};
    info.pid = pid;
    info.original_pid = restarted_generation ? pid - 1 : pid;
    info.restarted = restarted_generation ? 1 : 0;
    info.restarted_generation = restarted_generation;
    info.restart_process_count = restarted_generation ? 1 : 0;
    strncpy(info.hostname, hostname.c_str(), sizeof info.hostname - 1);
    strncpy(info.pid_space, pid_space.c_str(), sizeof info.pid_space - 1);
    strncpy(info.program, program_.c_str(), sizeof info.program - 1);
    strncpy(info.plugin_barriers, plugin_barriers.c_str(), sizeof info.plugin_barriers - 1);
    char reason[256] = "";
    connected_ = stasis_client_handshake(fd_, secret, sizeof secret, STASIS_ROLE_PROCESS, &info,
                                         &client_id_, reason, sizeof reason) == 0;
    EXPECT_TRUE(connected_) << reason;
    if (connected_) reader_ = std::thread([this] { serve(); });
  }

  ~FakeProcess() { disconnect(); }

  void set_hook(Hook hook) {
    std::lock_guard lock(mutex_);
    hook_ = std::move(hook);
  }

  void disconnect() {
    if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);
    if (reader_.joinable()) reader_.join();
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

  // Barrier names received so far, plus "KILL" for a kill message.
  std::vector<std::string> received() const {
    std::lock_guard lock(mutex_);
    return received_;
  }
  size_t count(const std::string& name) const {
    auto all = received();
    return static_cast<size_t>(std::count(all.begin(), all.end(), name));
  }
  StasisBarrier last_commit_barrier() const {
    std::lock_guard lock(mutex_);
    return last_commit_barrier_;
  }
  StasisBarrier last_checkpoint_barrier() const {
    std::lock_guard lock(mutex_);
    return last_checkpoint_barrier_;
  }
  // What stasis_checkpoint() in the application does.
  void request_checkpoint() {
    std::lock_guard lock(send_mutex_);
    EXPECT_EQ(stasis_send_msg(fd_, STASIS_MSG_REQUEST_CHECKPOINT, 0, nullptr, 0), 0);
  }
  bool gone() const { return gone_; }
  bool connected() const { return connected_; }
  // The live children it reports at the "children" barrier, as the runtime does.
  void set_children(std::vector<uint32_t> pids) {
    std::lock_guard lock(mutex_);
    children_ = std::move(pids);
  }

 private:
  void serve() {
    for (;;) {
      StasisMsgHeader header;
      if (stasis_recv_header(fd_, &header) != 0) break;
      if (header.type == STASIS_MSG_KILL) {
        record("KILL");
        break;
      }
      if (header.type != STASIS_MSG_BARRIER || header.payload_len != sizeof(StasisBarrier)) {
        if (stasis_discard(fd_, header.payload_len) != 0) break;
        continue;
      }
      StasisBarrier barrier;
      if (stasis_recv_exact(fd_, &barrier, sizeof barrier) != 0) break;
      std::string name = barrier.name;
      record(name);
      StasisBarrierDone done{};
      memcpy(done.name, barrier.name, sizeof done.name - 1);
      if (name == "commit") {
        std::lock_guard lock(mutex_);
        last_commit_barrier_ = barrier;
      }
      if (name == "checkpoint") {
        std::lock_guard lock(mutex_);
        last_checkpoint_barrier_ = barrier;
        std::string image = std::string(barrier.ckpt_dir) + "/" + program_ + ".stasis";
        write_stand_in_image(image, "image of " + program_, header.arg, done);
        done.memory_bytes = 4096;
      }
      Hook hook;
      std::vector<uint32_t> children;
      {
        std::lock_guard lock(mutex_);
        hook = hook_;
        children = children_;
      }
      if (hook && !hook(barrier, done)) break;
      std::lock_guard lock(send_mutex_);
      if (name == "children" &&
          stasis_send_msg(fd_, STASIS_MSG_CHILDREN, header.arg, children.data(),
                          static_cast<uint32_t>(children.size() * sizeof(uint32_t))) != 0) {
        break;
      }
      if (stasis_send_msg(fd_, STASIS_MSG_BARRIER_DONE, header.arg, &done, sizeof done) != 0) {
        break;
      }
    }
    gone_ = true;
    shutdown(fd_, SHUT_RDWR);
  }

  void record(const std::string& name) {
    std::lock_guard lock(mutex_);
    received_.push_back(name);
  }

  std::string program_;
  int fd_ = -1;
  uint64_t client_id_ = 0;
  bool connected_ = false;
  std::atomic<bool> gone_{false};
  std::thread reader_;
  mutable std::mutex mutex_;
  std::mutex send_mutex_;
  Hook hook_;
  std::vector<uint32_t> children_;
  std::vector<std::string> received_;
  StasisBarrier last_checkpoint_barrier_{};
  StasisBarrier last_commit_barrier_{};
};

class CoordinatorIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/stasis-coord-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    tmp_ = pattern;
    runtime_dir_ = tmp_ / "runtime";
    ckpt_dir_ = tmp_ / "ckpt";
    // Children inherit this environment: nothing may touch $HOME or a developer's settings.
    setenv("STASIS_RUNTIME_DIR", runtime_dir_.c_str(), 1);
    for (const char* name :
         {"STASIS_SECRET", "STASIS_COORD", "STASIS_CKPT_DIR", "STASIS_COMPRESS"}) {
      unsetenv(name);
    }
  }

  void TearDown() override {
    // A coordinator that cannot exit cleanly (or that a sanitizer stopped) fails the test.
    if (coordinator_) {
      EXPECT_EQ(stop_coordinator(), 0) << log();
    }
    if (HasFailure()) {
      fprintf(stderr, "kept %s; coordinator log:\n%s\n", tmp_.c_str(), log().c_str());
    } else {
      fs::remove_all(tmp_);
    }
  }

  // Starts `stasis coordinator --port 0 --port-file F --ckpt-dir D ARGS` in the foreground,
  // logging to a file, and waits for the port file.
  void start_coordinator(const std::vector<std::string>& extra = {}, rlim_t descriptors = 0) {
    std::vector<std::string> args = {
        "coordinator", "--port",          "0", "--port-file", (tmp_ / "port").string(),
        "--ckpt-dir",  ckpt_dir_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    coordinator_ = std::make_unique<StasisRun>(tmp_, args, descriptors);
    ASSERT_TRUE(eventually([&] { return fs::exists(tmp_ / "port"); }))
        << "no port file; log: " << log();
    port_ = static_cast<uint16_t>(std::stoi(read_text(tmp_ / "port")));
    ASSERT_GT(port_, 0);
    coord_ = "127.0.0.1:" + std::to_string(port_);
  }

  int stop_coordinator() {
    if (!coordinator_) return -1;
    coordinator_->signal(SIGTERM);
    int status = coordinator_->wait().status;
    coordinator_.reset();
    return status;
  }

  fs::path secret_file() const {
    return runtime_dir_ / ("coordinator-127.0.0.1-" + std::to_string(port_) + ".secret");
  }
  std::string secret() const { return trimmed(read_text(secret_file())); }
  // The foreground coordinator's stderr: its log.
  std::string log() const {
    std::string all;
    for (const auto& entry : fs::directory_iterator(tmp_)) {
      if (entry.path().extension() == ".err") all += read_text(entry.path());
    }
    return all;
  }

  // The handshake completes only once the coordinator has registered the process, so a
  // command sent after this returns already sees it.
  std::unique_ptr<FakeProcess> fake(uint32_t pid, const std::string& program,
                                    uint32_t restarted_generation = 0,
                                    const std::string& plugin_barriers = "") {
    return std::make_unique<FakeProcess>(port_, secret(), pid, program, restarted_generation,
                                         plugin_barriers);
  }

  // A process that says it runs on `hostname`, its pid meaning something in `pid_space`.
  std::unique_ptr<FakeProcess> fake_at(uint32_t pid, const std::string& program, const std::string& hostname,
                                       const std::string& pid_space) {
    return std::make_unique<FakeProcess>(port_, secret(), pid, program, 0, "", hostname, pid_space);
  }

  Output stasis(std::vector<std::string> args) { return StasisRun(tmp_, args).wait(); }
  Output stasis_with_coord(std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--coord", coord_});
    return stasis(args);
  }
  json status_json() {
    Output result = stasis_with_coord({"status", "--json"});
    if (result.status != 0) return json{{"processes", json::array()}, {"error", result.err}};
    return json::parse(result.out);
  }

  fs::path tmp_, runtime_dir_, ckpt_dir_;
  std::unique_ptr<StasisRun> coordinator_;
  uint16_t port_ = 0;
  std::string coord_;
};

// What the coordinator's timing line says about a checkpoint of `processes` processes.
inline std::string fmt_messages(size_t processes, size_t messages) {
  return std::to_string(processes) + " processes, " + std::to_string(messages) + " messages;";
}

// "commit" comes after "resume": processes that write their image from a forked writer run on
// while it writes, and report the image durable at "commit".
inline const std::vector<std::string> kHealthyCycle = {"suspend", "children", "drain", "checkpoint", "resume",
                                                "commit"};

}  // namespace coordinator_test
