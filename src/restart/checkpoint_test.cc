#include "restart/checkpoint.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace stasis::restart {
namespace {

std::string manifest_of(const std::string& processes) {
  return R"({"format": "stasis-checkpoint", "version": 1, "complete": true, "generation": 3, "processes": [)" +
         processes + "]}";
}

TEST(ManifestPidSpaces, EachProcessKeepsItsPidSpace) {
  Checkpoint ckpt = parse_manifest(manifest_of(R"({"image": "a-624-1.stasis", "original_pid": 624, "pid_space": "b1/4026532318"},
                                                  {"image": "b-624-2.stasis", "original_pid": 624, "pid_space": "b2/4026532319"})"),
                                   "/ckpt/000003");
  EXPECT_EQ(ckpt.pid_spaces, (std::vector<std::string>{"b1/4026532318", "b2/4026532319"}));
}

TEST(ManifestPidSpaces, AnOlderManifestIsOneSpace) {
  Checkpoint ckpt = parse_manifest(manifest_of(R"({"image": "a.stasis"}, {"image": "b.stasis"})"), "/ckpt/000003");
  EXPECT_EQ(ckpt.pid_spaces, (std::vector<std::string>{"", ""}));
}

TEST(ManifestPidSpaces, AMalformedPidSpaceIsRefusedByName) {
  for (const char* space : {R"("a@b")", R"("a,b")", "7"}) {
    try {
      parse_manifest(manifest_of(std::string(R"({"image": "a.stasis", "pid_space": )") + space + "}"), "/ckpt/000003");
      ADD_FAILURE() << space << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("/ckpt/000003/MANIFEST.json"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("processes[0].pid_space"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace stasis::restart
