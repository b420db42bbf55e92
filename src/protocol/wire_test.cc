#include "protocol/wire.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "common/hmac.h"
#include "protocol/relay_batch.h"

namespace {

struct SocketPair {
  int client = -1, server = -1;
  SocketPair() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    client = fds[0];
    server = fds[1];
  }
  ~SocketPair() {
    if (client >= 0) close(client);
    if (server >= 0) close(server);
  }
};

TEST(Wire, MessageRoundTrip) {
  SocketPair pair;
  const char payload[] = "key\0value";
  ASSERT_EQ(stasis_send_msg(pair.client, STASIS_MSG_NS_PUBLISH, 42, payload, sizeof payload), 0);
  StasisMsgHeader header;
  ASSERT_EQ(stasis_recv_header(pair.server, &header), 0);
  EXPECT_EQ(header.type, STASIS_MSG_NS_PUBLISH);
  EXPECT_EQ(header.arg, 42u);
  ASSERT_EQ(header.payload_len, sizeof payload);
  char got[sizeof payload];
  ASSERT_EQ(stasis_recv_exact(pair.server, got, sizeof got), 0);
  EXPECT_EQ(0, memcmp(got, payload, sizeof payload));
}

TEST(Wire, RejectsForeignHeaders) {
  SocketPair pair;
  StasisMsgHeader bogus{};
  bogus.magic = 0x12345678;
  bogus.version = STASIS_PROTOCOL_VERSION;
  ASSERT_EQ(write(pair.client, &bogus, sizeof bogus), static_cast<ssize_t>(sizeof bogus));
  StasisMsgHeader header;
  EXPECT_EQ(stasis_recv_header(pair.server, &header), -1);
  EXPECT_EQ(errno, EPROTO);

  StasisMsgHeader too_big{};
  too_big.magic = STASIS_PROTOCOL_MAGIC;
  too_big.version = STASIS_PROTOCOL_VERSION;
  too_big.payload_len = STASIS_MAX_PAYLOAD + 1;
  ASSERT_EQ(write(pair.client, &too_big, sizeof too_big), static_cast<ssize_t>(sizeof too_big));
  EXPECT_EQ(stasis_recv_header(pair.server, &header), -1);
  EXPECT_EQ(errno, EPROTO);

  EXPECT_EQ(stasis_send_msg(pair.client, 1, 0, "x", STASIS_MAX_PAYLOAD + 1), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST(Wire, ClosedPeerAndTimeouts) {
  SocketPair pair;
  char buf[8];
  EXPECT_EQ(stasis_recv_exact_timeout(pair.server, buf, sizeof buf, 50), -1);
  EXPECT_EQ(errno, ETIMEDOUT);
  ASSERT_EQ(write(pair.client, "abc", 3), 3);
  close(pair.client);
  pair.client = -1;
  EXPECT_EQ(stasis_recv_exact(pair.server, buf, sizeof buf), -1);
  EXPECT_EQ(errno, ECONNRESET);
}

// Plays the coordinator's side of the handshake, accepting only `secret`.
void serve_handshake(int fd, const uint8_t* secret, size_t secret_len, StasisAuth* received) {
  StasisHello hello{};
  for (int i = 0; i < STASIS_NONCE_BYTES; i++) hello.nonce[i] = static_cast<uint8_t>(i * 7);
  ASSERT_EQ(stasis_send_msg(fd, STASIS_MSG_HELLO, 0, &hello, sizeof hello), 0);
  StasisMsgHeader header;
  ASSERT_EQ(stasis_recv_header(fd, &header), 0);
  ASSERT_EQ(header.type, STASIS_MSG_AUTH);
  ASSERT_EQ(header.payload_len, sizeof(StasisAuth));
  ASSERT_EQ(stasis_recv_exact(fd, received, sizeof *received), 0);
  uint8_t expected[STASIS_MAC_BYTES];
  stasis_auth_mac(secret, secret_len, hello.nonce, received->role, expected);
  if (stasis_mac_equal(expected, received->mac, sizeof expected)) {
    StasisAuthOk ok{77};
    ASSERT_EQ(stasis_send_msg(fd, STASIS_MSG_AUTH_OK, 0, &ok, sizeof ok), 0);
  } else {
    const char reason[] = "bad secret\n";
    ASSERT_EQ(stasis_send_msg(fd, STASIS_MSG_AUTH_FAIL, 0, reason, sizeof reason - 1), 0);
  }
}

TEST(Wire, HandshakeAcceptsTheRightSecret) {
  SocketPair pair;
  const uint8_t secret[32] = {1, 2, 3};
  StasisAuth received{};
  std::thread coordinator(serve_handshake, pair.server, secret, sizeof secret, &received);
  StasisProcessInfo info{};
  info.pid = 1234;
  strcpy(info.program, "worker");
  uint64_t id = 0;
  char reason[128] = "";
  int rc = stasis_client_handshake(pair.client, secret, sizeof secret, STASIS_ROLE_PROCESS, &info,
                                   &id, reason, sizeof reason);
  coordinator.join();
  ASSERT_EQ(rc, 0) << reason;
  EXPECT_EQ(id, 77u);
  EXPECT_EQ(received.role, STASIS_ROLE_PROCESS);
  EXPECT_EQ(received.process.pid, 1234u);
  EXPECT_STREQ(received.process.program, "worker");
}

TEST(Wire, HandshakeReportsTheRefusal) {
  SocketPair pair;
  const uint8_t secret[32] = {1, 2, 3};
  const uint8_t wrong[32] = {1, 2, 4};
  StasisAuth received{};
  std::thread coordinator(serve_handshake, pair.server, secret, sizeof secret, &received);
  char reason[128] = "";
  int rc = stasis_client_handshake(pair.client, wrong, sizeof wrong, STASIS_ROLE_COMMAND, nullptr,
                                   nullptr, reason, sizeof reason);
  coordinator.join();
  EXPECT_EQ(rc, -1);
  EXPECT_STREQ(reason, "bad secret");
  EXPECT_EQ(received.role, STASIS_ROLE_COMMAND);
}

TEST(Wire, HandshakeFailsWhenThePeerHangsUp) {
  SocketPair pair;
  close(pair.server);
  pair.server = -1;
  const uint8_t secret[32] = {};
  char reason[128] = "";
  EXPECT_EQ(stasis_client_handshake(pair.client, secret, sizeof secret, STASIS_ROLE_COMMAND,
                                    nullptr, nullptr, reason, sizeof reason),
            -1);
  EXPECT_NE(std::string(reason).find("closed"), std::string::npos) << reason;
}

TEST(Wire, ConnectTcpNumericOnly) {
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t len = sizeof address;
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &len), 0);
  uint16_t port = ntohs(address.sin_port);

  int fd = stasis_connect_tcp("127.0.0.1", port);
  ASSERT_GE(fd, 0) << strerror(errno);
  close(fd);
  EXPECT_EQ(stasis_connect_tcp("localhost", port), -1);
  EXPECT_EQ(errno, EINVAL);
  close(listener);
  EXPECT_EQ(stasis_connect_tcp("127.0.0.1", port), -1);
  EXPECT_EQ(errno, ECONNREFUSED);
}

}  // namespace

// A relay's "image checked" flag belongs to the processes it was set for: answers alike but
// for the flag stay apart, and the flag reaches the reader.
TEST(RelayBatch, AnswersThatDifferOnlyInFlagsStayApartAndKeepThem) {
  stasis::protocol::RelayBatch batch;
  const char done[] = "done";
  batch.add(STASIS_MSG_BARRIER_DONE, 7, 0, done, sizeof done, 1, STASIS_RELAY_ENTRY_IMAGE_CHECKED);
  batch.add(STASIS_MSG_BARRIER_DONE, 7, 0, done, sizeof done, 2);
  batch.add(STASIS_MSG_BARRIER_DONE, 7, 0, done, sizeof done, 3, STASIS_RELAY_ENTRY_IMAGE_CHECKED);
  std::vector<std::string> payloads = batch.take();
  ASSERT_EQ(payloads.size(), 1u);
  std::vector<std::pair<uint16_t, std::vector<uint64_t>>> seen;
  std::string fault = stasis::protocol::for_each_relay_entry(
      reinterpret_cast<const uint8_t*>(payloads[0].data()), payloads[0].size(),
      [&](const StasisRelayEntry& entry, const uint8_t*, const std::vector<uint64_t>& ids) {
        seen.emplace_back(entry.flags, ids);
      });
  EXPECT_EQ(fault, "");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].first, STASIS_RELAY_ENTRY_IMAGE_CHECKED);
  EXPECT_EQ(seen[0].second, (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(seen[1].first, 0);
  EXPECT_EQ(seen[1].second, (std::vector<uint64_t>{2}));
}

// A relay's aggregated answer carries a count and the last ask it covers, no ids, and keeps its
// place after the entries before it; an entry with more ids than a message holds is split.
TEST(RelayBatch, AnAggregatedEntryCarriesACountAndNoIdsAndLargeEntriesSplit) {
  stasis::protocol::RelayBatch batch;
  const char done[] = "done";
  for (uint64_t id = 10; id < 40; id++) batch.add(STASIS_MSG_CHILDREN, 7, 0, nullptr, 0, id);
  batch.add_all_of_mine(STASIS_MSG_BARRIER_DONE, 7, 42, done, sizeof done, 30);
  size_t max_payload = 2 * sizeof(StasisRelayEntry) + 12 * sizeof(uint64_t) + sizeof done;
  std::vector<std::string> payloads = batch.take(max_payload);
  ASSERT_EQ(payloads.size(), 3u);
  std::vector<uint64_t> children;
  uint32_t aggregated = 0, covered = 0;
  for (const std::string& payload : payloads) {
    EXPECT_LE(payload.size(), max_payload);
    std::string fault = stasis::protocol::for_each_relay_entry(
        reinterpret_cast<const uint8_t*>(payload.data()), payload.size(),
        [&](const StasisRelayEntry& entry, const uint8_t*, const std::vector<uint64_t>& ids) {
          if (entry.flags & stasis::protocol::kRelayEntryAllOfMine) {
            EXPECT_EQ(children.size(), 30u) << "the aggregate stays after what came before it";
            EXPECT_TRUE(ids.empty());
            aggregated = entry.count;
            covered = entry.reserved;
          } else {
            children.insert(children.end(), ids.begin(), ids.end());
          }
        });
    EXPECT_EQ(fault, "");
  }
  EXPECT_EQ(children.front(), 10u);
  EXPECT_EQ(children.back(), 39u);
  EXPECT_EQ(aggregated, 30u);
  EXPECT_EQ(covered, 42u);
}

// Relay protocol 3: a barrier for all of a relay's processes up to a join is one entry with the
// join count as its only id, which nothing later joins (a process's own message after it stays
// after it); an aggregated answer keeps the "image checked" flag it was given.
TEST(RelayBatch, ABarrierForTheFirstJoinedIsOneEntryAndAggregatesKeepTheCheckedFlag) {
  stasis::protocol::RelayBatch batch;
  const char barrier[] = "suspend";
  const char done[] = "done";
  batch.add(STASIS_MSG_RELAY_LEFT, 0, 0, nullptr, 0, 3);
  batch.add_first_joined(STASIS_MSG_BARRIER, 7, 5, barrier, sizeof barrier, 1000);
  batch.add(STASIS_MSG_BARRIER, 7, 5, barrier, sizeof barrier, 4);
  batch.add_all_of_mine(STASIS_MSG_BARRIER_DONE, 7, 5, done, sizeof done, 999, STASIS_RELAY_ENTRY_IMAGE_CHECKED);
  std::vector<std::string> payloads = batch.take();
  ASSERT_EQ(payloads.size(), 1u);
  struct Seen {
    uint16_t type, flags;
    uint32_t count;
    std::vector<uint64_t> ids;
  };
  std::vector<Seen> seen;
  std::string fault = stasis::protocol::for_each_relay_entry(
      reinterpret_cast<const uint8_t*>(payloads[0].data()), payloads[0].size(),
      [&](const StasisRelayEntry& entry, const uint8_t*, const std::vector<uint64_t>& ids) {
        seen.push_back({entry.type, entry.flags, entry.count, ids});
      });
  EXPECT_EQ(fault, "");
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[1].type, STASIS_MSG_BARRIER);
  EXPECT_EQ(seen[1].flags, stasis::protocol::kRelayEntryFirstJoined);
  EXPECT_EQ(seen[1].ids, (std::vector<uint64_t>{1000}));
  EXPECT_EQ(seen[2].flags, 0) << "a process's own barrier is not folded into the relay's";
  EXPECT_EQ(seen[2].ids, (std::vector<uint64_t>{4}));
  EXPECT_EQ(seen[3].flags, stasis::protocol::kRelayEntryAllOfMine | STASIS_RELAY_ENTRY_IMAGE_CHECKED);
  EXPECT_EQ(seen[3].count, 999u);
  EXPECT_TRUE(seen[3].ids.empty());
}
