#include "coordinator/checkpoint_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "image/framing.h"

namespace fs = std::filesystem;
using namespace stasis::coordinator;

namespace {

class CheckpointStore : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/stasis-store-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  // parent: the generation its (incremental) image builds on, 0 for a full one.
  void make_generation(uint64_t generation, bool complete, uint64_t parent = 0) {
    fs::create_directory(dir_ + "/" + generation_name(generation));
    if (complete) {
      Manifest manifest;
      manifest.generation = generation;
      manifest.processes.push_back({.image = "p-1.stasis", .parent_generation = parent});
      write_manifest(dir_, manifest);
    }
  }
  std::string dir_;
};

TEST_F(CheckpointStore, GenerationNamesAndNumbering) {
  EXPECT_EQ(generation_name(3), "000003");
  EXPECT_EQ(generation_name(1234567), "1234567");
  EXPECT_EQ(next_generation(dir_), 1u);
  make_generation(2, true);
  make_generation(9, false);
  fs::create_directory(dir_ + "/notes");
  std::ofstream(dir_ + "/000042");  // a file, not a generation
  EXPECT_EQ(next_generation(dir_), 10u);
}

TEST_F(CheckpointStore, ManifestHasTheDocumentedShape) {
  Manifest manifest;
  manifest.generation = 7;
  manifest.unix_time = 1700000000;
  manifest.seconds = 1.5;
  manifest.coordinator_host = "127.0.0.1";
  manifest.coordinator_port = 7781;
  manifest.processes.push_back({.pid = 11,
                                .original_pid = 10,
                                .host = "node1",
                                .program = "worker",
                                .image = "worker-10.img",
                                .image_bytes = 100,
                                .memory_bytes = 400,
                                .pid_space = "5e1c-ab/4026532318"});
  manifest.processes.push_back({.original_pid = 10, .image = "worker-10-b.img"});  // no pid space known
  fs::create_directory(dir_ + "/000007");
  write_manifest(dir_, manifest);
  std::ifstream in(dir_ + "/000007/MANIFEST.json");
  nlohmann::json json = nlohmann::json::parse(in);
  EXPECT_EQ(json["format"], "stasis-checkpoint");
  EXPECT_EQ(json["version"], 1);
  EXPECT_EQ(json["generation"], 7);
  EXPECT_EQ(json["complete"], true);
  EXPECT_EQ(json["unix_time"], 1700000000);
  EXPECT_EQ(json["seconds"], 1.5);
  EXPECT_EQ(json["coordinator"]["port"], 7781);
  ASSERT_EQ(json["processes"].size(), 2u);
  EXPECT_EQ(json["processes"][0]["original_pid"], 10);
  EXPECT_EQ(json["processes"][0]["pid_space"], "5e1c-ab/4026532318");  // a vpid is unique in its space only
  EXPECT_FALSE(json["processes"][1].contains("pid_space"));
  EXPECT_EQ(json["processes"][0]["image"], "worker-10.img");
  EXPECT_EQ(json["processes"][0]["memory_bytes"], 400);
  EXPECT_FALSE(fs::exists(dir_ + "/000007/MANIFEST.json.tmp"));
}

// manifest_text writes MANIFEST.json by hand (no JSON tree per process): it must be, byte for
// byte, what nlohmann's dump(2) gives of the documented object, whatever the strings hold.
TEST_F(CheckpointStore, ManifestTextIsTheJsonDumpOfTheDocumentedObject) {
  Manifest manifest;
  manifest.generation = 12;
  manifest.unix_time = 1700000123;
  manifest.coordinator_host = "node\"0\\";
  manifest.coordinator_port = 7781;
  for (double seconds : {0.0, 1.0, 0.123, 2.5e-7}) {
    manifest.seconds = seconds;
    manifest.processes = {
        {.pid = 11, .original_pid = 10, .host = "node1", .address = "10.0.0.1", .program = "worker",
         .image = "worker-10.img", .image_bytes = 100, .memory_bytes = 400, .parent_generation = 9,
         .image_checksum = 0xabcdef, .pid_space = "5e1c-ab/4026532318"},
        {.pid = 12, .host = "h\tost\n\x01", .program = "caf\xc3\xa9 \x7f", .image = "b.img",
         .parent_generation = 3, .image_checksum = ~uint64_t{0}, .srun_vpid = 5, .srun_parent_vpid = 4},
        {.pid = 13, .program = "not utf-8 \xff\xfe", .image = "c.img"}};
    nlohmann::json processes = nlohmann::json::array();
    for (const ManifestProcess& p : manifest.processes) {
      nlohmann::json entry = {{"pid", p.pid}, {"original_pid", p.original_pid}, {"host", p.host},
                              {"address", p.address}, {"program", p.program}, {"image", p.image},
                              {"image_bytes", p.image_bytes}, {"memory_bytes", p.memory_bytes},
                              {"parent_generation", p.parent_generation},
                              {"image_checksum", fmt::format("{:016x}", p.image_checksum)}};
      if (!p.pid_space.empty()) entry["pid_space"] = p.pid_space;
      if (p.srun_vpid != 0) entry["srun"] = {{"vpid", p.srun_vpid}, {"parent", p.srun_parent_vpid}};
      processes.push_back(entry);
    }
    nlohmann::json expected = {
        {"format", "stasis-checkpoint"}, {"version", 1}, {"generation", manifest.generation},
        {"complete", true}, {"unix_time", manifest.unix_time}, {"seconds", manifest.seconds},
        {"coordinator", {{"host", manifest.coordinator_host}, {"port", manifest.coordinator_port}}},
        {"parents", {3, 9}}, {"processes", processes}};
    EXPECT_EQ(manifest_text(manifest),
              expected.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    // What restart reads: the bytes that were not UTF-8 became U+FFFD, nothing else changed.
    nlohmann::json read = nlohmann::json::parse(manifest_text(manifest));
    EXPECT_EQ(read["processes"][1]["program"], "caf\xc3\xa9 \x7f");
    EXPECT_EQ(read["processes"][2]["program"], "not utf-8 \xef\xbf\xbd\xef\xbf\xbd");
  }
  manifest.processes.clear();  // refused by manifest_fault, but written as an empty array
  EXPECT_NE(manifest_text(manifest).find("\"parents\": [],\n  \"processes\": [],\n"), std::string::npos);
}

TEST_F(CheckpointStore, LatestIsARelativeSymlinkReplacedAtomically) {
  make_generation(1, true);
  make_generation(2, true);
  point_latest(dir_, 1);
  EXPECT_EQ(fs::read_symlink(dir_ + "/latest"), "000001");
  point_latest(dir_, 2);
  EXPECT_EQ(fs::read_symlink(dir_ + "/latest"), "000002");
  auto manifest = read_latest_manifest(dir_);
  ASSERT_TRUE(manifest.has_value());
  EXPECT_EQ((*manifest)["generation"], 2);
  EXPECT_FALSE(fs::is_symlink(dir_ + "/.latest.tmp"));
}

TEST_F(CheckpointStore, NoLatestMeansNoManifest) { EXPECT_FALSE(read_latest_manifest(dir_)); }

// A damaged manifest must not stop a coordinator from starting in the directory (it read these
// fields with json::value, which threw "[json.exception.type_error.302] ...").
TEST_F(CheckpointStore, MistypedLatestManifestIsNoManifest) {
  make_generation(1, true);
  point_latest(dir_, 1);
  for (const char* text : {R"({"generation": "1"})", R"({"generation": 1, "unix_time": "x"})",
                           R"({"generation": 1, "seconds": null})", R"({"generation": -1})"}) {
    std::ofstream(dir_ + "/000001/MANIFEST.json") << text;
    EXPECT_FALSE(read_latest_manifest(dir_)) << text;
  }
  std::ofstream(dir_ + "/000001/MANIFEST.json") << R"({"generation": 1, "unix_time": 5, "seconds": 0.5})";
  EXPECT_TRUE(read_latest_manifest(dir_));
}

TEST_F(CheckpointStore, PruneKeepsTheNewestCompleteGenerations) {
  make_generation(1, true);
  make_generation(2, false);
  make_generation(3, true);
  make_generation(4, true);
  EXPECT_TRUE(prune_generations(dir_, 0).empty()) << "0 keeps everything";
  auto removed = prune_generations(dir_, 2);
  EXPECT_EQ(removed, std::vector<uint64_t>{1});
  EXPECT_FALSE(fs::exists(dir_ + "/000001"));
  EXPECT_TRUE(fs::exists(dir_ + "/000002")) << "incomplete generations are not counted";
  EXPECT_TRUE(fs::exists(dir_ + "/000003"));
  EXPECT_TRUE(fs::exists(dir_ + "/000004"));
}

TEST_F(CheckpointStore, PruneKeepsWhatKeptIncrementsBuildOn) {
  make_generation(1, true);
  make_generation(2, true, 1);
  make_generation(3, true, 2);
  std::ifstream in(dir_ + "/000003/MANIFEST.json");
  EXPECT_EQ(nlohmann::json::parse(in)["parents"], nlohmann::json::array({2}));
  EXPECT_TRUE(prune_generations(dir_, 1).empty()) << "3 builds on 2, which builds on 1";
  for (const char* generation : {"/000001", "/000002", "/000003"})
    EXPECT_TRUE(fs::exists(dir_ + generation)) << generation;
}

TEST_F(CheckpointStore, PruneRemovesChainsNoKeptGenerationNeeds) {
  make_generation(1, true);
  make_generation(2, true, 1);
  make_generation(3, true, 2);
  make_generation(4, true);  // full again
  make_generation(5, true, 4);
  auto removed = prune_generations(dir_, 1);
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_TRUE(fs::exists(dir_ + "/000004")) << "5 builds on it";
  EXPECT_TRUE(fs::exists(dir_ + "/000005"));
}

// A coordinator killed mid-checkpoint leaves a generation without MANIFEST.json (and perhaps a
// whole image): --keep removes it once a newer generation is complete, unless a live coordinator
// still holds its lock.
TEST_F(CheckpointStore, PruneRemovesAbandonedIncompleteGenerations) {
  make_generation(1, true);
  make_generation(2, false);  // abandoned
  std::ofstream(dir_ + "/000002/p-1.stasis.tmp") << "half an image";
  make_generation(3, false);  // another coordinator is writing it
  int held = lock_generation(dir_ + "/000003");
  ASSERT_GE(held, 0);
  EXPECT_TRUE(generation_being_written(dir_ + "/000003"));
  EXPECT_FALSE(generation_being_written(dir_ + "/000002"));
  make_generation(4, true);
  make_generation(5, false);  // newer than every complete one: perhaps just created

  EXPECT_TRUE(prune_incomplete_generations(dir_, 0).empty()) << "0 keeps everything";
  EXPECT_TRUE(fs::exists(dir_ + "/000002"));
  EXPECT_EQ(prune_incomplete_generations(dir_, 3), std::vector<uint64_t>{2});
  EXPECT_FALSE(fs::exists(dir_ + "/000002"));
  EXPECT_TRUE(fs::exists(dir_ + "/000003")) << "locked: being written";
  EXPECT_TRUE(fs::exists(dir_ + "/000005")) << "newer than the newest complete generation";
  EXPECT_TRUE(fs::exists(dir_ + "/000001/MANIFEST.json")) << "complete ones are prune_generations'";

  close(held);  // its coordinator died: the lock went with it
  EXPECT_EQ(prune_incomplete_generations(dir_, 3), std::vector<uint64_t>{3});
  EXPECT_TRUE(fs::exists(dir_ + "/000005"));
}

// An image file as the coordinator checks it: `body` then an END record chaining to `checksum`.
uint64_t write_image(const std::string& path, const std::string& body, uint64_t checksum) {
  StasisEndRecord end{};
  end.headers_checksum = checksum;
  StasisRecordHeader header = stasis::image::frame_record(STASIS_REC_END, STASIS_COMPRESS_NONE, 0,
                                                          &end, sizeof end, sizeof end);
  std::ofstream out(path, std::ios::binary);
  out << body;
  out.write(reinterpret_cast<const char*>(&header), sizeof header);
  out.write(reinterpret_cast<const char*>(&end), sizeof end);
  return body.size() + sizeof header + sizeof end;
}

TEST_F(CheckpointStore, ImageFaultChecksSizeAndEndRecord) {
  std::string image = dir_ + "/p-1.stasis";
  uint64_t bytes = write_image(image, "pages", 0x1234);
  EXPECT_EQ(image_fault(image, bytes, 0x1234), "");
  EXPECT_NE(image_fault(image, bytes + 1, 0x1234).find("holds"), std::string::npos);
  EXPECT_NE(image_fault(image, bytes, 0x9999).find("not the image its process wrote"),
            std::string::npos);
  EXPECT_NE(image_fault(dir_ + "/gone.stasis", bytes, 0x1234).find("No such file"),
            std::string::npos);
  std::ofstream(dir_ + "/short.stasis") << "x";
  EXPECT_NE(image_fault(dir_ + "/short.stasis", 1, 0).find("too short"), std::string::npos);
  std::string damaged = dir_ + "/damaged.stasis";
  write_image(damaged, "pages", 0x1234);
  {
    std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(bytes - 3));
    f.put('\x7f');
  }
  EXPECT_NE(image_fault(damaged, bytes, 0x1234).find("sound END record"), std::string::npos);
}

// The manifest of generation 3 after a --kill that followed a restart once named generation 1's
// image file (another pid, another size): such a manifest is refused, naming the file.
TEST_F(CheckpointStore, ManifestFaultRefusesWhatIsNotInTheGeneration) {
  make_generation(1, true);
  fs::create_directory(dir_ + "/000003");
  Manifest manifest;
  manifest.generation = 3;
  uint64_t bytes = write_image(dir_ + "/000003/p-20.stasis", "pages", 7);
  manifest.processes.push_back(
      {.pid = 20, .image = "p-20.stasis", .image_bytes = bytes, .image_checksum = 7});
  EXPECT_EQ(manifest_fault(dir_, manifest), "");

  Manifest stale = manifest;
  stale.processes[0].image = "p-10.stasis";
  EXPECT_NE(manifest_fault(dir_, stale).find(dir_ + "/000003/p-10.stasis"), std::string::npos);

  Manifest increment = manifest;
  increment.processes[0].parent_generation = 1;
  EXPECT_EQ(manifest_fault(dir_, increment), "");
  increment.processes[0].parent_generation = 2;  // no such complete generation
  EXPECT_NE(manifest_fault(dir_, increment).find("builds on generation 2"), std::string::npos);

  Manifest twice = manifest;
  twice.processes.push_back(manifest.processes[0]);
  EXPECT_NE(manifest_fault(dir_, twice).find("same image"), std::string::npos);
  Manifest nameless = manifest;
  nameless.processes[0].image = "";
  EXPECT_NE(manifest_fault(dir_, nameless).find("named no image"), std::string::npos);
  Manifest empty = manifest;
  empty.processes.clear();
  EXPECT_NE(manifest_fault(dir_, empty).find("no process"), std::string::npos);
}

TEST_F(CheckpointStore, PrivateDirectoriesAndResolution) {
  std::string nested = dir_ + "/a/b";
  make_private_dirs(nested);
  struct stat st;
  ASSERT_EQ(stat(nested.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_THROW(make_private_dirs("/proc/stasis-cannot-exist/x"), stasis::Error);

  EXPECT_EQ(resolve_ckpt_dir(nested), nested);
  setenv("STASIS_CKPT_DIR", "/tmp/from-env", 1);
  EXPECT_EQ(resolve_ckpt_dir(""), "/tmp/from-env");
  unsetenv("STASIS_CKPT_DIR");
  EXPECT_EQ(resolve_ckpt_dir(""), (fs::current_path() / "stasis-ckpt").string());
  EXPECT_EQ(resolve_ckpt_dir("rel/../x"), (fs::current_path() / "x").string());
}

}  // namespace
