// The coordinator end to end: the real `stasis` binary, real TCP connections, real files;
// stand-in processes (coordinator_test_harness.h). Here: connecting, and the checkpoint, kill and
// restart sequences. daemon_integration_test.cc: the name service, --daemon, --keep, scale.
#include "coordinator/coordinator_test_harness.h"

namespace coordinator_test {
namespace {

TEST_F(CoordinatorIntegration, ListensOnAPickedPortWithAPrivateSecret) {
  start_coordinator();
  struct stat st;
  ASSERT_EQ(stat(secret_file().c_str(), &st), 0) << "no secret file " << secret_file();
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat(runtime_dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::string hex = secret();
  EXPECT_EQ(hex.size(), 64u);
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos);

  json status = status_json();
  EXPECT_EQ(status["state"], "idle");
  EXPECT_EQ(status["coordinator"]["port"], port_);
  EXPECT_EQ(status["coordinator"]["ckpt_dir"], ckpt_dir_.string());
  EXPECT_TRUE(status["last_checkpoint"].is_null());

  EXPECT_EQ(stop_coordinator(), 0);
  EXPECT_FALSE(fs::exists(secret_file())) << "the secret must go when the coordinator does";
}

// Plugins' barriers run between "drain" and "checkpoint", in the order processes first declared
// them; names of built-in barriers or with odd characters are ignored.
TEST_F(CoordinatorIntegration, PluginBarriersRunBetweenDrainAndCheckpoint) {
  start_coordinator();
  auto first = fake(1501, "first", 0, "alpha,beta");
  auto second = fake(1502, "second", 0, "beta,gamma,drain,Bad!");
  Output result = stasis_with_coord({"checkpoint"});
  ASSERT_EQ(result.status, 0) << result.err;
  const std::vector<std::string> expected = {"suspend", "children", "drain", "alpha", "beta",
                                             "gamma", "checkpoint", "resume", "commit"};
  EXPECT_EQ(first->received(), expected);
  EXPECT_EQ(second->received(), expected);
  EXPECT_NE(log().find("ignoring plugin barrier 'drain'"), std::string::npos) << log();
}

TEST_F(CoordinatorIntegration, SecretFromTheEnvironment) {
  std::string chosen(64, 'a');
  setenv("STASIS_SECRET", chosen.c_str(), 1);
  start_coordinator();
  EXPECT_EQ(secret(), chosen);
  json status = status_json();  // the command authenticates with $STASIS_SECRET
  EXPECT_EQ(status["state"], "idle") << status.dump();
  unsetenv("STASIS_SECRET");
}

TEST_F(CoordinatorIntegration, CheckpointIsRecordedOnlyAfterEveryProcessIsDone) {
  start_coordinator();
  auto fast = fake(1001, "fast");
  auto slow = fake(1002, "slow");
  std::atomic<bool> recorded_too_early{false};
  slow->set_hook([&](const StasisBarrier& barrier, StasisBarrierDone&) {
    if (std::string(barrier.name) == "checkpoint") {
      std::this_thread::sleep_for(300ms);  // "fast" has long answered by now
      if (fs::exists(fs::path(barrier.ckpt_dir) / "MANIFEST.json") ||
          fs::exists(ckpt_dir_ / "latest")) {
        recorded_too_early = true;
      }
    }
    return true;
  });

  Output result = stasis_with_coord({"checkpoint"});
  ASSERT_EQ(result.status, 0) << result.err;
  fs::path generation = ckpt_dir_ / "000001";
  EXPECT_EQ(trimmed(result.out), generation.string());
  EXPECT_FALSE(recorded_too_early);
  EXPECT_EQ(fast->received(), kHealthyCycle);
  EXPECT_EQ(slow->received(), kHealthyCycle);
  EXPECT_EQ(std::string(fast->last_checkpoint_barrier().ckpt_dir), generation.string());

  json manifest = json::parse(read_text(generation / "MANIFEST.json"));
  EXPECT_EQ(manifest["format"], "stasis-checkpoint");
  EXPECT_EQ(manifest["generation"], 1);
  EXPECT_EQ(manifest["complete"], true);
  EXPECT_EQ(manifest["coordinator"]["port"], port_);
  ASSERT_EQ(manifest["processes"].size(), 2u);
  EXPECT_EQ(manifest["processes"][0]["program"], "fast");
  EXPECT_EQ(manifest["processes"][0]["image"], "fast.stasis");
  EXPECT_EQ(manifest["processes"][1]["pid"], 1002);
  EXPECT_EQ(manifest["processes"][1]["host"], "testhost");
  EXPECT_EQ(fs::read_symlink(ckpt_dir_ / "latest"), "000001");
  struct stat st;
  ASSERT_EQ(stat(generation.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  result = stasis_with_coord({"checkpoint"});
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(trimmed(result.out), (ckpt_dir_ / "000002").string());
  EXPECT_EQ(fs::read_symlink(ckpt_dir_ / "latest"), "000002");

  json status = status_json();
  EXPECT_EQ(status["checkpoints_done"], 2);
  EXPECT_EQ(status["last_checkpoint"]["generation"], 2);
  EXPECT_EQ(status["state"], "running");
  ASSERT_EQ(status["processes"].size(), 2u);
  EXPECT_EQ(status["processes"][1]["program"], "slow");
  EXPECT_EQ(status["processes"][1]["state"], "running");
  EXPECT_NE(log().find("checkpoint 2 complete"), std::string::npos) << log();

  Output human = stasis_with_coord({"status"});
  EXPECT_EQ(human.status, 0);
  EXPECT_NE(human.out.find("1002"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("generation 2"), std::string::npos) << human.out;
}

TEST_F(CoordinatorIntegration, FailingProcessLeavesNoCheckpointAndTheComputationRuns) {
  start_coordinator();
  auto healthy = fake(2001, "healthy");
  auto broken = fake(2002, "broken");
  ASSERT_EQ(stasis_with_coord({"checkpoint"}).status, 0);

  broken->set_hook([](const StasisBarrier& barrier, StasisBarrierDone& done) {
    if (std::string(barrier.name) == "checkpoint") {
      done.status = 28;
      strcpy(done.message, "disk on fire");
    }
    return true;
  });
  Output result = stasis_with_coord({"checkpoint"});
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_EQ(result.err.rfind("stasis checkpoint: ", 0), 0u) << result.err;
  EXPECT_NE(result.err.find("disk on fire"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("2002"), std::string::npos) << "which process failed: " << result.err;
  EXPECT_FALSE(fs::exists(ckpt_dir_ / "000002")) << "the incomplete generation must go";
  EXPECT_EQ(fs::read_symlink(ckpt_dir_ / "latest"), "000001");
  // The computation resumes; "commit" with abort=1 then tells forked writers to stop.
  EXPECT_EQ(healthy->received(), (std::vector<std::string>{"suspend", "children", "drain", "checkpoint", "resume",
                                                           "commit", "suspend", "children", "drain", "checkpoint",
                                                           "resume", "commit"}));
  EXPECT_EQ(broken->received().back(), "commit");
  EXPECT_EQ(broken->last_commit_barrier().abort, 1u) << "the failed checkpoint's images are discarded";
  EXPECT_EQ(status_json()["processes"][0]["state"], "running");

  broken->set_hook(nullptr);
  result = stasis_with_coord({"checkpoint"});
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(trimmed(result.out), (ckpt_dir_ / "000002").string());
  EXPECT_EQ(broken->last_commit_barrier().abort, 0u);
}

TEST_F(CoordinatorIntegration, DisconnectDuringCheckpointFailsIt) {
  start_coordinator();
  auto stays = fake(3001, "stays");
  auto leaves = fake(3002, "leaves");
  leaves->set_hook([](const StasisBarrier& barrier, StasisBarrierDone&) {
    return std::string(barrier.name) != "drain";
  });
  Output result = stasis_with_coord({"checkpoint"});
  EXPECT_EQ(result.status, 1);
  EXPECT_NE(result.err.find("disconnected"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(ckpt_dir_ / "000001"));
  EXPECT_FALSE(fs::exists(ckpt_dir_ / "latest"));
  EXPECT_EQ(stays->received(), (std::vector<std::string>{"suspend", "children", "drain", "resume", "commit"}));
  EXPECT_TRUE(eventually([&] { return status_json()["processes"].size() == 1; }));
}

// A short-lived child often ends right after the computation resumes: its image is durable by
// then (here written in place at "checkpoint"), so the checkpoint holds it as it was.
TEST_F(CoordinatorIntegration, ProcessEndingAfterItsImageIsSavedStaysInTheCheckpoint) {
  start_coordinator();
  auto stays = fake(3101, "stays");
  auto ends = fake(3102, "ends");
  ends->set_hook([](const StasisBarrier& barrier, StasisBarrierDone&) {
    return std::string(barrier.name) != "resume";
  });
  Output result = stasis_with_coord({"checkpoint"});
  ASSERT_EQ(result.status, 0) << result.err << log();
  fs::path generation = ckpt_dir_ / "000001";
  EXPECT_EQ(trimmed(result.out), generation.string());
  json manifest = json::parse(read_text(generation / "MANIFEST.json"));
  ASSERT_EQ(manifest["processes"].size(), 2u);
  EXPECT_EQ(manifest["processes"][1]["pid"], 3102);
  EXPECT_EQ(manifest["processes"][1]["image"], "ends.stasis");
  EXPECT_EQ(stays->received(), kHealthyCycle);
  EXPECT_NE(log().find("pid 3102 (ends) ended after its image was saved"), std::string::npos) << log();
  EXPECT_TRUE(eventually([&] { return status_json()["processes"].size() == 1; }));
}

TEST_F(CoordinatorIntegration, BarrierTimeoutFailsTheCheckpoint) {
  start_coordinator({"--barrier-timeout", "1"});
  auto prompt = fake(4001, "prompt");
  auto stuck = fake(4002, "stuck");
  stuck->set_hook([](const StasisBarrier& barrier, StasisBarrierDone&) {
    if (std::string(barrier.name) == "checkpoint") std::this_thread::sleep_for(2s);
    return true;  // the late answer must be ignored
  });
  auto started = std::chrono::steady_clock::now();
  Output result = stasis_with_coord({"checkpoint"});
  EXPECT_EQ(result.status, 1);
  EXPECT_NE(result.err.find("timed out"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("4002"), std::string::npos) << result.err;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
  EXPECT_FALSE(fs::exists(ckpt_dir_ / "latest"));
  EXPECT_TRUE(eventually([&] { return stuck->count("resume") == 1; }));
  EXPECT_EQ(prompt->received().back(), "commit");
}

TEST_F(CoordinatorIntegration, RefusesWrongSecretsGarbageAndStalls) {
  start_coordinator();
  int fd = stasis_connect_tcp("127.0.0.1", port_);
  ASSERT_GE(fd, 0);
  uint8_t wrong[32] = {};
  char reason[128] = "";
  EXPECT_EQ(stasis_client_handshake(fd, wrong, sizeof wrong, STASIS_ROLE_PROCESS, nullptr, nullptr,
                                    reason, sizeof reason),
            -1);
  EXPECT_STREQ(reason, "bad secret");
  close(fd);
  EXPECT_TRUE(eventually([&] {
    return log().find("refused connection from 127.0.0.1:") != std::string::npos &&
           log().find(": bad secret") != std::string::npos;
  })) << log();

  setenv("STASIS_SECRET", std::string(64, 'f').c_str(), 1);
  Output result = stasis_with_coord({"status"});
  unsetenv("STASIS_SECRET");
  EXPECT_EQ(result.status, 1);
  EXPECT_NE(result.err.find("bad secret"), std::string::npos) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;

  // Someone speaking HTTP is shown the door at once.
  fd = stasis_connect_tcp("127.0.0.1", port_);
  ASSERT_GE(fd, 0);
  const char http[] = "GET / HTTP/1.0\r\nHost: x\r\n\r\n";
  ASSERT_EQ(write(fd, http, sizeof http - 1), static_cast<ssize_t>(sizeof http - 1));
  char sink[4096];
  EXPECT_EQ(stasis_recv_exact_timeout(fd, sink, sizeof sink, 3000), -1);
  EXPECT_EQ(errno, ECONNRESET) << "the coordinator should close the connection";
  close(fd);
  EXPECT_NE(log().find("not speaking the stasis protocol"), std::string::npos) << log();

  // Someone who never authenticates is dropped after the handshake timeout (5 s).
  fd = stasis_connect_tcp("127.0.0.1", port_);
  ASSERT_GE(fd, 0);
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(stasis_recv_exact_timeout(fd, sink, sizeof sink, 10000), -1);
  EXPECT_EQ(errno, ECONNRESET);
  auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_GT(waited, 4s);
  EXPECT_LT(waited, 8s);
  close(fd);
  EXPECT_NE(log().find("no authentication within"), std::string::npos) << log();

  // None of it disturbed the coordinator.
  EXPECT_EQ(status_json()["state"], "idle");
}

TEST_F(CoordinatorIntegration, IntervalCheckpoints) {
  start_coordinator({"--interval", "0.3"});
  auto worker = fake(5001, "worker");
  EXPECT_TRUE(eventually([&] { return fs::exists(ckpt_dir_ / "000002" / "MANIFEST.json"); }))
      << log();
  EXPECT_TRUE(eventually([&] { return worker->count("resume") >= 2; }));
  EXPECT_GE(worker->count("checkpoint"), 2u);
  EXPECT_EQ(status_json()["coordinator"]["interval"], 0.3);
}

TEST_F(CoordinatorIntegration, ExitsWhenIdleOnlyAfterItsProcessesLeave) {
  start_coordinator({"--exit-when-idle"});
  std::this_thread::sleep_for(500ms);
  EXPECT_FALSE(coordinator_->exited_within(0ms)) << "no process has come yet: keep waiting";
  auto worker = fake(6001, "worker");
  EXPECT_FALSE(coordinator_->exited_within(300ms));
  worker->disconnect();
  ASSERT_TRUE(coordinator_->exited_within(5s)) << log();
  EXPECT_EQ(coordinator_->wait().status, 0);
  EXPECT_FALSE(fs::exists(secret_file()));
  coordinator_.reset();
}

TEST_F(CoordinatorIntegration, KillEndsEveryProcess) {
  start_coordinator();
  Output none = stasis_with_coord({"kill"});
  EXPECT_EQ(none.status, 1);
  EXPECT_NE(none.err.find("no processes are connected"), std::string::npos) << none.err;

  auto one = fake(7001, "one");
  auto two = fake(7002, "two");
  Output result = stasis_with_coord({"kill"});
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out, "ended 2 processes\n");
  EXPECT_EQ(one->received(), std::vector<std::string>{"KILL"});
  EXPECT_EQ(two->received(), std::vector<std::string>{"KILL"});
  EXPECT_TRUE(status_json()["processes"].empty());
}

TEST_F(CoordinatorIntegration, CheckpointThenKill) {
  start_coordinator({"--compress", "zstd"});
  auto worker = fake(8001, "worker");
  Output result = stasis_with_coord({"checkpoint", "--kill", "--compress", "none"});
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(worker->received(),
            (std::vector<std::string>{"suspend", "children", "drain", "checkpoint", "commit", "KILL"}));
  EXPECT_EQ(worker->last_checkpoint_barrier().kill_after, 1u);
  EXPECT_EQ(worker->last_checkpoint_barrier().compression, STASIS_COMPRESSION_NONE);
  EXPECT_TRUE(fs::exists(ckpt_dir_ / "000001" / "MANIFEST.json"));
  EXPECT_TRUE(eventually([&] { return worker->gone(); }));
}

TEST_F(CoordinatorIntegration, CompressionDefaultsAndValidation) {
  start_coordinator({"--compress", "zstd"});
  auto worker = fake(8101, "worker");
  ASSERT_EQ(stasis_with_coord({"checkpoint"}).status, 0);
  EXPECT_EQ(worker->last_checkpoint_barrier().compression, STASIS_COMPRESSION_ZSTD);
  EXPECT_EQ(worker->last_checkpoint_barrier().kill_after, 0u);

  Output bad = stasis_with_coord({"checkpoint", "--compress", "gzip"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.err.rfind("stasis checkpoint: ", 0), 0u) << bad.err;
  EXPECT_NE(bad.err.find("gzip"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  EXPECT_EQ(worker->count("checkpoint"), 1u);
}

TEST_F(CoordinatorIntegration, NoProcessesNoCheckpoint) {
  start_coordinator();
  Output result = stasis_with_coord({"checkpoint"});
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(result.err, "stasis checkpoint: no processes are connected to this coordinator\n");
  EXPECT_FALSE(fs::exists(ckpt_dir_ / "000001"));
}

TEST_F(CoordinatorIntegration, NoCoordinatorIsOneClearLine) {
  Output result = stasis({"status", "--coord", "127.0.0.1:1"});
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(result.err,
            "stasis status: no coordinator answers at 127.0.0.1:1 (is the computation running? "
            "set STASIS_COORD or --coord)\n");
}

TEST_F(CoordinatorIntegration, LateJoinerWaitsForTheNextCheckpoint) {
  start_coordinator();
  auto early = fake(9001, "early");
  std::atomic<bool> in_checkpoint{false};
  std::atomic<bool> release{false};
  early->set_hook([&](const StasisBarrier& barrier, StasisBarrierDone&) {
    if (std::string(barrier.name) == "checkpoint") {
      in_checkpoint = true;
      while (!release) std::this_thread::sleep_for(10ms);
    }
    return true;
  });
  StasisRun checkpoint(tmp_, {"checkpoint", "--coord", coord_});
  ASSERT_TRUE(eventually([&] { return in_checkpoint.load(); }));
  auto late = std::make_unique<FakeProcess>(port_, secret(), 9002, "late");
  std::this_thread::sleep_for(200ms);
  release = true;
  Output result = checkpoint.wait();
  ASSERT_EQ(result.status, 0) << result.err;
  json manifest = json::parse(read_text(ckpt_dir_ / "000001" / "MANIFEST.json"));
  EXPECT_EQ(manifest["processes"].size(), 1u);
  EXPECT_TRUE(late->received().empty()) << "a process that joined mid-checkpoint is left alone";

  early->set_hook(nullptr);
  ASSERT_EQ(stasis_with_coord({"checkpoint"}).status, 0);
  EXPECT_EQ(late->received(), kHealthyCycle);
}

// A child forked as the checkpoint began joins while the others are being stopped: the
// "children" barrier repeats until it is a member, and it is taken into that checkpoint.
TEST_F(CoordinatorIntegration, ChildJoiningWhileStoppingIsTakenIntoTheCheckpoint) {
  start_coordinator();
  auto parent = fake(7001, "parent");
  parent->set_children({7002});
  auto bystander = fake(7003, "bystander");
  StasisRun checkpoint(tmp_, {"checkpoint", "--coord", coord_});
  ASSERT_TRUE(eventually([&] { return parent->count("children") >= 2; }))
      << "the coordinator asks again while a child is missing; log: " << log();
  auto child = fake(7002, "child");
  Output result = checkpoint.wait();
  ASSERT_EQ(result.status, 0) << result.err << log();
  json manifest = json::parse(read_text(ckpt_dir_ / "000001" / "MANIFEST.json"));
  ASSERT_EQ(manifest["processes"].size(), 3u);
  EXPECT_EQ(manifest["processes"][2]["pid"], 7002);
  EXPECT_EQ(child->received(), kHealthyCycle);
  // Repeats ask only the parent still missing a child (and the child): O(missing), not O(N).
  EXPECT_EQ(bystander->received(), kHealthyCycle);
  EXPECT_NE(log().find("joins checkpoint 1 under way"), std::string::npos) << log();
}

// A child that never joins (a static program, a cleared environment) fails the checkpoint with
// a message naming it, and the computation runs on.
TEST_F(CoordinatorIntegration, ChildThatNeverJoinsFailsTheCheckpointNamingIt) {
  start_coordinator({"--barrier-timeout", "1"});
  auto parent = fake(7101, "parent");
  parent->set_children({7102});
  Output result = stasis_with_coord({"checkpoint"});
  EXPECT_EQ(result.status, 1);
  EXPECT_NE(result.err.find("7102"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("child of"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(ckpt_dir_ / "latest"));
  EXPECT_TRUE(eventually([&] { return parent->count("resume") == 1; }));
  parent->set_children({});
  EXPECT_EQ(stasis_with_coord({"checkpoint"}).status, 0) << "the next checkpoint works";
}

// A pid names a process within one kernel and pid namespace (its pid space), whatever host name
// its UTS namespace gives it: a launcher that execs into another host's namespaces (nsrsh) is
// still its parent's child; a process of another pid space with that pid and the parent's host
// name is not.
TEST_F(CoordinatorIntegration, ChildrenAreMatchedByPidSpaceNotHostName) {
  start_coordinator({"--barrier-timeout", "1"});
  auto parent = fake_at(7201, "mpirun", "host1", "boot-a/4026531836");
  parent->set_children({7202});
  auto launcher = fake_at(7202, "sh", "host2", "boot-a/4026531836");
  Output result = stasis_with_coord({"checkpoint"});
  ASSERT_EQ(result.status, 0) << result.err << log();
  EXPECT_EQ(json::parse(read_text(ckpt_dir_ / "000001" / "MANIFEST.json"))["processes"].size(), 2u);

  launcher.reset();
  auto elsewhere = fake_at(7202, "sh", "host1", "boot-b/4026531836");  // another machine, same name
  result = stasis_with_coord({"checkpoint"});
  EXPECT_EQ(result.status, 1) << "a pid of another kernel is not the parent's child";
  EXPECT_NE(result.err.find("pid 7202 (a child of"), std::string::npos) << result.err;
}

TEST_F(CoordinatorIntegration, ConcurrentRequestsAreAllAnswered) {
  start_coordinator();
  auto worker = fake(9101, "worker");
  worker->set_hook([](const StasisBarrier&, StasisBarrierDone&) {
    std::this_thread::sleep_for(50ms);
    return true;
  });
  std::vector<std::unique_ptr<StasisRun>> runs;
  for (int i = 0; i < 3; i++) {
    runs.push_back(std::make_unique<StasisRun>(
        tmp_, std::vector<std::string>{"checkpoint", "--coord", coord_}));
  }
  for (auto& run : runs) {
    Output result = run->wait();
    EXPECT_EQ(result.status, 0) << result.err;
  }
  EXPECT_GE(worker->count("checkpoint"), 2u) << "the first one runs, later ones queue";
  EXPECT_LE(worker->count("checkpoint"), 3u);
  EXPECT_EQ(worker->received().back(), "commit");
}

TEST_F(CoordinatorIntegration, RestartedProcessGetsRestartThenResume) {
  start_coordinator();
  auto restarted = fake(9201, "phoenix", /*restarted_generation=*/4);
  EXPECT_TRUE(eventually([&] { return restarted->count("resume") == 1; }));
  EXPECT_EQ(restarted->received(), (std::vector<std::string>{"restart", "resume"}));
  json status = status_json();
  ASSERT_EQ(status["processes"].size(), 1u);
  EXPECT_EQ(status["processes"][0]["restarted"], true);
  EXPECT_EQ(status["processes"][0]["original_pid"], 9200);
  EXPECT_EQ(status["processes"][0]["state"], "running");
  // Once restarted it is part of the computation like any other.
  ASSERT_EQ(stasis_with_coord({"checkpoint"}).status, 0);
  EXPECT_EQ(restarted->count("checkpoint"), 1u);
}

TEST_F(CoordinatorIntegration, AProcessCanAskForACheckpoint) {
  start_coordinator();
  auto asker = fake(9250, "asker");
  auto other = fake(9251, "other");
  asker->request_checkpoint();
  EXPECT_TRUE(eventually([&] { return fs::exists(ckpt_dir_ / "000001" / "MANIFEST.json"); }))
      << log();
  EXPECT_TRUE(eventually([&] { return other->count("resume") == 1; }));
  EXPECT_EQ(other->received(), kHealthyCycle);
  EXPECT_NE(log().find("checkpoint requested by pid 9250 (asker)"), std::string::npos) << log();
}

}  // namespace
}  // namespace coordinator_test
