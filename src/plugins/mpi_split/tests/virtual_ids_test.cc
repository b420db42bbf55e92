// Virtual MPI handles (../virtual_ids.h): ids are tagged with their kind, map to the library's
// handle of the moment, and refuse anything that is not a live id of their kind.
#include "virtual_ids.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace {

struct Table {
  std::vector<StasisMpiIdEntry> storage;
  StasisMpiIdTable table{};
  Table(int kind, uint32_t capacity, uint32_t predefined) : storage(capacity) {
    EXPECT_EQ(stasis_mpi_ids_init(&table, kind, storage.data(), capacity, predefined), 0);
  }
};

TEST(VirtualIds, PredefinedIdsAreTheHeadersConstantsAndLive) {
  Table comms(STASIS_MPI_KIND_COMM, 16, STASIS_MPI_PREDEFINED_COMM_COUNT);
  StasisMpiRealHandle real = 1;
  ASSERT_EQ(stasis_mpi_ids_bind(&comms.table, MPI_COMM_WORLD, 0x7f0011223344), 0);
  ASSERT_EQ(stasis_mpi_ids_real(&comms.table, MPI_COMM_WORLD, &real), 0);
  EXPECT_EQ(real, 0x7f0011223344u);
  EXPECT_EQ(stasis_mpi_ids_index(&comms.table, MPI_COMM_SELF), STASIS_MPI_INDEX_COMM_SELF);
  EXPECT_EQ(stasis_mpi_ids_index(&comms.table, MPI_COMM_NULL), 0);
  // The same constants whatever the library: neither Open MPI's pointers nor MPICH's ints.
  EXPECT_EQ(MPI_COMM_WORLD, 0x5A010001);
  EXPECT_EQ(MPI_INT, STASIS_MPI_VID(STASIS_MPI_KIND_DATATYPE, STASIS_MPI_INDEX_INT));
  EXPECT_NE(MPI_COMM_WORLD, 0x44000000);  // MPICH's MPI_COMM_WORLD
}

TEST(VirtualIds, MadeIdsMapToTheirHandlesAndAreDistinct) {
  Table types(STASIS_MPI_KIND_DATATYPE, 64, STASIS_MPI_PREDEFINED_DATATYPE_COUNT);
  std::set<int> ids;
  for (uint64_t i = 0; i < 30; i++) {
    int id = 0;
    ASSERT_EQ(stasis_mpi_ids_add(&types.table, 0x1000 + i, &id), 0);
    EXPECT_TRUE(ids.insert(id).second) << "id given twice: " << std::hex << id;
    EXPECT_GE(stasis_mpi_ids_index(&types.table, id), STASIS_MPI_PREDEFINED_DATATYPE_COUNT);
  }
  EXPECT_EQ(types.table.live_count, 30u);
  for (int id : ids) {
    StasisMpiRealHandle real = 0;
    ASSERT_EQ(stasis_mpi_ids_real(&types.table, id, &real), 0);
    EXPECT_EQ(real, 0x1000u + (stasis_mpi_ids_index(&types.table, id) - STASIS_MPI_PREDEFINED_DATATYPE_COUNT));
  }
}

TEST(VirtualIds, RefusesWhatIsNotALiveIdOfItsKind) {
  Table comms(STASIS_MPI_KIND_COMM, 8, STASIS_MPI_PREDEFINED_COMM_COUNT);
  StasisMpiRealHandle real = 0;
  int made = 0;
  ASSERT_EQ(stasis_mpi_ids_add(&comms.table, 42, &made), 0);
  EXPECT_EQ(stasis_mpi_ids_real(&comms.table, MPI_INT, &real), -1) << "a datatype id is no communicator";
  EXPECT_EQ(stasis_mpi_ids_real(&comms.table, 0, &real), -1);
  EXPECT_EQ(stasis_mpi_ids_real(&comms.table, 0x44000000, &real), -1) << "a library's handle is refused";
  EXPECT_EQ(stasis_mpi_ids_real(&comms.table, STASIS_MPI_VID(STASIS_MPI_KIND_COMM, 7), &real), -1)
      << "an index never given out";
  EXPECT_EQ(stasis_mpi_ids_real(&comms.table, STASIS_MPI_VID(STASIS_MPI_KIND_COMM, 60000), &real), -1);
  EXPECT_EQ(stasis_mpi_ids_remove(&comms.table, MPI_COMM_WORLD), -1) << "predefined ids are never freed";
  ASSERT_EQ(stasis_mpi_ids_remove(&comms.table, made), 0);
  EXPECT_EQ(stasis_mpi_ids_real(&comms.table, made, &real), -1) << "a freed id is dead";
  EXPECT_EQ(stasis_mpi_ids_remove(&comms.table, made), -1) << "freed twice";
  EXPECT_EQ(stasis_mpi_ids_bind(&comms.table, made, 1), -1);
  EXPECT_EQ(comms.table.live_count, 0u);
}

TEST(VirtualIds, FullTableRefusesAndFreedIdsAreGivenOutAgain) {
  Table requests(STASIS_MPI_KIND_REQUEST, 5, STASIS_MPI_PREDEFINED_REQUEST_COUNT);
  int ids[4];
  for (int i = 0; i < 4; i++) ASSERT_EQ(stasis_mpi_ids_add(&requests.table, 100 + i, &ids[i]), 0);
  int more = 0;
  EXPECT_EQ(stasis_mpi_ids_add(&requests.table, 200, &more), -1);
  ASSERT_EQ(stasis_mpi_ids_remove(&requests.table, ids[2]), 0);
  ASSERT_EQ(stasis_mpi_ids_add(&requests.table, 300, &more), 0);
  EXPECT_EQ(more, ids[2]);
  StasisMpiRealHandle real = 0;
  ASSERT_EQ(stasis_mpi_ids_real(&requests.table, more, &real), 0);
  EXPECT_EQ(real, 300u);
}

TEST(VirtualIds, InitRefusesImpossibleTables) {
  std::vector<StasisMpiIdEntry> storage(4);
  StasisMpiIdTable table{};
  EXPECT_EQ(stasis_mpi_ids_init(&table, STASIS_MPI_KIND_COMM, storage.data(), 0, 0), -1);
  EXPECT_EQ(stasis_mpi_ids_init(&table, STASIS_MPI_KIND_COMM, storage.data(), 4, 5), -1);
  EXPECT_EQ(stasis_mpi_ids_init(&table, STASIS_MPI_KIND_COMM, storage.data(), STASIS_MPI_INDEX_LIMIT + 1, 0), -1);
  EXPECT_EQ(stasis_mpi_ids_init(&table, 0, storage.data(), 4, 0), -1);
}

}  // namespace
