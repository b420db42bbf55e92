#include "restart/hosts.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace stasis::restart {
namespace {

TEST(HostMapping, ParsesPairs) {
  auto m = parse_host_mapping("10.0.0.1=10.0.0.2,10.0.0.2=10.0.0.1");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at("10.0.0.1"), "10.0.0.2");
  EXPECT_EQ(m.at("10.0.0.2"), "10.0.0.1");
}

TEST(HostMapping, RefusesMalformed) {
  EXPECT_THROW(parse_host_mapping("10.0.0.1"), Error);
  EXPECT_THROW(parse_host_mapping("=10.0.0.1"), Error);
  EXPECT_THROW(parse_host_mapping("a=b=c"), Error);
  EXPECT_THROW(parse_host_mapping("a=b,a=c"), Error);
  EXPECT_THROW(parse_host_mapping("a=b,"), Error);
}

TEST(HostParts, ProcessesOnAnotherHostStartParts) {
  // 0 (h1) -> 1 (h1), 2 (h2) -> 3 (h2) -> 4 (h1); 5 (h2) has no parent in the computation.
  std::vector<int> parents = {-1, 0, 0, 2, 3, -1};
  std::vector<std::string> hosts = {"h1", "h1", "h2", "h2", "h1", "h2"};
  EXPECT_EQ(part_roots(parents, hosts), (std::vector<size_t>{0, 0, 2, 2, 4, 5}));
}

TEST(HostParts, LoopbackIsLocal) {
  EXPECT_TRUE(is_local_address("127.0.0.1"));
  EXPECT_FALSE(is_local_address("192.0.2.77"));  // TEST-NET-1: never assigned
  EXPECT_FALSE(is_local_address("not-an-address"));
}

TEST(PartNames, VirtualPidAndItsPidSpace) {
  PartName plain = parse_part_name("624", "--part");
  EXPECT_EQ(plain.vpid, 624u);
  EXPECT_EQ(plain.space, "");
  EXPECT_EQ(plain.text(), "624");
  PartName spaced = parse_part_name("624@5e1c-ab/4026532318", "--part");
  EXPECT_EQ(spaced.vpid, 624u);
  EXPECT_EQ(spaced.space, "5e1c-ab/4026532318");
  EXPECT_EQ(parse_part_name(spaced.text(), "--part").text(), spaced.text());
  for (const char* bad : {"", "0", "x", "624@", "@s", "12x@s", "99999999999"})
    EXPECT_THROW(parse_part_name(bad, "--part"), Error) << bad;
}

TEST(ShellQuote, QuotesQuotes) { EXPECT_EQ(shell_quote("a'b c"), "'a'\\''b c'"); }

}  // namespace
}  // namespace stasis::restart
