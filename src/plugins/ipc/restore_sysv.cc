// System V IPC objects at restart: each saved object is created again (same key, or
// IPC_PRIVATE), given its contents and permissions; the loader attaches the segments where they
// were and the runtime maps the program's ids to the new ones (StasisRestartInfo).
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <unistd.h>

#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <vector>

#include "common/error.h"
#include "plugins/ipc/records.h"
#include "plugins/ipc/restore_ipc.h"

namespace stasis::restore {
namespace {

template <typename T>
std::vector<T> table_of(const image::Image& img, uint32_t tag) {
  std::vector<char> bytes = img.fd_data(-1, tag);
  if (bytes.size() % sizeof(T) != 0)
    throw Error(fmt::format("{} is corrupt: its System V IPC table has {} bytes", img.path(), bytes.size()));
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

const char* kind_name(uint32_t kind) {
  switch (kind) {
    case STASIS_SYSV_SHM: return "shared memory segment";
    case STASIS_SYSV_SEM: return "semaphore set";
    default: return "message queue";
  }
}

const char* ipcrm_option(uint32_t kind) {
  switch (kind) {
    case STASIS_SYSV_SHM: return "-M";
    case STASIS_SYSV_SEM: return "-S";
    default: return "-Q";
  }
}

std::string describe(const StasisSysvObject& o) {
  std::string text = fmt::format("System V {} id {}", kind_name(o.kind), o.id);
  if (o.key != IPC_PRIVATE) text += fmt::format(" (key {:#x})", static_cast<uint32_t>(o.key));
  return text;
}

// What the kernel says about an object now.
struct Current {
  bool exists = false;
  key_t key = IPC_PRIVATE;
  uid_t cuid = 0;
  uint64_t size = 0;     // as StasisSysvObject::size
  uint64_t attached = 0; // shm: attachments
  struct ipc_perm perm {};
};

Current current(uint32_t kind, int id) {
  Current c;
  if (kind == STASIS_SYSV_SHM) {
    struct shmid_ds ds;
    if (shmctl(id, IPC_STAT, &ds) != 0) return c;
    c.perm = ds.shm_perm, c.size = ds.shm_segsz, c.attached = ds.shm_nattch;
  } else if (kind == STASIS_SYSV_SEM) {
    struct semid_ds ds;
    if (semctl(id, 0, IPC_STAT, &ds) != 0) return c;
    c.perm = ds.sem_perm, c.size = ds.sem_nsems;
  } else {
    struct msqid_ds ds;
    if (msgctl(id, IPC_STAT, &ds) != 0) return c;
    c.perm = ds.msg_perm, c.size = ds.msg_qbytes;
  }
  c.exists = true;
  c.key = c.perm.__key;
  c.cuid = c.perm.cuid;
  return c;
}

int id_of_key(uint32_t kind, key_t key) {
  if (kind == STASIS_SYSV_SHM) return shmget(key, 0, 0);
  if (kind == STASIS_SYSV_SEM) return semget(key, 0, 0);
  return msgget(key, 0);
}

void remove_object(uint32_t kind, int id) {
  if (kind == STASIS_SYSV_SHM) shmctl(id, IPC_RMID, nullptr);
  else if (kind == STASIS_SYSV_SEM) semctl(id, 0, IPC_RMID);
  else msgctl(id, IPC_RMID, nullptr);
}

// The copy the checkpointed process left (it was killed after the checkpoint): unused garbage.
bool left_by_checkpointed_process(const image::Image& img, const StasisSysvObject& o, const Current& c) {
  return c.exists && c.key == o.key && c.cuid == o.cuid && c.attached == 0 &&
         (o.kind == STASIS_SYSV_MSG || c.size == o.size) && checkpointed_process_ended(img);
}

void clear_the_way(const image::Image& img, const StasisSysvObject& o) {
  Current saved_id = current(o.kind, o.kernel_id);
  if (o.key == IPC_PRIVATE) {
    if (left_by_checkpointed_process(img, o, saved_id)) remove_object(o.kind, o.kernel_id);
    return;
  }
  int holder = id_of_key(o.kind, o.key);
  if (holder < 0) return;
  if (holder == o.kernel_id && left_by_checkpointed_process(img, o, saved_id)) {
    remove_object(o.kind, holder);
    return;
  }
  throw Error(fmt::format("the program's {} needs its key, which {} id {} holds now; remove that "
                          "(ipcrm {} {:#x}) or stop the process using it, then restart",
                          describe(o), kind_name(o.kind), holder, ipcrm_option(o.kind),
                          static_cast<uint32_t>(o.key)));
}

int create(const StasisSysvObject& o) {
  // Owner read-write while restart fills it; the saved permissions come last.
  const int flags = IPC_CREAT | IPC_EXCL | 0600;
  int id;
  if (o.kind == STASIS_SYSV_SHM) id = shmget(o.key, o.size, flags);
  else if (o.kind == STASIS_SYSV_SEM) id = semget(o.key, static_cast<int>(o.size), flags);
  else id = msgget(o.key, flags);
  if (id < 0) throw Error(fmt::format("cannot re-create the program's {}: {}", describe(o), std::strerror(errno)));
  return id;
}

void fill_segment(const image::Image& img, const StasisSysvObject& o, int index, int id) {
  if (!img.has_fd_data(index, STASIS_FD_DATA_SYSV_CONTENTS)) return;  // never written: zeros
  std::vector<char> bytes = img.fd_data(index, STASIS_FD_DATA_SYSV_CONTENTS);
  if (bytes.size() != o.size)
    throw Error(fmt::format("{} is corrupt: {} has {} bytes saved, not {}", img.path(), describe(o), bytes.size(), o.size));
  void* at = shmat(id, nullptr, 0);
  if (at == reinterpret_cast<void*>(-1))
    throw Error(fmt::format("cannot attach the re-created {}: {}", describe(o), std::strerror(errno)));
  std::memcpy(at, bytes.data(), bytes.size());
  shmdt(at);
}

void fill_semaphores(const image::Image& img, const StasisSysvObject& o, int index, int id) {
  std::vector<char> bytes = img.fd_data(index, STASIS_FD_DATA_SYSV_CONTENTS);
  if (bytes.size() != o.size * sizeof(unsigned short))
    throw Error(fmt::format("{} is corrupt: {} has {} values saved, not {}", img.path(), describe(o),
                            bytes.size() / sizeof(unsigned short), o.size));
  std::vector<unsigned short> values(o.size);
  std::memcpy(values.data(), bytes.data(), bytes.size());
  if (semctl(id, 0, SETALL, values.data()) != 0)
    throw Error(fmt::format("cannot set the values of the re-created {}: {}", describe(o), std::strerror(errno)));
}

void fill_messages(const image::Image& img, const StasisSysvObject& o, int index, int id) {
  struct msqid_ds ds;
  if (msgctl(id, IPC_STAT, &ds) == 0 && ds.msg_qbytes != o.size) {
    ds.msg_qbytes = o.size;
    if (msgctl(id, IPC_SET, &ds) != 0)
      throw Error(fmt::format("cannot give the re-created {} its limit of {} bytes: {}", describe(o), o.size,
                              std::strerror(errno)));
  }
  std::vector<char> bytes = img.fd_data(index, STASIS_FD_DATA_SYSV_CONTENTS);
  std::vector<char> message;
  uint64_t sent = 0;
  for (size_t at = 0; at < bytes.size(); sent++) {
    StasisSysvMessage header;
    if (at + sizeof header > bytes.size()) break;
    std::memcpy(&header, bytes.data() + at, sizeof header);
    at += sizeof header;
    if (header.size > bytes.size() - at) break;
    message.resize(sizeof(long) + header.size);
    long type = header.type;
    std::memcpy(message.data(), &type, sizeof type);
    std::memcpy(message.data() + sizeof type, bytes.data() + at, header.size);
    at += header.size;
    if (msgsnd(id, message.data(), header.size, IPC_NOWAIT) != 0)
      throw Error(fmt::format("cannot queue message {} of {} again on the re-created {}: {}", sent + 1, o.count,
                              describe(o), std::strerror(errno)));
  }
  if (sent != o.count)
    throw Error(fmt::format("{} is corrupt: {} has {} messages saved, not {}", img.path(), describe(o), sent, o.count));
}

void set_permissions(const StasisSysvObject& o, int id) {
  Current c = current(o.kind, id);
  if (c.perm.mode % 01000 == o.mode && c.perm.uid == o.uid && c.perm.gid == o.gid) return;
  int r;
  if (o.kind == STASIS_SYSV_SHM) {
    struct shmid_ds ds;
    shmctl(id, IPC_STAT, &ds);
    ds.shm_perm.mode = static_cast<unsigned short>(o.mode), ds.shm_perm.uid = o.uid, ds.shm_perm.gid = o.gid;
    r = shmctl(id, IPC_SET, &ds);
  } else if (o.kind == STASIS_SYSV_SEM) {
    struct semid_ds ds;
    semctl(id, 0, IPC_STAT, &ds);
    ds.sem_perm.mode = static_cast<unsigned short>(o.mode), ds.sem_perm.uid = o.uid, ds.sem_perm.gid = o.gid;
    r = semctl(id, 0, IPC_SET, &ds);
  } else {
    struct msqid_ds ds;
    msgctl(id, IPC_STAT, &ds);
    ds.msg_perm.mode = static_cast<unsigned short>(o.mode), ds.msg_perm.uid = o.uid, ds.msg_perm.gid = o.gid;
    r = msgctl(id, IPC_SET, &ds);
  }
  if (r != 0)
    throw Error(fmt::format("cannot give the re-created {} its owner {}:{} and mode {:o}: {}", describe(o), o.uid,
                            o.gid, o.mode, std::strerror(errno)));
}

// Makes the object again, filled and with its permissions; returns its new id.
int recreate(const image::Image& img, const StasisSysvObject& o, int index) {
  clear_the_way(img, o);
  const int id = create(o);
  if (o.kind == STASIS_SYSV_SHM) fill_segment(img, o, index, id);
  else if (o.kind == STASIS_SYSV_SEM) fill_semaphores(img, o, index, id);
  else fill_messages(img, o, index, id);
  set_permissions(o, id);
  return id;
}

}  // namespace

bool checkpointed_process_ended(const image::Image& img) {
  const auto& proc = img.process();
  if (static_cast<pid_t>(proc.pid) == getpid()) return true;
  std::ifstream in(fmt::format("/proc/{}/comm", proc.pid));
  std::string comm;
  if (!std::getline(in, comm)) return true;
  return comm != std::string(proc.comm, strnlen(proc.comm, sizeof proc.comm));
}

HostSegments recreate_host_segments(const std::vector<image::Image>& images) {
  HostSegments segments;
  std::vector<int32_t> unattached_removed;  // marked for removal and attached nowhere: removed once made
  for (const auto& img : images) {
    std::vector<StasisSysvObject> objects = table_of<StasisSysvObject>(img, STASIS_FD_DATA_SYSV_OBJECTS);
    for (size_t i = 0; i < objects.size(); i++) {
      const StasisSysvObject& o = objects[i];
      if (o.kind != STASIS_SYSV_SHM || o.saved_elsewhere) continue;
      if (segments.new_id_of.count(o.kernel_id))
        throw Error(fmt::format("{} is corrupt: it saves {}, which another image of this host saves too", img.path(),
                                describe(o)));
      const int id = recreate(img, o, static_cast<int>(i));
      segments.new_id_of[o.kernel_id] = id;
      if (o.removed) unattached_removed.push_back(id);
    }
  }
  std::map<int32_t, int32_t> new_id_of_program_id;
  for (const auto& img : images) {
    std::vector<StasisSysvObject> objects = table_of<StasisSysvObject>(img, STASIS_FD_DATA_SYSV_OBJECTS);
    std::vector<StasisSysvAttachment> attachments = table_of<StasisSysvAttachment>(img, STASIS_FD_DATA_SYSV_ATTACHMENTS);
    for (const auto& o : objects) {
      if (o.kind != STASIS_SYSV_SHM) continue;
      auto made = segments.new_id_of.find(o.kernel_id);
      if (made == segments.new_id_of.end())
        throw Error(fmt::format("{}: the program's {} was saved by a process this restart does not bring back on "
                                "this host (a segment belongs to the processes of its host)",
                                img.path(), describe(o)));
      auto [known, added] = new_id_of_program_id.emplace(o.id, made->second);
      if (!added && known->second != made->second)
        throw Error(fmt::format("{}: processes of this host hold id {} for two different System V shared memory "
                                "segments (ids handed out after an earlier restart), which this version of Stasis "
                                "cannot tell apart", img.path(), o.id));
      if (added) segments.translations.push_back({STASIS_SYSV_SHM, o.id, made->second});
    }
    for (const auto& a : attachments)
      if (a.object < objects.size())
        std::erase(unattached_removed, segments.new_id_of[objects[a.object].kernel_id]);
  }
  // A segment marked for removal lives on only through its attachments, which the loaders make
  // (the first marks it again; Linux lets the others attach it until its last detach).
  for (int32_t id : unattached_removed) remove_object(STASIS_SYSV_SHM, id);
  return segments;
}

void recreate_sysv_objects(const image::Image& img, const HostSegments& segments, StasisRestartInfo& info) {
  std::vector<StasisSysvObject> objects = table_of<StasisSysvObject>(img, STASIS_FD_DATA_SYSV_OBJECTS);
  std::vector<StasisSysvAttachment> attachments = table_of<StasisSysvAttachment>(img, STASIS_FD_DATA_SYSV_ATTACHMENTS);
  if (attachments.size() > STASIS_MAX_SHM_ATTACHMENTS)
    throw Error(fmt::format("{} holds more System V attachments than this build restores", img.path()));
  auto add_translation = [&](const StasisSysvIdPair& pair) {
    if (info.sysv.object_count == STASIS_MAX_SYSV_OBJECTS)
      throw Error(fmt::format("{}: its host has more System V IPC objects than this build restores ({})", img.path(),
                              STASIS_MAX_SYSV_OBJECTS));
    info.sysv.ids[info.sysv.object_count++] = pair;
  };
  for (const auto& pair : segments.translations) add_translation(pair);
  std::vector<int> new_ids(objects.size());
  for (size_t i = 0; i < objects.size(); i++) {
    const StasisSysvObject& o = objects[i];
    if (o.kind == STASIS_SYSV_SHM) {
      new_ids[i] = segments.new_id_of.at(o.kernel_id);  // recreate_host_segments checked it is there
    } else {
      new_ids[i] = recreate(img, o, static_cast<int>(i));
      add_translation({o.kind, o.id, new_ids[i]});
    }
  }
  for (const auto& a : attachments) {
    if (a.object >= objects.size())
      throw Error(fmt::format("{} is corrupt: a System V attachment names object {}", img.path(), a.object));
    uint32_t flags = a.shmat_flags | (objects[a.object].removed ? STASIS_SHM_REMOVE_AFTER_ATTACH : 0);
    info.sysv.attach[info.sysv.attach_count++] = {a.address, new_ids[a.object], flags};
  }
}

}  // namespace stasis::restore
