// Messages counted per peer (../peer_counts.h): by world rank, whatever communicator carried them.
#include "peer_counts.h"

#include <gtest/gtest.h>

namespace {

TEST(PeerCounts, CountsByWorldRankThroughEachCommunicatorsMap) {
  StasisMpiPeerCounts peers;
  ASSERT_EQ(stasis_mpi_peers_init(&peers, 4, 8), 0);
  ASSERT_EQ(stasis_mpi_peers_map_comm(&peers, 1, nullptr, 4), 0);  // the world: identity
  const int reversed[] = {3, 2, 1, 0};
  ASSERT_EQ(stasis_mpi_peers_map_comm(&peers, 3, reversed, 4), 0);
  const int self[] = {2};
  ASSERT_EQ(stasis_mpi_peers_map_comm(&peers, 2, self, 1), 0);
  stasis_mpi_peers_sent(&peers, 1, 1);
  stasis_mpi_peers_sent(&peers, 3, 1);  // rank 1 there is world rank 2
  stasis_mpi_peers_sent(&peers, 2, 0);  // to itself
  stasis_mpi_peers_received(&peers, 3, 0);
  EXPECT_EQ(peers.sent_to[1], 1u);
  EXPECT_EQ(peers.sent_to[2], 2u);
  EXPECT_EQ(peers.received_from[3], 1u);
  EXPECT_EQ(peers.received_total, 1u);
  EXPECT_EQ(peers.uncounted, 0u);
}

TEST(PeerCounts, APeerNoMapKnowsIsCountedAsUncounted) {
  StasisMpiPeerCounts peers;
  ASSERT_EQ(stasis_mpi_peers_init(&peers, 2, 4), 0);
  ASSERT_EQ(stasis_mpi_peers_map_comm(&peers, 1, nullptr, 2), 0);
  stasis_mpi_peers_sent(&peers, 1, 2);     // beyond the communicator
  stasis_mpi_peers_received(&peers, 3, 0);  // an unmapped communicator
  EXPECT_EQ(peers.uncounted, 2u);
  EXPECT_EQ(peers.received_total, 0u);
}

TEST(PeerCounts, AMapNamingARankOutsideTheWorldIsRefused) {
  StasisMpiPeerCounts peers;
  ASSERT_EQ(stasis_mpi_peers_init(&peers, 2, 4), 0);
  const int bad[] = {0, 2};
  EXPECT_EQ(stasis_mpi_peers_map_comm(&peers, 1, bad, 2), -1);
  EXPECT_EQ(stasis_mpi_peers_map_comm(&peers, 4, nullptr, 2), -1);
  EXPECT_EQ(stasis_mpi_peers_init(&peers, 0, 4), -1);
}

}  // namespace
