// The replay log (../replay_log.h): a fresh lower half makes every object again in the order the
// program made it, the program's ids are rebound to the new library's handles, and a log that
// does not explain the tables is refused with a message naming the record.
#include "replay_log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

// A lower half that hands out handles BASE+1, BASE+2, ... and logs every call, so a test can tell
// one library's handles from another's.
struct FakeLibrary {
  uint64_t base = 0;
  uint64_t next = 0;
  std::vector<std::string> calls;
  uint64_t make() { return base + ++next; }
};
FakeLibrary library;
constexpr uint64_t kCommNull = 0xdead0000;

std::string hex(uint64_t value) {
  char text[32];
  snprintf(text, sizeof text, "%llx", (unsigned long long)value);
  return text;
}

StasisMpiRealHandle fake_predefined(int kind, int index) {
  if (kind == STASIS_MPI_KIND_COMM && index == STASIS_MPI_INDEX_COMM_NULL) return kCommNull;
  return library.base + 0x1000 * (uint64_t)kind + (uint64_t)index;
}
int fake_comm_dup(StasisMpiRealHandle comm, StasisMpiRealHandle *made) {
  *made = library.make();
  library.calls.push_back("dup " + hex(comm) + " -> " + hex(*made));
  return 0;
}
int fake_comm_split(StasisMpiRealHandle comm, int color, int key, StasisMpiRealHandle *made) {
  *made = color == MPI_UNDEFINED ? kCommNull : library.make();
  library.calls.push_back("split " + hex(comm) + " " + std::to_string(color) + " " + std::to_string(key) + " -> " +
                          hex(*made));
  return 0;
}
int fake_comm_create(StasisMpiRealHandle comm, StasisMpiRealHandle group, StasisMpiRealHandle *made) {
  *made = library.make();
  library.calls.push_back("create " + hex(comm) + " " + hex(group) + " -> " + hex(*made));
  return 0;
}
int fake_comm_free(StasisMpiRealHandle comm) {
  library.calls.push_back("comm_free " + hex(comm));
  return 0;
}
int fake_comm_group(StasisMpiRealHandle comm, StasisMpiRealHandle *made) {
  *made = library.make();
  library.calls.push_back("group " + hex(comm) + " -> " + hex(*made));
  return 0;
}
int fake_group_free(StasisMpiRealHandle group) {
  library.calls.push_back("group_free " + hex(group));
  return 0;
}
int fake_type_contiguous(int count, StasisMpiRealHandle old, StasisMpiRealHandle *made) {
  *made = library.make();
  library.calls.push_back("contiguous " + std::to_string(count) + " " + hex(old) + " -> " + hex(*made));
  return 0;
}
int fake_type_vector(int count, int blocklength, int stride, StasisMpiRealHandle old, StasisMpiRealHandle *made) {
  *made = library.make();
  library.calls.push_back("vector " + std::to_string(count) + " " + std::to_string(blocklength) + " " +
                          std::to_string(stride) + " " + hex(old) + " -> " + hex(*made));
  return 0;
}
int fake_type_commit(StasisMpiRealHandle type) {
  library.calls.push_back("commit " + hex(type));
  return 0;
}
int fake_type_free(StasisMpiRealHandle type) {
  library.calls.push_back("type_free " + hex(type));
  return 0;
}

int fake_intercomm_create(StasisMpiRealHandle local, int local_leader, StasisMpiRealHandle peer, int remote_leader,
                          int tag, StasisMpiRealHandle *made) {
  *made = library.make();
  library.calls.push_back("intercomm " + hex(local) + " " + std::to_string(local_leader) + " " + hex(peer) + " " +
                          std::to_string(remote_leader) + " " + std::to_string(tag) + " -> " + hex(*made));
  return 0;
}
int fake_intercomm_merge(StasisMpiRealHandle intercomm, int high, StasisMpiRealHandle *made) {
  *made = library.make();
  library.calls.push_back("merge " + hex(intercomm) + " " + std::to_string(high) + " -> " + hex(*made));
  return 0;
}
int fake_comm_remote_group(StasisMpiRealHandle comm, StasisMpiRealHandle *made) {
  *made = library.make();
  library.calls.push_back("remote_group " + hex(comm) + " -> " + hex(*made));
  return 0;
}

StasisMpiLower fake_lower() {
  StasisMpiLower lower{};
  lower.interface_version = STASIS_MPI_LOWER_INTERFACE_VERSION;
  lower.implementation = "fake";
  lower.predefined = fake_predefined;
  lower.comm_dup = fake_comm_dup;
  lower.comm_split = fake_comm_split;
  lower.comm_create = fake_comm_create;
  lower.comm_free = fake_comm_free;
  lower.comm_group = fake_comm_group;
  lower.group_free = fake_group_free;
  lower.type_contiguous = fake_type_contiguous;
  lower.type_vector = fake_type_vector;
  lower.type_commit = fake_type_commit;
  lower.type_free = fake_type_free;
  lower.intercomm_create = fake_intercomm_create;
  lower.intercomm_merge = fake_intercomm_merge;
  lower.comm_remote_group = fake_comm_remote_group;
  return lower;
}

// One process's upper half: tables and log, as upper_half.c keeps them.
struct UpperHalf {
  std::vector<StasisMpiIdEntry> comms{64}, types{64}, ops{STASIS_MPI_PREDEFINED_OP_COUNT}, groups{16}, requests{16};
  std::vector<StasisMpiReplayRecord> records{64};
  StasisMpiHandles handles{};
  StasisMpiReplayLog log{};
  StasisMpiLower lower = fake_lower();

  UpperHalf() {
    stasis_mpi_ids_init(&handles.comms, STASIS_MPI_KIND_COMM, comms.data(), 64, STASIS_MPI_PREDEFINED_COMM_COUNT);
    stasis_mpi_ids_init(&handles.datatypes, STASIS_MPI_KIND_DATATYPE, types.data(), 64,
                        STASIS_MPI_PREDEFINED_DATATYPE_COUNT);
    stasis_mpi_ids_init(&handles.ops, STASIS_MPI_KIND_OP, ops.data(), STASIS_MPI_PREDEFINED_OP_COUNT,
                        STASIS_MPI_PREDEFINED_OP_COUNT);
    stasis_mpi_ids_init(&handles.groups, STASIS_MPI_KIND_GROUP, groups.data(), 16, STASIS_MPI_PREDEFINED_GROUP_COUNT);
    stasis_mpi_ids_init(&handles.requests, STASIS_MPI_KIND_REQUEST, requests.data(), 16,
                        STASIS_MPI_PREDEFINED_REQUEST_COUNT);
    stasis_mpi_replay_init(&log, records.data(), 64);
  }
  // The program's first run, on a library whose handles are at 0xa000000.
  void start() {
    library = FakeLibrary{};
    library.base = 0xa000000;
    int kind = 0, index = 0;
    EXPECT_EQ(stasis_mpi_handles_bind_predefined(&handles, &lower, &kind, &index), 0);
  }
  StasisMpiRealHandle real(StasisMpiIdTable &table, int id) {
    StasisMpiRealHandle value = 0;
    EXPECT_EQ(stasis_mpi_ids_real(&table, id, &value), 0) << std::hex << id;
    return value;
  }
  // What upper_half.c does for a call that makes an object.
  int made(StasisMpiIdTable &table, StasisMpiRealHandle real_handle, uint32_t op, int from, int a0 = 0, int a1 = 0,
           int a2 = 0) {
    int id = 0;
    EXPECT_EQ(stasis_mpi_ids_add(&table, real_handle, &id), 0);
    EXPECT_EQ(stasis_mpi_replay_append(&log, op, id, from, a0, a1, a2), 0);
    return id;
  }
  void freed(StasisMpiIdTable &table, uint32_t op, int id) {
    StasisMpiRealHandle handle = real(table, id);
    if (op == STASIS_MPI_REPLAY_COMM_FREE) lower.comm_free(handle);
    else if (op == STASIS_MPI_REPLAY_TYPE_FREE) lower.type_free(handle);
    else lower.group_free(handle);
    EXPECT_EQ(stasis_mpi_ids_remove(&table, id), 0);
    EXPECT_EQ(stasis_mpi_replay_append(&log, op, 0, id, 0, 0, 0), 0);
  }
  // A "restart": another library (its handles at `base`) and the log replayed into it.
  int restart(uint64_t base, std::string *error) {
    library = FakeLibrary{};
    library.base = base;
    int kind = 0, index = 0;
    EXPECT_EQ(stasis_mpi_handles_bind_predefined(&handles, &lower, &kind, &index), 0);
    char text[512] = "";
    int rc = stasis_mpi_replay_run(&log, &lower, &handles, text, sizeof text);
    *error = text;
    return rc;
  }
};

// The program's history: what upper_half.c logs for it. Returns the ids the program still holds.
struct Held {
  int row, split_off, vector_type, group, again;
};
Held run_program(UpperHalf &upper) {
  library = FakeLibrary{};
  library.base = 0xa000000;
  int kind = 0, index = 0;
  EXPECT_EQ(stasis_mpi_handles_bind_predefined(&upper.handles, &upper.lower, &kind, &index), 0);
  StasisMpiRealHandle made = 0;
  upper.lower.comm_dup(upper.real(upper.handles.comms, MPI_COMM_WORLD), &made);
  int dup = upper.made(upper.handles.comms, made, STASIS_MPI_REPLAY_COMM_DUP, MPI_COMM_WORLD);
  upper.lower.comm_split(made, 1, 0, &made);
  int row = upper.made(upper.handles.comms, made, STASIS_MPI_REPLAY_COMM_SPLIT, dup, 1, 0);
  // This rank took part in a split that gave it no communicator.
  upper.lower.comm_split(upper.real(upper.handles.comms, dup), MPI_UNDEFINED, 0, &made);
  EXPECT_EQ(stasis_mpi_replay_append(&upper.log, STASIS_MPI_REPLAY_COMM_SPLIT, MPI_COMM_NULL, dup, MPI_UNDEFINED, 0, 0),
            0);
  upper.lower.type_contiguous(4, upper.real(upper.handles.datatypes, MPI_INT), &made);
  int block = upper.made(upper.handles.datatypes, made, STASIS_MPI_REPLAY_TYPE_CONTIGUOUS, MPI_INT, 4);
  upper.lower.type_vector(2, 1, 3, made, &made);
  int vector_type = upper.made(upper.handles.datatypes, made, STASIS_MPI_REPLAY_TYPE_VECTOR, block, 2, 1, 3);
  upper.lower.type_commit(made);
  EXPECT_EQ(stasis_mpi_replay_append(&upper.log, STASIS_MPI_REPLAY_TYPE_COMMIT, 0, vector_type, 0, 0, 0), 0);
  // The base type is freed; the vector built on it lives on.
  upper.freed(upper.handles.datatypes, STASIS_MPI_REPLAY_TYPE_FREE, block);
  upper.lower.comm_group(upper.real(upper.handles.comms, row), &made);
  int group = upper.made(upper.handles.groups, made, STASIS_MPI_REPLAY_COMM_GROUP, row);
  // A communicator freed, and its id given out again to the next one.
  upper.lower.comm_dup(upper.real(upper.handles.comms, MPI_COMM_WORLD), &made);
  int scratch = upper.made(upper.handles.comms, made, STASIS_MPI_REPLAY_COMM_DUP, MPI_COMM_WORLD);
  upper.freed(upper.handles.comms, STASIS_MPI_REPLAY_COMM_FREE, scratch);
  upper.lower.comm_split(upper.real(upper.handles.comms, MPI_COMM_SELF), 0, 5, &made);
  int again = upper.made(upper.handles.comms, made, STASIS_MPI_REPLAY_COMM_SPLIT, MPI_COMM_SELF, 0, 5);
  EXPECT_EQ(again, scratch) << "the freed id is given out again";
  return {row, dup, vector_type, group, again};
}

TEST(ReplayLog, AFreshLibraryMakesEveryObjectAgainInOrder) {
  UpperHalf upper;
  Held held = run_program(upper);
  std::vector<std::string> first_run = library.calls;
  std::string error;
  ASSERT_EQ(upper.restart(0xb000000, &error), 0) << error;
  // The same calls in the same order, on the new library's handles (0xb...), frees included.
  std::vector<std::string> expected = {
      "dup b001001 -> b000001",          "split b000001 1 0 -> b000002",  "split b000001 -32766 0 -> dead0000",
      "contiguous 4 b002007 -> b000003", "vector 2 1 3 b000003 -> b000004", "commit b000004",
      "type_free b000003",               "group b000002 -> b000005",       "dup b001001 -> b000006",
      "comm_free b000006",               "split b001002 0 5 -> b000007",
  };
  EXPECT_EQ(library.calls, expected);
  ASSERT_EQ(first_run.size(), expected.size());
  // The program's ids are unchanged and now name the new library's objects.
  EXPECT_EQ(upper.real(upper.handles.comms, held.row), 0xb000002u);
  EXPECT_EQ(upper.real(upper.handles.comms, held.split_off), 0xb000001u);
  EXPECT_EQ(upper.real(upper.handles.datatypes, held.vector_type), 0xb000004u);
  EXPECT_EQ(upper.real(upper.handles.groups, held.group), 0xb000005u);
  EXPECT_EQ(upper.real(upper.handles.comms, held.again), 0xb000007u);
  EXPECT_EQ(upper.real(upper.handles.comms, MPI_COMM_WORLD), 0xb001001u);
  EXPECT_EQ(upper.real(upper.handles.datatypes, MPI_INT), 0xb002000u + STASIS_MPI_INDEX_INT);
}

TEST(ReplayLog, ChainedRestartsRebindEachTime) {
  UpperHalf upper;
  Held held = run_program(upper);
  std::string error;
  ASSERT_EQ(upper.restart(0xb000000, &error), 0) << error;
  ASSERT_EQ(upper.restart(0xc000000, &error), 0) << error;
  EXPECT_EQ(upper.real(upper.handles.comms, held.row), 0xc000002u);
  EXPECT_EQ(upper.real(upper.handles.datatypes, held.vector_type), 0xc000004u);
  EXPECT_EQ(library.calls.size(), 11u);
}

TEST(ReplayLog, AHeldIdTheLogDoesNotExplainIsRefused) {
  UpperHalf upper;
  run_program(upper);
  int stray = 0;
  ASSERT_EQ(stasis_mpi_ids_add(&upper.handles.datatypes, 0xa0ffff, &stray), 0);  // made, never logged
  std::string error;
  EXPECT_EQ(upper.restart(0xb000000, &error), -1);
  EXPECT_NE(error.find("held by the program but no record of the log made it"), std::string::npos) << error;
}

TEST(ReplayLog, ARecordOnAFreedIdIsRefusedNamingIt) {
  UpperHalf upper;
  run_program(upper);
  // A commit of the datatype freed by record 6 (made by record 3): a damaged or forged log.
  ASSERT_EQ(upper.records[6].op, STASIS_MPI_REPLAY_TYPE_FREE);
  ASSERT_EQ(stasis_mpi_replay_append(&upper.log, STASIS_MPI_REPLAY_TYPE_COMMIT, 0, upper.records[3].made, 0, 0, 0), 0);
  std::string error;
  EXPECT_EQ(upper.restart(0xb000000, &error), -1);
  EXPECT_NE(error.find("record 11 of 12 (type_commit"), std::string::npos) << error;
  EXPECT_NE(error.find("not one made before it"), std::string::npos) << error;
}

TEST(ReplayLog, ALibraryThatRefusesIsNamed) {
  UpperHalf upper;
  run_program(upper);
  std::string error;
  upper.lower.type_vector = [](int, int, int, StasisMpiRealHandle, StasisMpiRealHandle *) { return 3; };
  EXPECT_EQ(upper.restart(0xb000000, &error), -1);
  EXPECT_NE(error.find("record 4 of 11 (type_vector"), std::string::npos) << error;
  EXPECT_NE(error.find("refused"), std::string::npos) << error;
}

TEST(ReplayLog, AnUnknownOperationIsADamagedLog) {
  UpperHalf upper;
  ASSERT_EQ(stasis_mpi_replay_append(&upper.log, 99, 0, MPI_COMM_WORLD, 0, 0, 0), 0);
  std::string error;
  EXPECT_EQ(upper.restart(0xb000000, &error), -1);
  EXPECT_NE(error.find("unknown"), std::string::npos) << error;
}

TEST(ReplayLog, ACommunicatorMadeFromAGroupIsMadeAgainFromTheGroupMadeAgain) {
  UpperHalf upper;
  upper.start();
  StasisMpiRealHandle made = 0, group_handle = 0;
  upper.lower.comm_group(upper.real(upper.handles.comms, MPI_COMM_WORLD), &group_handle);
  int group = upper.made(upper.handles.groups, group_handle, STASIS_MPI_REPLAY_COMM_GROUP, MPI_COMM_WORLD);
  upper.lower.comm_create(upper.real(upper.handles.comms, MPI_COMM_WORLD), group_handle, &made);
  int created = upper.made(upper.handles.comms, made, STASIS_MPI_REPLAY_COMM_CREATE, MPI_COMM_WORLD, group);
  upper.freed(upper.handles.groups, STASIS_MPI_REPLAY_GROUP_FREE, group); // the group may go; the communicator stays
  std::string error;
  ASSERT_EQ(upper.restart(0xb000000, &error), 0) << error;
  std::vector<std::string> expected = {"group " + hex(0xb000000 + 0x1000 * STASIS_MPI_KIND_COMM + STASIS_MPI_INDEX_COMM_WORLD) + " -> b000001"};
  expected.push_back("create " + hex(0xb000000 + 0x1000 * STASIS_MPI_KIND_COMM + STASIS_MPI_INDEX_COMM_WORLD) +
                     " b000001 -> b000002");
  expected.push_back("group_free b000001");
  EXPECT_EQ(library.calls, expected);
  EXPECT_EQ(upper.real(upper.handles.comms, created), 0xb000002u);
}

// An intercommunicator (upper_intercomm.c's record: local leader, peer id, remote leader and the
// tag in the fourth argument), its merge and its remote group are made again with the same
// arguments; a peer id this rank no longer holds (significant at the leader only) goes down as the
// library's MPI_COMM_NULL.
TEST(ReplayLog, AnIntercommunicatorItsMergeAndRemoteGroupAreMadeAgain) {
  UpperHalf upper;
  upper.start();
  StasisMpiRealHandle made = 0;
  upper.lower.comm_split(upper.real(upper.handles.comms, MPI_COMM_WORLD), 1, 0, &made);
  int local = upper.made(upper.handles.comms, made, STASIS_MPI_REPLAY_COMM_SPLIT, MPI_COMM_WORLD, 1, 0);
  upper.lower.intercomm_create(made, 0, upper.real(upper.handles.comms, MPI_COMM_WORLD), 2, 77, &made);
  int inter = upper.made(upper.handles.comms, made, STASIS_MPI_REPLAY_INTERCOMM_CREATE, local, 0, MPI_COMM_WORLD, 2);
  upper.log.records[upper.log.count - 1].args[3] = 77;
  upper.lower.intercomm_merge(made, 1, &made);
  int merged = upper.made(upper.handles.comms, made, STASIS_MPI_REPLAY_INTERCOMM_MERGE, inter, 1);
  upper.lower.comm_remote_group(upper.real(upper.handles.comms, inter), &made);
  int remote = upper.made(upper.handles.groups, made, STASIS_MPI_REPLAY_COMM_REMOTE_GROUP, inter);
  // A non-leader's record: its peer id is one it never held.
  upper.lower.intercomm_create(upper.real(upper.handles.comms, local), 0, kCommNull, 0, 78, &made);
  int other = upper.made(upper.handles.comms, made, STASIS_MPI_REPLAY_INTERCOMM_CREATE, local, 0,
                         STASIS_MPI_VID(STASIS_MPI_KIND_COMM, 40), 0);
  upper.log.records[upper.log.count - 1].args[3] = 78;
  std::string error;
  ASSERT_EQ(upper.restart(0xb000000, &error), 0) << error;
  std::string world = hex(0xb000000 + 0x1000 * STASIS_MPI_KIND_COMM + STASIS_MPI_INDEX_COMM_WORLD);
  std::vector<std::string> expected = {"split " + world + " 1 0 -> b000001",
                                       "intercomm b000001 0 " + world + " 2 77 -> b000002",
                                       "merge b000002 1 -> b000003", "remote_group b000002 -> b000004",
                                       "intercomm b000001 0 dead0000 0 78 -> b000005"};
  EXPECT_EQ(library.calls, expected);
  EXPECT_EQ(upper.real(upper.handles.comms, inter), 0xb000002u);
  EXPECT_EQ(upper.real(upper.handles.comms, merged), 0xb000003u);
  EXPECT_EQ(upper.real(upper.handles.groups, remote), 0xb000004u);
  EXPECT_EQ(upper.real(upper.handles.comms, other), 0xb000005u);
}

TEST(ReplayLog, ACreateFromAGroupNeverMadeIsRefused) {
  UpperHalf upper;
  int forged = STASIS_MPI_VID(STASIS_MPI_KIND_GROUP, 9);
  ASSERT_EQ(stasis_mpi_replay_append(&upper.log, STASIS_MPI_REPLAY_COMM_CREATE, 0, MPI_COMM_WORLD, forged, 0, 0), 0);
  std::string error;
  EXPECT_EQ(upper.restart(0xb000000, &error), -1);
  EXPECT_NE(error.find("comm_create"), std::string::npos) << error;
  EXPECT_NE(error.find("its group is not one made before it"), std::string::npos) << error;
}

TEST(ReplayLog, AFullLogRefusesToAppend) {
  StasisMpiReplayRecord storage[2];
  StasisMpiReplayLog log;
  stasis_mpi_replay_init(&log, storage, 2);
  EXPECT_EQ(stasis_mpi_replay_append(&log, STASIS_MPI_REPLAY_COMM_DUP, 1, 2, 0, 0, 0), 0);
  EXPECT_EQ(stasis_mpi_replay_append(&log, STASIS_MPI_REPLAY_COMM_DUP, 1, 2, 0, 0, 0), 0);
  EXPECT_EQ(stasis_mpi_replay_append(&log, STASIS_MPI_REPLAY_COMM_DUP, 1, 2, 0, 0, 0), -1);
}

}  // namespace
