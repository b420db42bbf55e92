#include "plugins/sockets/address_table.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace stasis::rt {
namespace {

std::string bytes_of(const char* text) {
  std::string bytes(16, '\0');
  in_addr v4;
  EXPECT_EQ(inet_pton(AF_INET, text, &v4), 1) << text;
  bytes[10] = bytes[11] = '\xff';
  std::memcpy(bytes.data() + 12, &v4, 4);
  return bytes;
}

std::string text_of(const uint8_t* bytes) {
  if (!bytes) return "-";
  char text[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, bytes + 12, text, sizeof text);
}

// `hosts` as "OLD=NEW" pairs, every host of a checkpoint.
std::vector<StasisAddressMove> moves(std::initializer_list<std::pair<const char*, const char*>> hosts) {
  std::vector<StasisAddressMove> out;
  for (const auto& [from, to] : hosts) {
    StasisAddressMove move;
    std::memcpy(move.old_address, bytes_of(from).data(), 16);
    std::memcpy(move.new_address, bytes_of(to).data(), 16);
    out.push_back(move);
  }
  return out;
}

std::string real(const AddressTable& table, const char* address) {
  return text_of(table.real_of_virtual(reinterpret_cast<const uint8_t*>(bytes_of(address).data())));
}

std::string shown(const AddressTable& table, const char* address) {
  return text_of(table.virtual_of_real(reinterpret_cast<const uint8_t*>(bytes_of(address).data())));
}

TEST(AddressTable, EmptyUntilAHostMoves) {
  AddressTable table;
  EXPECT_FALSE(table.any_moved());
  auto same = moves({{"10.0.0.1", "10.0.0.1"}, {"10.0.0.2", "10.0.0.2"}});
  ASSERT_TRUE(table.compose(same.data(), same.size()));
  EXPECT_FALSE(table.any_moved());
  EXPECT_EQ(real(table, "10.0.0.1"), "-");
  EXPECT_EQ(shown(table, "10.0.0.1"), "-");
}

TEST(AddressTable, NewNodesTranslateBothWays) {
  AddressTable table;
  auto to_new = moves({{"10.0.0.1", "10.0.1.7"}, {"10.0.0.2", "10.0.1.8"}});
  ASSERT_TRUE(table.compose(to_new.data(), to_new.size()));
  EXPECT_TRUE(table.any_moved());
  EXPECT_EQ(real(table, "10.0.0.1"), "10.0.1.7");
  EXPECT_EQ(real(table, "10.0.0.2"), "10.0.1.8");
  EXPECT_EQ(real(table, "10.0.1.7"), "-");  // already a current address (a library learnt it)
  EXPECT_EQ(real(table, "192.168.1.1"), "-");
  EXPECT_EQ(shown(table, "10.0.1.7"), "10.0.0.1");
  EXPECT_EQ(shown(table, "10.0.1.8"), "10.0.0.2");
  EXPECT_EQ(shown(table, "192.168.1.1"), "-");
}

TEST(AddressTable, SwappedHostsAreAmbiguous) {
  AddressTable table;
  auto swap = moves({{"10.0.0.1", "10.0.0.2"}, {"10.0.0.2", "10.0.0.1"}});
  ASSERT_TRUE(table.compose(swap.data(), swap.size()));
  EXPECT_EQ(real(table, "10.0.0.1"), "-");
  EXPECT_EQ(real(table, "10.0.0.2"), "-");
  EXPECT_EQ(shown(table, "10.0.0.1"), "-");
  EXPECT_EQ(shown(table, "10.0.0.2"), "-");
}

TEST(AddressTable, TwoHostsOnOneNodeAreNotShownApart) {
  AddressTable table;
  auto merge = moves({{"10.0.0.1", "10.0.1.7"}, {"10.0.0.2", "10.0.1.7"}});
  ASSERT_TRUE(table.compose(merge.data(), merge.size()));
  EXPECT_EQ(real(table, "10.0.0.1"), "10.0.1.7");
  EXPECT_EQ(real(table, "10.0.0.2"), "10.0.1.7");
  EXPECT_EQ(shown(table, "10.0.1.7"), "-");
}

TEST(AddressTable, ChainOfRestartsComposes) {
  AddressTable table;
  auto first = moves({{"10.0.0.1", "10.0.1.7"}, {"10.0.0.2", "10.0.1.8"}});
  ASSERT_TRUE(table.compose(first.data(), first.size()));
  // The second checkpoint lists the hosts as they were then; a process started on a new host
  // (10.0.2.9) after the first restart joined the computation.
  auto second = moves({{"10.0.1.7", "10.0.3.1"}, {"10.0.1.8", "10.0.1.8"}, {"10.0.2.9", "10.0.3.2"}});
  ASSERT_TRUE(table.compose(second.data(), second.size()));
  EXPECT_EQ(real(table, "10.0.0.1"), "10.0.3.1");
  EXPECT_EQ(real(table, "10.0.0.2"), "10.0.1.8");
  EXPECT_EQ(real(table, "10.0.2.9"), "10.0.3.2");
  EXPECT_EQ(shown(table, "10.0.3.1"), "10.0.0.1");
  EXPECT_EQ(shown(table, "10.0.3.2"), "10.0.2.9");
  // Back where the first run was: nothing to translate any more.
  auto back = moves({{"10.0.3.1", "10.0.0.1"}, {"10.0.1.8", "10.0.0.2"}, {"10.0.3.2", "10.0.2.9"}});
  ASSERT_TRUE(table.compose(back.data(), back.size()));
  EXPECT_FALSE(table.any_moved());
  EXPECT_EQ(real(table, "10.0.0.1"), "-");
  EXPECT_EQ(shown(table, "10.0.0.1"), "-");
}

TEST(AddressTable, TooManyHostsReported) {
  AddressTable table;
  std::vector<StasisAddressMove> many;
  for (int i = 0; i < STASIS_MAX_ADDRESS_MOVES + 2; i++) {
    std::string from = "10.1.0." + std::to_string(i + 1), to = "10.2.0." + std::to_string(i + 1);
    auto one = moves({{from.c_str(), to.c_str()}});
    many.push_back(one[0]);
  }
  EXPECT_FALSE(table.compose(many.data(), many.size()));
  EXPECT_EQ(real(table, "10.1.0.1"), "10.2.0.1");
  EXPECT_EQ(real(table, "10.1.0.66"), "-");
}

}  // namespace
}  // namespace stasis::rt
