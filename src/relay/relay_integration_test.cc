// Host relays with the real `stasis` binary: stand-in processes join a relay over its Unix
// socket, and the coordinator checkpoints them through it. What must hold: the checkpoint is the
// same as without relays, the coordinator's message count follows relays and not processes, a
// relay that dies fails the checkpoint at once and leaves the previous one, and a process that
// joins the relay while a checkpoint stops the computation is taken into it.
#include <netinet/in.h>
#include <sys/un.h>

#include <fstream>
#include <functional>
#include <regex>
#include <thread>

#include "common/hmac.h"
#include "coordinator/coordinator_test_harness.h"
#include "protocol/relay_batch.h"

namespace coordinator_test {
namespace {

class RelayIntegration : public CoordinatorIntegration {
 protected:
  // Starts `stasis relay` for a stand-in host (its own socket name) and waits until it listens.
  void start_relay(const std::string& name, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"relay", "--coord", coord_, "--socket", name};
    args.insert(args.end(), extra.begin(), extra.end());
    relays_.push_back(std::make_unique<StasisRun>(tmp_, args));
    ASSERT_TRUE(eventually([&] {
      int fd = connect_to(name);
      if (fd >= 0) close(fd);
      return fd >= 0;
    })) << log();
  }

  static int connect_to(const std::string& name) { return stasis_connect_abstract(name.c_str()); }

  std::unique_ptr<FakeProcess> fake_via(const std::string& relay, uint32_t pid,
                                        const std::string& program) {
    int fd = connect_to(relay);
    EXPECT_GE(fd, 0) << "no relay at @" << relay;
    return std::make_unique<FakeProcess>(port_, secret(), pid, program, 0, "", "testhost", "", fd);
  }

  // The relay answers the handshake itself: a process is the coordinator's once status says so.
  void wait_for_processes(size_t count) {
    ASSERT_TRUE(eventually([&] { return status_json()["processes"].size() == count; })) << log();
  }

  struct Checkpoint {
    int status = -1;
    std::string error;
    fs::path dir;
    size_t images = 0;                // in its MANIFEST.json
    long messages = -1;               // barrier messages the processes saw
    long coordinator_messages = -1;   // through the coordinator's sockets
  };
  Checkpoint checkpoint() {
    Output result = stasis_with_coord({"checkpoint"});
    Checkpoint done{.status = result.status, .error = result.err};
    if (result.status != 0) return done;
    done.dir = trimmed(result.out);
    json manifest = json::parse(read_text(done.dir / "MANIFEST.json"), nullptr, false);
    if (manifest.is_object()) done.images = manifest["processes"].size();
    std::string generation = done.dir.filename().string();
    while (generation.size() > 1 && generation[0] == '0') generation.erase(0, 1);
    std::smatch match;
    std::string text = log();
    std::regex timing("checkpoint " + generation +
                      " timing: \\d+ process(?:es)?, (\\d+) messages;.*; (\\d+) messages at the "
                      "coordinator's sockets");
    if (std::regex_search(text, match, timing)) {
      done.messages = std::stol(match[1]);
      done.coordinator_messages = std::stol(match[2]);
    }
    return done;
  }

  std::string unique(const std::string& what) const {
    return "stasis-test-" + std::to_string(getpid()) + "-" + std::to_string(port_) + "-" + what;
  }

  void TearDown() override {
    for (auto& relay : relays_) relay->signal(SIGTERM);
    relays_.clear();
    CoordinatorIntegration::TearDown();
  }

  std::vector<std::unique_ptr<StasisRun>> relays_;
};

TEST_F(RelayIntegration, CheckpointsThroughRelaysWithMessagesPerHostNotPerProcess) {
  start_coordinator();
  std::string host_a = unique("a"), host_b = unique("b");
  // A long hold: each relay answers each barrier in exactly one batch, so the count is exact.
  start_relay(host_a, {"--hold", "5"});
  start_relay(host_b, {"--hold", "5"});
  auto direct = fake(100, "direct");
  std::vector<std::unique_ptr<FakeProcess>> relayed;
  for (uint32_t i = 0; i < 4; i++) {
    relayed.push_back(fake_via(host_a, 200 + i, "a" + std::to_string(i)));
    relayed.push_back(fake_via(host_b, 300 + i, "b" + std::to_string(i)));
  }
  wait_for_processes(9);

  Checkpoint small = checkpoint();
  ASSERT_EQ(small.status, 0) << small.error << log();
  EXPECT_EQ(small.images, 9u);
  for (const auto& process : relayed) EXPECT_EQ(process->received(), kHealthyCycle);

  // Three times the processes behind the same two relays: the same count at the coordinator.
  for (uint32_t i = 4; i < 12; i++) {
    relayed.push_back(fake_via(host_a, 200 + i, "a" + std::to_string(i)));
    relayed.push_back(fake_via(host_b, 300 + i, "b" + std::to_string(i)));
  }
  wait_for_processes(25);
  EXPECT_EQ(status_json()["process_count"], 25);
  Checkpoint large = checkpoint();
  ASSERT_EQ(large.status, 0) << large.error << log();
  EXPECT_EQ(large.images, 25u) << "every image the manifest names is there, relayed ones too";
  // Per process, as the processes see them: six barriers each way, and its CHILDREN list.
  EXPECT_EQ(large.messages, 13 * 25);
  // Six barriers: the direct process's BARRIER, BARRIER_DONE (and CHILDREN), one batch each way
  // per relay per barrier.
  EXPECT_EQ(small.coordinator_messages, 6 * 2 + 1 + 6 * 2 * 2) << log();
  EXPECT_EQ(large.coordinator_messages, small.coordinator_messages) << log();
  for (const auto& process : relayed)
    EXPECT_EQ(process->count("commit"), process->count("suspend")) << "every one committed";
  // Each relay answered "suspend", "children" (with no CHILDREN list: none has a child),
  // "drain", "resume" and "commit" (every image checked there) for its 12 processes as one
  // counted entry; "checkpoint" names each image, by name.
  EXPECT_NE(log().find("; 120 answers counted in relays' aggregates"), std::string::npos) << log();
  // And was given each of the six barriers once for its 12 processes, not 12 times.
  EXPECT_NE(log().find("; 144 barriers given by relays to all their processes at once"), std::string::npos)
      << log();
}

// Relay protocol 3 (a barrier down once per relay, folded CHILDREN lists and checked commits)
// against 2 (aggregated answers) and 1: each side refuses the other by name rather than misread
// an entry for all of a relay's processes as one for a single process, or leave one waiting.
TEST_F(RelayIntegration, ARelayOfAnOlderProtocolIsRefusedByName) {
  start_coordinator();
  uint8_t key[32];
  ASSERT_EQ(stasis_hex_decode(secret().c_str(), key, sizeof key), 0);
  // As an older relay authenticates: the right secret, and protocol 2's name, or (1) none.
  for (const char* older : {"stasis-relay/2", ""}) {
    SCOPED_TRACE(older);
    int fd = stasis_connect_tcp("127.0.0.1", port_);
    ASSERT_GE(fd, 0);
    StasisProcessInfo speaks{};
    snprintf(speaks.program, sizeof speaks.program, "%s", older);
    char reason[256] = "";
    EXPECT_NE(stasis_client_handshake(fd, key, sizeof key, STASIS_ROLE_RELAY, older[0] ? &speaks : nullptr,
                                      nullptr, reason, sizeof reason),
              0);
    close(fd);
    std::string expected = older[0] ? "the relay speaks stasis-relay/2, this coordinator stasis-relay/3"
                                    : "the relay speaks stasis-relay/1 (an older stasis), this coordinator "
                                      "stasis-relay/3";
    EXPECT_NE(std::string(reason).find(expected), std::string::npos) << reason;
  }
  EXPECT_EQ(status_json()["processes"].size(), 0u);
}

TEST_F(RelayIntegration, ARelayRefusesACoordinatorOfAnOlderProtocolByName) {
  for (const char* older : {"stasis-relay/2", ""}) {
    SCOPED_TRACE(older);
    // A coordinator of relay protocol 2 (names it in its first batch) or 1 (sends a batch without
    // naming its protocol first): accepts the relay, then sends that batch.
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof address;
    ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), len), 0);
    ASSERT_EQ(listen(listener, 4), 0);
    ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &len), 0);
    std::thread older_coordinator([listener, older] {
      int fd = accept(listener, nullptr, nullptr);
      if (fd < 0) return;
      StasisHello hello{};
      stasis_send_msg(fd, STASIS_MSG_HELLO, 0, &hello, sizeof hello);
      StasisMsgHeader header;
      StasisAuth auth;
      if (recv(fd, &header, sizeof header, MSG_WAITALL) == sizeof header &&
          recv(fd, &auth, sizeof auth, MSG_WAITALL) == sizeof auth) {
        StasisAuthOk ok{.client_id = 7};
        stasis_send_msg(fd, STASIS_MSG_AUTH_OK, 0, &ok, sizeof ok);
        stasis::protocol::RelayBatch batch;  // what an older coordinator sends first
        if (older[0] != '\0')
          batch.add(STASIS_MSG_RELAY_JOIN, 0, 0, older, static_cast<uint32_t>(strlen(older)), 0);
        else
          batch.add(STASIS_MSG_RELAY_LEFT, 0, 0, nullptr, 0, 5);
        std::string payload = batch.take().front();
        stasis_send_msg(fd, STASIS_MSG_RELAY_BATCH, 0, payload.data(), static_cast<uint32_t>(payload.size()));
        char byte;
        while (recv(fd, &byte, 1, 0) > 0) {
        }
      }
      close(fd);
    });
    std::string coordinator = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
    setenv("STASIS_SECRET", std::string(64, 'a').c_str(), 1);
    StasisRun relay(tmp_, {"relay", "--coord", coordinator, "--socket", unique("older")});
    unsetenv("STASIS_SECRET");
    Output result = relay.wait();
    older_coordinator.join();
    close(listener);
    EXPECT_NE(result.status, 0);
    EXPECT_NE(result.err.find("does not speak stasis-relay/3 (an older stasis?)"), std::string::npos)
        << result.err;
  }
}

TEST_F(RelayIntegration, ARelayKilledMidCheckpointFailsItAndKeepsThePreviousOne) {
  start_coordinator({"--barrier-timeout", "60"});
  std::string host = unique("doomed");
  start_relay(host);
  auto direct = fake(100, "direct");
  auto first = fake_via(host, 200, "behind0");
  auto second = fake_via(host, 201, "behind1");
  wait_for_processes(3);
  Checkpoint good = checkpoint();
  ASSERT_EQ(good.status, 0) << good.error << log();
  fs::path good_dir = good.dir;

  StasisRun* relay = relays_.back().get();
  first->set_hook([relay](const StasisBarrier& barrier, StasisBarrierDone&) {
    if (std::string(barrier.name) == "checkpoint") {
      relay->signal(SIGKILL);
      return false;
    }
    return true;
  });
  auto started = std::chrono::steady_clock::now();
  Checkpoint failed = checkpoint();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_NE(failed.status, 0);
  EXPECT_LT(seconds, 10) << "a dead relay fails the checkpoint at once, not at the barrier timeout";
  EXPECT_NE(failed.error.find("its host relay is gone"), std::string::npos) << failed.error;
  EXPECT_EQ(fs::read_symlink(ckpt_dir_ / "latest").filename(), good_dir.filename());
  EXPECT_TRUE(fs::exists(good_dir / "MANIFEST.json"));
  size_t generations = 0;
  for (const auto& entry : fs::directory_iterator(ckpt_dir_))
    if (entry.is_directory() && !entry.is_symlink()) generations++;
  EXPECT_EQ(generations, 1u) << "the failed generation is removed";
  EXPECT_TRUE(eventually([&] { return second->gone(); })) << "its processes lose the relay";
  EXPECT_GE(direct->count("resume"), 2u) << "the others run on";

  // The computation goes on: the direct process checkpoints again, alone.
  wait_for_processes(1);
  Checkpoint after = checkpoint();
  EXPECT_EQ(after.status, 0) << after.error << log();
  EXPECT_EQ(after.images, 1u);
}

TEST_F(RelayIntegration, AProcessBehindARelayDyingMidCheckpointFailsItAndTheRelayServesOn) {
  start_coordinator({"--barrier-timeout", "60"});
  std::string host = unique("survives");
  start_relay(host, {"--hold", "5"});  // a lost answer must not wait for the hold
  auto doomed = fake_via(host, 600, "doomed");
  auto survivor = fake_via(host, 601, "survivor");
  wait_for_processes(2);
  Checkpoint good = checkpoint();
  ASSERT_EQ(good.status, 0) << good.error << log();

  doomed->set_hook([](const StasisBarrier& barrier, StasisBarrierDone&) {
    return std::string(barrier.name) != "checkpoint";  // ends instead of answering
  });
  auto started = std::chrono::steady_clock::now();
  Checkpoint failed = checkpoint();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_NE(failed.status, 0);
  EXPECT_LT(seconds, 10) << "its departure reaches the coordinator at once";
  EXPECT_NE(failed.error.find("pid 600 (doomed) disconnected"), std::string::npos) << failed.error;
  EXPECT_EQ(fs::read_symlink(ckpt_dir_ / "latest").filename(), good.dir.filename());
  EXPECT_EQ(survivor->received().back(), "commit") << "the survivor was resumed and told to discard";
  EXPECT_EQ(survivor->last_commit_barrier().abort, 1u);

  wait_for_processes(1);
  Checkpoint after = checkpoint();
  EXPECT_EQ(after.status, 0) << after.error << log();
  EXPECT_EQ(after.images, 1u);
}

// The relay checks its host's images at "commit" in the coordinator's stead: a damaged one must
// still fail the checkpoint, naming the file and the fault, and leave the previous checkpoint.
TEST_F(RelayIntegration, ADamagedImageBehindARelayFailsTheCheckpointByNameAndKeepsThePreviousOne) {
  start_coordinator({"--barrier-timeout", "60"});
  std::string host = unique("checks");
  start_relay(host, {"--hold", "5"});
  auto direct = fake(100, "direct");
  auto damaged = fake_via(host, 700, "damaged");
  auto healthy = fake_via(host, 701, "healthy");
  wait_for_processes(3);
  Checkpoint good = checkpoint();
  ASSERT_EQ(good.status, 0) << good.error << log();
  EXPECT_EQ(good.images, 3u);
  EXPECT_NE(log().find("3 images, "), std::string::npos) << log();
  EXPECT_NE(log().find("2 images checked by their hosts' relays"), std::string::npos)
      << "the relay, not the coordinator, checked its two processes' images\n" << log();

  // Damaged after the process reported it whole, before it says it is durable at "commit".
  auto damage_at_commit = [&](std::function<void(const fs::path&)> damage) {
    damaged->set_hook([damage](const StasisBarrier& barrier, StasisBarrierDone&) {
      if (std::string(barrier.name) == "commit" && barrier.abort == 0)
        damage(fs::path(barrier.ckpt_dir) / "damaged.stasis");
      return true;
    });
  };
  struct Case {
    const char* what;
    std::function<void(const fs::path&)> damage;
    const char* fault;
  };
  std::vector<Case> cases = {
      {"its END record's checksum changed",
       [](const fs::path& image) {
         std::fstream file(image, std::ios::in | std::ios::out | std::ios::binary);
         file.seekp(-static_cast<std::streamoff>(sizeof(uint64_t)), std::ios::end);
         uint64_t wrong = ~uint64_t{0};
         file.write(reinterpret_cast<const char*>(&wrong), sizeof wrong);
       },
       "does not end with a sound END record|is not the image its process wrote"},
      {"truncated", [](const fs::path& image) { fs::resize_file(image, fs::file_size(image) - 1); },
       "holds \\d+ bytes, not the \\d+ its process wrote"},
      {"removed", [](const fs::path& image) { fs::remove(image); }, "No such file or directory"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    damage_at_commit(c.damage);
    Checkpoint failed = checkpoint();
    EXPECT_NE(failed.status, 0) << "a damaged image completed a checkpoint\n" << log();
    EXPECT_NE(failed.error.find("pid 700 (damaged) failed to commit: its image is not whole: "),
              std::string::npos)
        << failed.error;
    EXPECT_NE(failed.error.find("damaged.stasis"), std::string::npos) << failed.error;
    EXPECT_TRUE(std::regex_search(failed.error, std::regex(c.fault))) << failed.error;
    EXPECT_EQ(fs::read_symlink(ckpt_dir_ / "latest").filename(), good.dir.filename());
    size_t generations = 0;
    for (const auto& entry : fs::directory_iterator(ckpt_dir_))
      if (entry.is_directory() && !entry.is_symlink()) generations++;
    EXPECT_EQ(generations, 1u) << "the failed generation is removed";
  }

  damaged->set_hook(nullptr);
  Checkpoint after = checkpoint();
  EXPECT_EQ(after.status, 0) << after.error << log();
  EXPECT_EQ(after.images, 3u);
  EXPECT_EQ(healthy->count("commit"), damaged->count("commit"));
}

TEST_F(RelayIntegration, AChildJoiningTheRelayDuringACheckpointIsTakenIn) {
  start_coordinator();
  std::string host = unique("forks");
  start_relay(host);
  auto parent = fake_via(host, 400, "parent");
  wait_for_processes(1);
  // The parent has a child that has not joined yet (its join is on its way when the checkpoint
  // starts); the coordinator waits for it at "children" and takes it in.
  parent->set_children({401});
  std::unique_ptr<FakeProcess> child;
  std::atomic<bool> child_started{false};
  parent->set_hook([&](const StasisBarrier& barrier, StasisBarrierDone&) {
    if (std::string(barrier.name) == "children" && !child_started.exchange(true)) {
      std::thread([&] { child = fake_via(host, 401, "child"); }).detach();
    }
    return true;
  });
  Checkpoint done = checkpoint();
  ASSERT_EQ(done.status, 0) << done.error << log();
  EXPECT_EQ(done.images, 2u);
  ASSERT_TRUE(eventually([&] { return child != nullptr; }));
  std::vector<std::string> cycle = child->received();
  EXPECT_EQ(cycle.front(), "suspend") << "a late joiner is suspended first";
  EXPECT_EQ(cycle.back(), "commit");
  EXPECT_EQ(child->count("checkpoint"), 1u);
}

TEST_F(RelayIntegration, TheRelayRefusesAWrongSecretAndTheCoordinatorNeverSeesIt) {
  start_coordinator();
  std::string host = unique("strict");
  start_relay(host);
  int fd = connect_to(host);
  ASSERT_GE(fd, 0);
  uint8_t wrong[32] = {1, 2, 3};
  StasisProcessInfo info{};
  info.pid = 999;
  char reason[256] = "";
  EXPECT_NE(stasis_client_handshake(fd, wrong, sizeof wrong, STASIS_ROLE_PROCESS, &info, nullptr,
                                    reason, sizeof reason),
            0);
  EXPECT_STREQ(reason, "bad secret");
  close(fd);
  auto honest = fake_via(host, 500, "honest");
  wait_for_processes(1);
  EXPECT_EQ(status_json()["processes"][0]["pid"], 500);
}

// Anyone can bind an abstract name: a process must not hand its HMAC answer to another user's
// listener squatting on its relay's name (it joins the coordinator directly instead).
TEST(RelaySocket, AnotherUsersListenerIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a listener as another user";
  std::string name = "stasis-test-squatter-" + std::to_string(getpid());
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t squatter = fork();
  if (squatter == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(1);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    memcpy(address.sun_path + 1, name.data(), name.size());
    socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), len) != 0 || listen(fd, 8) != 0) _exit(1);
    if (write(ready[1], "x", 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char byte;
  ASSERT_EQ(read(ready[0], &byte, 1), 1) << "the squatter could not listen";
  errno = 0;
  int fd = stasis_connect_abstract(name.c_str());
  int connect_errno = errno;
  kill(squatter, SIGKILL);
  waitpid(squatter, nullptr, 0);
  close(ready[0]);
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(connect_errno, EACCES);
}

}  // namespace
}  // namespace coordinator_test
