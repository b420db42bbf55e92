// The name service alone: requests in, replies out, no sockets.
#include "coordinator/name_service.h"

#include <gtest/gtest.h>

#include <cstring>

using stasis::coordinator::NameService;
using Reply = NameService::Reply;

namespace {

constexpr uint64_t kProcess = 1, kOtherProcess = 2, kCommand = 3;

std::vector<Reply> request(NameService& names, uint64_t client, bool is_process, uint16_t type,
                           const std::string& payload, uint64_t arg = 0) {
  StasisMsgHeader header{};
  header.type = type;
  header.payload_len = static_cast<uint32_t>(payload.size());
  header.arg = arg;
  return names.handle(client, is_process, header, reinterpret_cast<const uint8_t*>(payload.data()));
}

std::string key_value(const std::string& key, const std::string& value) {
  return key + std::string(1, '\0') + value;
}

TEST(NameService, LookupFindsWhatWasPublished) {
  NameService names;
  EXPECT_EQ(request(names, kCommand, false, STASIS_MSG_NS_LOOKUP, "k", 7),
            (std::vector<Reply>{{kCommand, 7, 1, ""}}));
  EXPECT_TRUE(request(names, kProcess, true, STASIS_MSG_NS_PUBLISH, key_value("k", "v1")).empty());
  EXPECT_EQ(request(names, kCommand, false, STASIS_MSG_NS_LOOKUP, "k", 8),
            (std::vector<Reply>{{kCommand, 8, 0, "v1"}}));
  // Published again: the newest value wins.
  request(names, kOtherProcess, true, STASIS_MSG_NS_PUBLISH, key_value("k", "v2"));
  EXPECT_EQ(names.lookup(kCommand, 9, "k", false), (std::vector<Reply>{{kCommand, 9, 0, "v2"}}));
}

TEST(NameService, WaitIsAnsweredWhenTheKeyIsPublished) {
  NameService names;
  EXPECT_TRUE(request(names, kCommand, false, STASIS_MSG_NS_WAIT, "later", 41).empty());
  EXPECT_TRUE(request(names, kOtherProcess, true, STASIS_MSG_NS_WAIT, "later", 42).empty());
  std::vector<Reply> answered =
      request(names, kProcess, true, STASIS_MSG_NS_PUBLISH, key_value("later", "here"));
  EXPECT_EQ(answered,
            (std::vector<Reply>{{kCommand, 41, 0, "here"}, {kOtherProcess, 42, 0, "here"}}));
  // Answered once; a wait for a published key is answered at once.
  EXPECT_TRUE(names.publish(kProcess, true, "later", "again").empty());
  EXPECT_EQ(names.lookup(kCommand, 43, "later", true),
            (std::vector<Reply>{{kCommand, 43, 0, "again"}}));
}

TEST(NameService, WaitOfAClosedConnectionIsForgotten) {
  NameService names;
  names.lookup(kCommand, 1, "k", true);
  names.forget(kCommand);
  EXPECT_TRUE(names.publish(kProcess, true, "k", "v").empty());
}

TEST(NameService, ListGivesEveryEntryUnderAPrefixInKeyOrder) {
  NameService names;
  names.publish(kProcess, true, "ib/b", "2");
  names.publish(kProcess, true, "ib/a", "one");
  names.publish(kProcess, true, "other", "x");
  Reply listed = names.list(kCommand, 5, "ib/");
  std::string expected;
  for (auto [key, value] : {std::pair<std::string, std::string>{"ib/a", "one"}, {"ib/b", "2"}}) {
    auto length = static_cast<uint32_t>(value.size());
    expected.append(key).push_back('\0');
    expected.append(reinterpret_cast<const char*>(&length), sizeof length).append(value);
  }
  EXPECT_EQ(listed, (Reply{kCommand, 5, 0, expected}));
  EXPECT_EQ(request(names, kCommand, false, STASIS_MSG_NS_LIST, "none/", 6),
            (std::vector<Reply>{{kCommand, 6, 0, ""}}));
}

TEST(NameService, ListTooLongForOneMessageSaysSo) {
  NameService names;
  std::string big(STASIS_MAX_PAYLOAD / 2, 'x');
  for (const char* key : {"p/1", "p/2", "p/3"}) names.publish(kProcess, true, key, big);
  EXPECT_EQ(names.list(kCommand, 1, "p/"), (Reply{kCommand, 1, 1, ""}));
}

TEST(NameService, EntriesOfAProcessGoWithItOrWhenWithdrawn) {
  NameService names;
  names.publish(kProcess, true, "ib/qp/1", "a");
  names.publish(kProcess, true, "ib/qp/2", "b");
  names.publish(kProcess, true, "hosts/1", "c");
  names.publish(kCommand, false, "restart/1", "d");
  EXPECT_TRUE(request(names, kProcess, true, STASIS_MSG_NS_WITHDRAW, "ib/").empty());
  EXPECT_EQ(names.lookup(kCommand, 1, "ib/qp/1", false)[0].status, 1u);
  EXPECT_EQ(names.lookup(kCommand, 1, "hosts/1", false)[0].status, 0u);
  names.forget(kProcess);
  EXPECT_EQ(names.lookup(kCommand, 1, "hosts/1", false)[0].status, 1u);
  // A command's entries stay until replaced, whoever leaves.
  names.forget(kCommand);
  EXPECT_EQ(names.lookup(kOtherProcess, 1, "restart/1", false)[0].payload, "d");
}

TEST(NameService, AnEntryPublishedAgainByAnotherIsNoLongerTheFirstOwners) {
  NameService names;
  names.publish(kProcess, true, "k", "mine");
  names.publish(kOtherProcess, true, "k", "theirs");
  names.forget(kProcess);
  EXPECT_EQ(names.lookup(kCommand, 1, "k", false)[0].payload, "theirs");
  names.forget(kOtherProcess);
  EXPECT_EQ(names.lookup(kCommand, 1, "k", false)[0].status, 1u);
}

TEST(NameService, KnowsItsRequests) {
  EXPECT_TRUE(NameService::is_request(STASIS_MSG_NS_PUBLISH));
  EXPECT_TRUE(NameService::is_request(STASIS_MSG_NS_WITHDRAW));
  EXPECT_FALSE(NameService::is_request(STASIS_MSG_NS_REPLY));
  EXPECT_FALSE(NameService::is_request(STASIS_MSG_COMMAND));
}

}  // namespace
