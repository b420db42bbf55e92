// The coordinator end to end (see coordinator_integration_test.cc): the name service over
// real connections, --daemon, --keep, and a thousand processes.
#include "coordinator/coordinator_test_harness.h"

namespace coordinator_test {
namespace {

TEST_F(CoordinatorIntegration, NameService) {
  start_coordinator();
  uint8_t key[32];
  ASSERT_EQ(stasis_hex_decode(secret().c_str(), key, sizeof key), 0);
  int fd = stasis_connect_tcp("127.0.0.1", port_);
  ASSERT_GE(fd, 0);
  StasisProcessInfo info{};
  info.pid = 9301;
  char reason[128];
  ASSERT_EQ(stasis_client_handshake(fd, key, sizeof key, STASIS_ROLE_PROCESS, &info, nullptr,
                                    reason, sizeof reason),
            0)
      << reason;
  const char publish[] = "rank0\0tcp://10.0.0.1:5000";
  ASSERT_EQ(stasis_send_msg(fd, STASIS_MSG_NS_PUBLISH, 1, publish, sizeof publish - 1), 0);
  for (auto [name, found] : {std::pair{"rank0", true}, std::pair{"rank1", false}}) {
    ASSERT_EQ(stasis_send_msg(fd, STASIS_MSG_NS_LOOKUP, 77, name, strlen(name)), 0);
    StasisMsgHeader header;
    ASSERT_EQ(stasis_recv_header(fd, &header), 0);
    EXPECT_EQ(header.type, STASIS_MSG_NS_REPLY);
    EXPECT_EQ(header.arg, 77u);
    EXPECT_EQ(header.reserved, found ? 0u : 1u) << name;
    std::string value(header.payload_len, '\0');
    ASSERT_EQ(stasis_recv_exact(fd, value.data(), value.size()), 0);
    EXPECT_EQ(value, found ? "tcp://10.0.0.1:5000" : "");
  }
  close(fd);
}

// NS_WAIT answers once the key appears; NS_LIST gives a prefix's entries in key order; a
// process's entries go when it withdraws them or leaves (a command's stay).
TEST_F(CoordinatorIntegration, NameServiceWaitListAndOwnership) {
  start_coordinator();
  uint8_t key[32];
  ASSERT_EQ(stasis_hex_decode(secret().c_str(), key, sizeof key), 0);
  auto connect_as = [&](uint32_t role, uint32_t pid) {
    int fd = stasis_connect_tcp("127.0.0.1", port_);
    EXPECT_GE(fd, 0);
    StasisProcessInfo info{};
    info.pid = pid;
    char reason[128];
    EXPECT_EQ(stasis_client_handshake(fd, key, sizeof key, role, role == STASIS_ROLE_PROCESS ? &info : nullptr,
                                      nullptr, reason, sizeof reason),
              0)
        << reason;
    return fd;
  };
  auto publish = [](int fd, const std::string& name, const std::string& value) {
    std::string payload = name + '\0' + value;
    ASSERT_EQ(stasis_send_msg(fd, STASIS_MSG_NS_PUBLISH, 0, payload.data(), payload.size()), 0);
  };
  // The reply's status (0 found) and payload.
  auto reply = [](int fd, uint64_t arg) {
    StasisMsgHeader header;
    EXPECT_EQ(stasis_recv_header(fd, &header), 0);
    EXPECT_EQ(header.type, STASIS_MSG_NS_REPLY);
    EXPECT_EQ(header.arg, arg);
    std::string value(header.payload_len, '\0');
    EXPECT_EQ(stasis_recv_exact(fd, value.data(), value.size()), 0);
    return std::pair{header.reserved, value};
  };
  auto ask = [&](int fd, uint16_t type, const std::string& name, uint64_t arg) {
    EXPECT_EQ(stasis_send_msg(fd, type, arg, name.data(), name.size()), 0);
    return reply(fd, arg);
  };
  int first = connect_as(STASIS_ROLE_PROCESS, 9401), second = connect_as(STASIS_ROLE_PROCESS, 9402);
  int command = connect_as(STASIS_ROLE_COMMAND, 0);

  ASSERT_EQ(stasis_send_msg(command, STASIS_MSG_NS_WAIT, 5, "ib/1/qp-7", 9), 0);
  pollfd waiting{command, POLLIN, 0};
  EXPECT_EQ(poll(&waiting, 1, 200), 0) << "answered before the key was published";
  publish(first, "ib/1/qp-7", "seven");
  EXPECT_EQ(reply(command, 5), std::pair(0u, std::string("seven")));
  EXPECT_EQ(ask(command, STASIS_MSG_NS_WAIT, "ib/1/qp-7", 6), std::pair(0u, std::string("seven")));

  publish(second, "ib/1/ud-2/b", "B");
  publish(first, "ib/1/ud-2/a", "A");
  publish(first, "ib/1/ud-3/a", "other");
  publish(command, "tcp/x", "kept");
  // Each connection's messages are handled in order, not those of different connections.
  EXPECT_EQ(ask(command, STASIS_MSG_NS_WAIT, "ib/1/ud-2/b", 17).first, 0u);
  EXPECT_EQ(ask(command, STASIS_MSG_NS_WAIT, "ib/1/ud-3/a", 18).first, 0u);
  auto [listed, entries] = ask(command, STASIS_MSG_NS_LIST, "ib/1/ud-2/", 7);
  EXPECT_EQ(listed, 0u);
  using namespace std::string_literals;
  EXPECT_EQ(entries, "ib/1/ud-2/a\0\x01\0\0\0A"s + "ib/1/ud-2/b\0\x01\0\0\0B"s);
  EXPECT_EQ(ask(command, STASIS_MSG_NS_LIST, "ib/9/", 8), std::pair(0u, std::string()));

  publish(first, "other/x", "not withdrawn");
  ASSERT_EQ(stasis_send_msg(first, STASIS_MSG_NS_WITHDRAW, 0, "ib/", 3), 0);
  for (int tries = 0; tries < 200 && ask(command, STASIS_MSG_NS_LOOKUP, "ib/1/qp-7", 19).first == 0; tries++)
    usleep(10000);
  EXPECT_EQ(ask(command, STASIS_MSG_NS_LOOKUP, "ib/1/qp-7", 9).first, 1u) << "withdrawn";
  EXPECT_EQ(ask(command, STASIS_MSG_NS_LIST, "ib/1/", 10).second, "ib/1/ud-2/b\0\x01\0\0\0B"s);
  EXPECT_EQ(ask(command, STASIS_MSG_NS_LOOKUP, "other/x", 16).first, 0u) << "outside the prefix";
  close(second);  // leaves the computation: its entries go with it
  for (int tries = 0; tries < 200 && ask(command, STASIS_MSG_NS_LOOKUP, "ib/1/ud-2/b", 11).first == 0; tries++)
    usleep(10000);
  EXPECT_EQ(ask(command, STASIS_MSG_NS_LOOKUP, "ib/1/ud-2/b", 12).first, 1u) << "its publisher left";
  EXPECT_EQ(ask(command, STASIS_MSG_NS_LOOKUP, "tcp/x", 13), std::pair(0u, std::string("kept")));
  // A waiter that gave up (closed) is forgotten: a later publish must not trip over it.
  int gone = connect_as(STASIS_ROLE_COMMAND, 0);
  ASSERT_EQ(stasis_send_msg(gone, STASIS_MSG_NS_WAIT, 14, "late", 4), 0);
  close(gone);
  usleep(50000);
  publish(first, "late", "L");
  EXPECT_EQ(ask(command, STASIS_MSG_NS_WAIT, "late", 15), std::pair(0u, std::string("L")));
  close(first);
  close(command);
}

TEST_F(CoordinatorIntegration, DaemonReturnsOnceListening) {
  fs::path port_file = tmp_ / "daemon.port";
  Output result = stasis({"coordinator", "--daemon", "--port", "0", "--port-file",
                          port_file.string(), "--ckpt-dir", ckpt_dir_.string()});
  ASSERT_EQ(result.status, 0) << result.err;
  ASSERT_TRUE(fs::exists(port_file)) << "the port file must exist when --daemon returns";
  port_ = static_cast<uint16_t>(std::stoi(read_text(port_file)));
  coord_ = "127.0.0.1:" + std::to_string(port_);
  json status = status_json();
  ASSERT_TRUE(status.contains("coordinator")) << status.dump();
  pid_t daemon = status["coordinator"]["pid"];
  EXPECT_TRUE(fs::exists(ckpt_dir_ / "coordinator.log"));
  EXPECT_NE(read_text(ckpt_dir_ / "coordinator.log").find("listening on"), std::string::npos);
  ASSERT_EQ(kill(daemon, SIGTERM), 0);
  EXPECT_TRUE(eventually([&] { return !fs::exists(secret_file()); }));

  // A second daemon on a taken port reports why, in one line, from the foreground.
  start_coordinator();
  result = stasis({"coordinator", "--daemon", "--port", std::to_string(port_), "--ckpt-dir",
                   ckpt_dir_.string()});
  EXPECT_EQ(result.status, 1);
  EXPECT_NE(result.err.find("in use"), std::string::npos) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
}

TEST_F(CoordinatorIntegration, KeepPrunesOldGenerations) {
  start_coordinator({"--keep", "2"});
  auto worker = fake(9401, "worker");
  for (int i = 0; i < 4; i++) ASSERT_EQ(stasis_with_coord({"checkpoint"}).status, 0);
  EXPECT_FALSE(fs::exists(ckpt_dir_ / "000001"));
  EXPECT_FALSE(fs::exists(ckpt_dir_ / "000002"));
  EXPECT_TRUE(fs::exists(ckpt_dir_ / "000003" / "MANIFEST.json"));
  EXPECT_TRUE(fs::exists(ckpt_dir_ / "000004" / "MANIFEST.json"));
  EXPECT_EQ(fs::read_symlink(ckpt_dir_ / "latest"), "000004");
}

// Barriers cost O(N) messages and the loop never waits on one client: a thousand processes
// checkpoint in well under a second (0.06 s on a 2-core VM), answered from one thread. The
// coordinator counts the messages: exactly one barrier and one answer per process and barrier.
TEST_F(CoordinatorIntegration, AThousandProcesses) {
  rlimit limit;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  const char* wanted = std::getenv("STASIS_TEST_PROCESSES");  // to measure larger counts
  const size_t count = std::min<size_t>(wanted ? std::stoul(wanted) : 1000,
                                        limit.rlim_cur > 100 ? limit.rlim_cur - 100 : 0);
  ASSERT_GE(count, 500u) << "not enough file descriptors for this test";

  start_coordinator();
  uint8_t key[32];
  ASSERT_EQ(stasis_hex_decode(secret().c_str(), key, sizeof key), 0);
  std::vector<pollfd> processes;
  for (size_t i = 0; i < count; i++) {
    int fd = stasis_connect_tcp("127.0.0.1", port_);
    ASSERT_GE(fd, 0) << i;
    StasisProcessInfo info{};
    info.pid = static_cast<uint32_t>(20000 + i);
    snprintf(info.program, sizeof info.program, "rank%zu", i);
    char reason[128];
    ASSERT_EQ(stasis_client_handshake(fd, key, sizeof key, STASIS_ROLE_PROCESS, &info, nullptr,
                                      reason, sizeof reason),
              0)
        << reason;
    processes.push_back(pollfd{.fd = fd, .events = POLLIN, .revents = 0});
  }

  std::atomic<bool> stop{false};
  std::atomic<size_t> answered{0};
  std::thread answerer([&] {
    while (!stop) {
      if (poll(processes.data(), processes.size(), 50) <= 0) continue;
      for (pollfd& p : processes) {
        if (!(p.revents & POLLIN)) continue;
        StasisMsgHeader header;
        StasisBarrier barrier;
        if (stasis_recv_header(p.fd, &header) != 0 || header.payload_len != sizeof barrier ||
            stasis_recv_exact(p.fd, &barrier, sizeof barrier) != 0) {
          p.events = 0;
          continue;
        }
        StasisBarrierDone done{};
        memcpy(done.name, barrier.name, sizeof done.name);
        if (std::string(barrier.name) == "checkpoint") {
          std::string image = std::string(barrier.ckpt_dir) + "/rank" + std::to_string(p.fd);
          write_stand_in_image(image, "rank", p.fd, done);
        }
        stasis_send_msg(p.fd, STASIS_MSG_BARRIER_DONE, header.arg, &done, sizeof done);
        answered++;
      }
    }
  });

  auto started = std::chrono::steady_clock::now();
  Output result = stasis_with_coord({"checkpoint"});
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  stop = true;
  answerer.join();
  for (const pollfd& p : processes) close(p.fd);

  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(answered, 6 * count);  // suspend, children, drain, checkpoint, resume, commit
  std::string expected_count = fmt_messages(count, 12 * count);
  EXPECT_NE(log().find(expected_count), std::string::npos)
      << "expected \"" << expected_count << "\" in the log:\n" << log().substr(log().size() > 4000 ? log().size() - 4000 : 0);
  json manifest = json::parse(read_text(ckpt_dir_ / "000001" / "MANIFEST.json"));
  EXPECT_EQ(manifest["processes"].size(), count);
  fprintf(stderr, "checkpoint of %zu processes: %.3f s (command included)\n", count, seconds);
  EXPECT_LT(seconds, 20.0);
}

}  // namespace
}  // namespace coordinator_test
