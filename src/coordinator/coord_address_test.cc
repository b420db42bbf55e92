#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "coordinator/coord_address.h"
#include "common/error.h"

using stasis::CoordAddress;

namespace {

TEST(CoordAddress, ParsesHostPortAndPortAlone) {
  CoordAddress a = CoordAddress::parse("10.0.0.5:9000");
  EXPECT_EQ(a.host, "10.0.0.5");
  EXPECT_EQ(a.port, 9000);
  CoordAddress b = CoordAddress::parse("7790");
  EXPECT_EQ(b.host, "127.0.0.1");
  EXPECT_EQ(b.port, 7790);
  CoordAddress c = CoordAddress::parse("[::1]:7781");
  EXPECT_EQ(c.host, "::1");
  EXPECT_EQ(c.str(), "[::1]:7781");
  EXPECT_EQ(CoordAddress::parse("localhost:5").host, "127.0.0.1");
  EXPECT_EQ(a.str(), "10.0.0.5:9000");
}

TEST(CoordAddress, RejectsMalformedAddresses) {
  for (const char* bad : {"", "host:", "host:0", "host:70000", "host:12x", "[::1]", "[::1]7781"}) {
    EXPECT_THROW(CoordAddress::parse(bad), stasis::Error) << bad;
  }
}

TEST(CoordAddress, OptionThenEnvironmentThenDefault) {
  unsetenv("STASIS_COORD");
  EXPECT_EQ(stasis::coord_address_from("").str(), "127.0.0.1:7781");
  setenv("STASIS_COORD", "127.0.0.2:1234", 1);
  EXPECT_EQ(stasis::coord_address_from("").str(), "127.0.0.2:1234");
  EXPECT_EQ(stasis::coord_address_from("4321").str(), "127.0.0.1:4321");
  unsetenv("STASIS_COORD");
}

TEST(SecretFile, PathAndLookup) {
  char pattern[] = "/tmp/stasis-secret-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  std::string dir = pattern;
  setenv("STASIS_RUNTIME_DIR", dir.c_str(), 1);
  unsetenv("STASIS_SECRET");
  CoordAddress addr = CoordAddress::parse("127.0.0.1:7781");
  EXPECT_EQ(stasis::secret_path(addr), dir + "/coordinator-127.0.0.1-7781.secret");
  EXPECT_EQ(stasis::find_secret(addr), "");
  std::ofstream(stasis::secret_path(addr)) << "ab12\n";
  EXPECT_EQ(stasis::find_secret(addr), "ab12");
  setenv("STASIS_SECRET", "cd34", 1);
  EXPECT_EQ(stasis::find_secret(addr), "cd34");
  unsetenv("STASIS_SECRET");
  unsetenv("STASIS_RUNTIME_DIR");
  std::filesystem::remove_all(dir);
}

}  // namespace
