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

TEST(ShellQuote, QuotesQuotes) { EXPECT_EQ(shell_quote("a'b c"), "'a'\\''b c'"); }

}  // namespace
}  // namespace stasis::restart
