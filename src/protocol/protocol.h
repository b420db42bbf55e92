// Wire protocol between the coordinator, the in-process runtime and the `stasis` commands.
//
// Every message is a fixed header followed by `payload_len` bytes. Payloads are fixed-size C
// structs (so the runtime can build and parse them with no allocation) except where noted as
// text. All integers are little-endian (x86-64 only for now).
//
// Connection sequence (both processes and commands):
//   coordinator -> client  HELLO      payload: StasisHello (a fresh random nonce)
//   client -> coordinator  AUTH       payload: StasisAuth  (HMAC-SHA256(secret, nonce || role))
//   coordinator -> client  AUTH_OK    payload: StasisAuthOk  or AUTH_FAIL (text reason) then close
// A process then receives BARRIER messages and answers each with BARRIER_DONE; a command sends
// one COMMAND and reads one COMMAND_REPLY (text, usually JSON).
#pragma once

#include <stdint.h>

// The runtime's C sources include this header too: C has no enum base types and needs typedefs.
#ifdef __cplusplus
#define STASIS_PROTOCOL_ENUM_BASE(type) : type
#else
#include <assert.h>
#define STASIS_PROTOCOL_ENUM_BASE(type)
typedef struct StasisMsgHeader StasisMsgHeader;
typedef struct StasisHello StasisHello;
typedef struct StasisProcessInfo StasisProcessInfo;
typedef struct StasisAuth StasisAuth;
typedef struct StasisAuthOk StasisAuthOk;
typedef struct StasisBarrier StasisBarrier;
typedef struct StasisBarrierDone StasisBarrierDone;
typedef struct StasisCommand StasisCommand;
typedef struct StasisRelayEntry StasisRelayEntry;
#endif

#define STASIS_PROTOCOL_MAGIC 0x4d535453u /* "STSM" */
// 2: BARRIER_DONE carries write_nanoseconds; 3: compression as a StasisCompressionSetting;
// 4: BARRIER_DONE carries image_checksum, StasisProcessInfo carries pid_space; 5: and srun_*;
// 6: and virtual_pid_space; 7: host relays (STASIS_ROLE_RELAY, RELAY_BATCH)
#define STASIS_PROTOCOL_VERSION 7
#define STASIS_DEFAULT_PORT 7781
#define STASIS_NONCE_BYTES 32
#define STASIS_MAC_BYTES 32
#define STASIS_NAME_MAX 64
#define STASIS_PATH_MAX 1024
#define STASIS_MESSAGE_MAX 512
#define STASIS_MAX_PAYLOAD (1u << 20)

enum StasisMsgType STASIS_PROTOCOL_ENUM_BASE(uint16_t) {
  STASIS_MSG_HELLO = 1,
  STASIS_MSG_AUTH = 2,
  STASIS_MSG_AUTH_OK = 3,
  STASIS_MSG_AUTH_FAIL = 4,
  // coordinator -> process: run the named barrier's action (see StasisBarrier).
  STASIS_MSG_BARRIER = 10,
  // process -> coordinator: the action is done (or failed: status != 0).
  STASIS_MSG_BARRIER_DONE = 11,
  // coordinator -> process: end now (exit status 137 like SIGKILL, after the last checkpoint).
  STASIS_MSG_KILL = 12,
  // process -> coordinator: the application asked for a checkpoint (stasis_checkpoint()).
  STASIS_MSG_REQUEST_CHECKPOINT = 13,
  // process -> coordinator, at the "children" barrier before its BARRIER_DONE: the real pids
  // (uint32_t each) of its live children. The checkpoint goes on only when every one of them is
  // a process of the computation that is suspended too.
  STASIS_MSG_CHILDREN = 14,
  // process -> coordinator: one line of the runtime's own (a warning, a notice) for the
  // coordinator's log and the reply of the command under way; the runtime never writes on the
  // program's descriptors, which are the program's output (a VM's serial console, say).
  STASIS_MSG_LOG = 15,
  // command -> coordinator, and its answer.
  STASIS_MSG_COMMAND = 20,
  STASIS_MSG_COMMAND_REPLY = 21,
  // name service: publish a key/value, look one up (reply carries the value or status 1).
  STASIS_MSG_NS_PUBLISH = 30,
  STASIS_MSG_NS_LOOKUP = 31,
  STASIS_MSG_NS_REPLY = 32,
  // A lookup answered only once the key is published (at once if it is); the client gives up
  // by closing its connection.
  STASIS_MSG_NS_WAIT = 33,
  // Every entry whose key starts with the payload (reply: see below).
  STASIS_MSG_NS_LIST = 34,
  // Removes every entry this connection published under the payload's key prefix (no reply).
  STASIS_MSG_NS_WITHDRAW = 35,
  // Host relay <-> coordinator (src/relay/README.md): many processes' messages in one. The
  // payload is a sequence of StasisRelayEntry, each followed by its payload_len bytes and then
  // `count` uint64_t ids (the relay's own ids for its processes): the same message from, or to,
  // each of those processes. Entries are in order, and one process's are never reordered.
  STASIS_MSG_RELAY_BATCH = 40,
  // Entry types only inside a RELAY_BATCH: a process joined the relay (payload: its
  // StasisProcessInfo, once its HMAC answer checked out there); a process left it (no payload;
  // downwards: the coordinator dropped it, the relay closes its connection).
  STASIS_MSG_RELAY_JOIN = 41,
  STASIS_MSG_RELAY_LEFT = 42,
};

// The image compression a command, the coordinator or a "checkpoint" barrier asks for
// (protocol/compression.h names them).
enum StasisCompressionSetting STASIS_PROTOCOL_ENUM_BASE(uint32_t) {
  // The coordinator's --compress or $STASIS_COMPRESS; where it has none, each process's own
  // ($STASIS_COMPRESS at launch, else zstd).
  STASIS_COMPRESSION_DEFAULT = 0,
  STASIS_COMPRESSION_NONE = 1,
  STASIS_COMPRESSION_ZSTD = 2,
  STASIS_COMPRESSION_LZ4 = 3,
};

enum StasisRole STASIS_PROTOCOL_ENUM_BASE(uint32_t) {
  STASIS_ROLE_PROCESS = 1,
  STASIS_ROLE_COMMAND = 2,
  // A host's relay (src/relay/): speaks for the processes that joined it over a Unix socket.
  STASIS_ROLE_RELAY = 3,
};

struct StasisMsgHeader {
  uint32_t magic;        // STASIS_PROTOCOL_MAGIC
  uint16_t version;      // STASIS_PROTOCOL_VERSION
  uint16_t type;         // StasisMsgType
  uint32_t payload_len;  // bytes following this header, <= STASIS_MAX_PAYLOAD
  uint32_t reserved;
  uint64_t arg;          // message specific (generation for barriers, request id for NS)
};
static_assert(sizeof(StasisMsgHeader) == 24, "wire layout");

struct StasisHello {
  uint8_t nonce[STASIS_NONCE_BYTES];
  uint32_t coordinator_pid;
  uint32_t reserved;
};

// Who a process is; sent inside AUTH by processes (zeroed by commands).
struct StasisProcessInfo {
  uint32_t pid;            // real pid now
  uint32_t original_pid;   // pid at launch (differs after restart)
  uint32_t restarted;      // 1 when this connection comes from a restarted process
  uint32_t restart_process_count;  // restarted: how many processes the restart brings back
  uint64_t restarted_generation;  // generation it was restarted from (0 if none)
  char hostname[STASIS_NAME_MAX];
  // Where `pid` names this process: "BOOT_ID/PID_NAMESPACE_INODE" (the kernel's boot id, so one
  // per machine and boot, and its pid namespace). A parent's child is a member when both are of
  // one pid space, whatever host names their UTS namespaces give them. "" if unknown.
  char pid_space[STASIS_NAME_MAX];
  char program[STASIS_NAME_MAX];  // short name (comm / argv[0] basename)
  char ckpt_dir[STASIS_PATH_MAX]; // the launch's --ckpt-dir / STASIS_CKPT_DIR, absolute; may be ""
  double interval_seconds;        // launch --interval: adopted by a coordinator that has none
  // Barriers the process's plugins add to every checkpoint, run in this order between "drain"
  // and "checkpoint": comma-separated names, "" if none.
  char plugin_barriers[256];
  // A task of an srun that a process of the computation ran (a launched script's `srun`): that
  // srun's real pid and its parent's, as the parent reports its live children, and their virtual
  // pids, as the restart names them. All 0 for any other process.
  uint32_t srun_pid, srun_parent_pid, srun_vpid, srun_parent_vpid;
  // Where `original_pid` (and every pid the program sees) names a process: `pid_space` until the
  // computation's first restart, then the space its checkpoint recorded for it (the pid table's),
  // whichever host it comes back on. Two processes restarted onto one host from two hosts keep
  // two spaces, so MANIFEST.json keys each process by (virtual_pid_space, original_pid).
  char virtual_pid_space[STASIS_NAME_MAX];
};

struct StasisAuth {
  uint32_t role;  // StasisRole
  uint32_t reserved;
  uint8_t mac[STASIS_MAC_BYTES];  // HMAC-SHA256(secret, nonce || role as 4 LE bytes)
  StasisProcessInfo process;      // only for STASIS_ROLE_PROCESS
};

struct StasisAuthOk {
  uint64_t client_id;  // the coordinator's id for this connection
};

// A barrier: the coordinator's order to run one step of a sequence, answered with
// BARRIER_DONE. protocol/barriers.h lists the barriers, in order, with what each one means.
struct StasisBarrier {
  char name[32];
  char ckpt_dir[STASIS_PATH_MAX];  // every barrier of a checkpoint: the generation directory
  uint32_t compression;             // for "checkpoint": StasisCompressionSetting
  uint32_t kill_after;             // for "checkpoint": the computation ends after this checkpoint
  uint32_t abort;                  // for "commit": the checkpoint failed; discard this image
  uint32_t reserved;
  // for "checkpoint": the newest complete generation, which an incremental image may build on
  // (0: write full images)
  uint64_t parent_generation;
};

struct StasisBarrierDone {
  char name[32];
  int32_t status;  // 0 = ok; otherwise errno-like
  uint32_t reserved;
  char message[STASIS_MESSAGE_MAX];    // on failure: one line saying what went wrong
  char image_path[STASIS_PATH_MAX];    // for "checkpoint": the image file written
  uint64_t image_bytes;                // for "checkpoint": bytes written
  uint64_t memory_bytes;               // for "checkpoint": bytes of memory saved
  uint64_t parent_generation;          // for "checkpoint"/"commit": the image builds on it (0: full)
  // for "checkpoint"/"commit" with an image: how long writing it took (in place, or in the
  // forked writer), so the coordinator can tell writing from coordinating
  uint64_t write_nanoseconds;
  // for "checkpoint"/"commit" with an image: its END record's chain of every record header
  // (image/framing.h), which the coordinator checks in the file before it writes MANIFEST.json
  uint64_t image_checksum;
};

// One entry of a RELAY_BATCH (see STASIS_MSG_RELAY_BATCH).
struct StasisRelayEntry {
  uint16_t type;         // StasisMsgType of the message it stands for
  uint16_t flags;        // STASIS_RELAY_ENTRY_*; 0 from an older relay (the same wire layout)
  uint32_t payload_len;  // bytes of that message's payload that follow
  uint64_t arg;          // that message's header.arg
  uint32_t reserved;     // that message's header.reserved (NS_REPLY's found / not found)
  uint32_t count;        // ids that follow the payload (>= 1)
};
// On a "commit" BARRIER_DONE from a relay: the relay checked each of these processes' images
// on its host as the coordinator would (checkpoint_store.h's image_fault: there, the size its
// process wrote, a sound END record with its checksum), so the coordinator need not open them.
// Only a relay's batch may carry it; an image that failed the check is a failed answer instead.
#define STASIS_RELAY_ENTRY_IMAGE_CHECKED 1u
#ifdef __cplusplus
static_assert(sizeof(StasisRelayEntry) == 24, "wire layout");
#endif

// Commands: payload is StasisCommand; reply payload is text (JSON for status).
enum StasisCommandVerb STASIS_PROTOCOL_ENUM_BASE(uint32_t) {
  STASIS_CMD_CHECKPOINT = 1,
  STASIS_CMD_STATUS = 2,
  STASIS_CMD_KILL = 3,
  // `stasis restart` is bringing processes back: a coordinator that exits when idle stays until
  // they have joined (or for kRestartPatience), however long their images take to load.
  STASIS_CMD_EXPECT_RESTART = 4,
  // `stasis launch` is starting a program: a coordinator that exits when idle stays until a
  // process joins (or for kLaunchPatience). Without it, a launch right after the last process of
  // the computation before had left found the coordinator in its idle grace, used it, and saw it
  // exit before its program joined: the program ran without checkpoints.
  STASIS_CMD_EXPECT_LAUNCH = 5,
};

struct StasisCommand {
  uint32_t verb;        // StasisCommandVerb
  uint32_t kill_after;  // checkpoint: end the computation after it
  uint32_t compression;  // checkpoint: StasisCompressionSetting (DEFAULT: the coordinator's)
  uint32_t full;        // checkpoint: write full images even where an increment is possible
  uint32_t reserved;
};

// COMMAND_REPLY: header.arg = 0 on success, non-zero on failure; payload = text.
//   checkpoint success: JSON {"ok":true,"generation":N,"dir":"...","images":[...],"seconds":S,...}
//   failure: JSON {"ok":false,"error":"one line"}
//   status: JSON (see docs/user-guide.md)

// Name service: NS_PUBLISH payload = key '\0' value; NS_LOOKUP and NS_WAIT payload = key;
// NS_REPLY: header.arg echoes the request's arg, reserved = 0 found / 1 not found, payload = value.
// NS_LIST payload = key prefix; its NS_REPLY payload is each entry under it, in key order, as
// key '\0', the value's length (uint32_t), the value.
// Entries a process publishes belong to it: they go when it withdraws them or leaves the
// computation (a killed computation leaves nothing a restart could mistake for its own).
