// Connections that never authenticate, and deadlines that have passed: whatever strangers do,
// the coordinator keeps its descriptors, its log and its processor for the computation.
#include <sys/resource.h>

#include <fstream>

#include "coordinator/coordinator_test_harness.h"

namespace coordinator_test {
namespace {

size_t open_descriptors(pid_t pid) {
  size_t count = 0;
  std::error_code error;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error);
       !error && it != fs::directory_iterator(); it.increment(error))
    count++;
  return count;
}

// Processor seconds the process has used (user + system).
double cpu_seconds(pid_t pid) {
  std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  if (stat.rfind(')') == std::string::npos) return 0;  // gone
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  unsigned long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; i++) {
    if (i == 14) utime = std::stoul(field);
    if (i == 15) stime = std::stoul(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

void raise_own_descriptor_limit(rlim_t wanted) {
  rlimit limit;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_cur < wanted) {
    limit.rlim_cur = std::min(wanted, limit.rlim_max);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
  }
  if (limit.rlim_cur < wanted) GTEST_SKIP() << "this test needs " << wanted << " descriptors";
}

// 1,500 connections that never authenticate, against a coordinator limited to 1,024
// descriptors: it once ran out, then spun in accept (EMFILE, EAGAIN, again) forever, deaf to
// commands and SIGTERM, writing megabytes of log a second. Now a checkpoint during the flood
// takes well under a second, the log stays small, and once the strangers leave the coordinator
// holds as many descriptors as before.
TEST_F(CoordinatorIntegration, AFloodOfUnauthenticatedConnections) {
  constexpr size_t kFlood = 1500;
  raise_own_descriptor_limit(kFlood + 200);
  start_coordinator({}, 1024);
  pid_t pid = coordinator_->pid();
  auto worker = fake(4100, "worker");
  ASSERT_TRUE(eventually([&] { return status_json()["processes"].size() == 1; }));
  size_t before = open_descriptors(pid);
  size_t log_before = log().size();
  double cpu_before = cpu_seconds(pid);

  std::vector<int> strangers;
  for (size_t i = 0; i < kFlood; i++) {
    int fd = stasis_connect_tcp("127.0.0.1", port_);
    ASSERT_GE(fd, 0) << "connection " << i << ": " << strerror(errno);
    strangers.push_back(fd);
  }
  std::this_thread::sleep_for(200ms);  // the coordinator takes them in
  size_t during = open_descriptors(pid);

  auto started = std::chrono::steady_clock::now();
  StasisRun checkpoint(tmp_, {"checkpoint", "--coord", coord_});
  bool answered = checkpoint.exited_within(10s);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!answered) coordinator_->signal(SIGKILL);  // deaf: do not wait for it in TearDown
  ASSERT_TRUE(answered) << "no answer to a checkpoint within 10 s of the flood";
  Output result = checkpoint.wait();
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_LT(seconds, 1.0);

  for (int fd : strangers) close(fd);
  EXPECT_TRUE(eventually([&] { return open_descriptors(pid) == before; }, 5s))
      << open_descriptors(pid) << " descriptors after the flood left, " << before << " before";
  size_t after = open_descriptors(pid);
  size_t log_bytes = log().size() - log_before;
  double cpu = cpu_seconds(pid) - cpu_before;
  fprintf(stderr,
          "flood of %zu connections: checkpoint in %.3f s during it; coordinator descriptors "
          "%zu before, %zu during, %zu after; %zu log bytes; %.2f s of processor\n",
          kFlood, seconds, before, during, after, log_bytes, cpu);
  EXPECT_LT(log_bytes, 20000u) << "repeated lines are not capped";
  EXPECT_LE(during, 1024u - 200) << "strangers took most of the descriptors";
  std::string text = log();
  EXPECT_NE(text.find("to make room"), std::string::npos) << text.substr(0, 4000);
}

// Out of descriptors all the same (processes or open files used them up): the connections that
// cannot be taken are refused and the loop goes back to waiting, so commands, processes and
// SIGTERM are still served once descriptors free up.
TEST_F(CoordinatorIntegration, OutOfDescriptorsItNeitherSpinsNorGoesDeaf) {
  raise_own_descriptor_limit(600);
  start_coordinator();
  pid_t pid = coordinator_->pid();
  auto worker = fake(4200, "worker");
  ASSERT_TRUE(eventually([&] { return status_json()["processes"].size() == 1; }));
  size_t before = open_descriptors(pid);
  rlimit tight{before + 20, before + 20};  // far below its bound on strangers
  ASSERT_EQ(prlimit(pid, RLIMIT_NOFILE, &tight, nullptr), 0);
  double cpu_before = cpu_seconds(pid);
  std::vector<int> strangers;
  for (int i = 0; i < 400; i++) {
    int fd = stasis_connect_tcp("127.0.0.1", port_);
    ASSERT_GE(fd, 0);
    strangers.push_back(fd);
  }
  std::this_thread::sleep_for(1s);
  double cpu = cpu_seconds(pid) - cpu_before;
  EXPECT_LT(cpu, 0.5) << "the coordinator spins while out of descriptors";
  for (int fd : strangers) close(fd);
  ASSERT_TRUE(eventually([&] { return open_descriptors(pid) <= before; }, 10s))
      << open_descriptors(pid) << " descriptors, " << before << " before";
  Output result = stasis_with_coord({"checkpoint"});
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_NE(log().find("out of file descriptors"), std::string::npos);
  fprintf(stderr, "out of descriptors with 400 strangers: %.2f s of processor in 1 s\n", cpu);
}

// A daemon told to expect restarted processes that never come: once its patience ends it exits
// (--exit-when-idle) instead of polling a deadline that has passed, without pause, for ever.
TEST_F(CoordinatorIntegration, AnExpectedRestartThatNeverComes) {
  start_coordinator({"--exit-when-idle", "--restart-patience", "1"});
  pid_t pid = coordinator_->pid();
  uint8_t key[32];
  ASSERT_EQ(stasis_hex_decode(secret().c_str(), key, sizeof key), 0);
  int fd = stasis_connect_tcp("127.0.0.1", port_);
  ASSERT_GE(fd, 0);
  char reason[128];
  ASSERT_EQ(stasis_client_handshake(fd, key, sizeof key, STASIS_ROLE_COMMAND, nullptr, nullptr,
                                    reason, sizeof reason),
            0)
      << reason;
  StasisCommand command{};
  command.verb = STASIS_CMD_EXPECT_RESTART;
  ASSERT_EQ(stasis_send_msg(fd, STASIS_MSG_COMMAND, 0, &command, sizeof command), 0);
  StasisMsgHeader header;
  ASSERT_EQ(stasis_recv_header(fd, &header), 0);
  ASSERT_EQ(stasis_discard(fd, header.payload_len), 0);
  close(fd);
  double cpu_before = cpu_seconds(pid);
  bool exited = coordinator_->exited_within(6s);
  double cpu = cpu_seconds(pid) - cpu_before;  // 0 once it is gone: then it did not spin long
  if (!exited) {
    std::this_thread::sleep_for(1s);
    cpu = cpu_seconds(pid) - cpu_before;
  }
  EXPECT_TRUE(exited) << "still running 5 s after its patience ended";
  EXPECT_LT(cpu, 0.5) << "it polled without waiting";
  if (exited) {
    EXPECT_EQ(coordinator_->wait().status, 0);
    coordinator_.reset();
  }
}

}  // namespace
}  // namespace coordinator_test
