// Messages kept by the drain (../drain_queue.h): a receive takes the first match in arrival order.
#include "drain_queue.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace {

void keep(StasisMpiDrainQueue &queue, int comm, int source, int tag, unsigned char mark) {
  StasisMpiDrained *message = stasis_mpi_drained_new(comm, source, tag, 1);
  ASSERT_NE(message, nullptr);
  message->data[0] = mark;
  stasis_mpi_drain_keep(&queue, message);
}

int take(StasisMpiDrainQueue &queue, int comm, int source, int tag) {
  StasisMpiDrained *message = stasis_mpi_drain_take(&queue, comm, source, tag);
  if (!message) return -1;
  int mark = message->data[0];
  stasis_mpi_drained_free(message);
  return mark;
}

TEST(DrainQueue, ATakeGetsTheFirstMatchInArrivalOrder) {
  StasisMpiDrainQueue queue{};
  keep(queue, 10, 1, 5, 'a');
  keep(queue, 10, 2, 5, 'b');
  keep(queue, 11, 1, 5, 'c');
  keep(queue, 10, 1, 6, 'd');
  keep(queue, 10, 1, 5, 'e');
  EXPECT_EQ(queue.count, 5u);
  EXPECT_TRUE(stasis_mpi_drain_has(&queue, 11, 1, -1));
  EXPECT_FALSE(stasis_mpi_drain_has(&queue, 12, -1, -1));
  EXPECT_EQ(queue.count, 5u) << "looking takes nothing";
  EXPECT_EQ(take(queue, 11, -1, -1), 'c') << "another communicator's messages never match";
  EXPECT_EQ(take(queue, 10, 1, 6), 'd');
  EXPECT_EQ(take(queue, 10, 1, 5), 'a') << "between a pair, the order they came in";
  EXPECT_EQ(take(queue, 10, -1, 5), 'b');
  EXPECT_EQ(take(queue, 10, 2, -1), -1);
  EXPECT_EQ(take(queue, 10, -1, -1), 'e');
  EXPECT_EQ(queue.count, 0u);
  EXPECT_EQ(queue.head, nullptr);
  EXPECT_EQ(queue.tail, nullptr);
  keep(queue, 10, 1, 5, 'f');  // the queue works again after being emptied from its tail
  EXPECT_EQ(take(queue, 10, 1, 5), 'f');
}

TEST(DrainQueue, ANegativeSizeIsRefused) { EXPECT_EQ(stasis_mpi_drained_new(1, 0, 0, -1), nullptr); }

}  // namespace
