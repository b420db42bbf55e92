// The fabric: what every softib process on this machine shares. A directory (default
// /dev/shm/softib-<uid>, or $SOFTIB_FABRIC_DIR) plays the subnet manager: it assigns each host
// (network namespace) a LID, hands out queue-pair numbers and keys from one counter, and maps
// (LID, QPN) to the address of the process that owns the queue pair.
#include "internal.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>

namespace softib {

namespace {

// Holds the fabric-wide lock file; every allocation that reads-then-writes shared files takes it.
class FabricLock {
 public:
  FabricLock() {
    fd_ = open((fabric_dir() + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~FabricLock() {
    if (fd_ >= 0) close(fd_);  // closing drops the flock
  }

 private:
  int fd_;
};

bool read_small_file(const std::string& path, std::string* out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n < 0) return false;
  out->assign(buf, static_cast<size_t>(n));
  return true;
}

// Write-then-rename so a reader never sees half a record.
bool write_file_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::string field(const std::string& text, const char* key) {
  std::string needle = std::string(key) + "=";
  size_t pos = 0;
  while ((pos = text.find(needle, pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') {
      size_t start = pos + needle.size();
      size_t end = text.find('\n', start);
      return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    }
    pos += needle.size();
  }
  return {};
}

int wait_connected(int fd, int timeout_ms) {
  pollfd p{fd, POLLOUT, 0};
  if (poll(&p, 1, timeout_ms) != 1) return -1;
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  return err == 0 ? 0 : -1;
}

}  // namespace

const std::string& fabric_dir() {
  // Never destroyed: the exit hook that withdraws queue pairs runs after static destructors.
  static const std::string& dir = *[] {
    const char* env = getenv("SOFTIB_FABRIC_DIR");
    auto* d = new std::string(env && *env ? env : "/dev/shm/softib-" + std::to_string(getuid()));
    mkdir(d->c_str(), 0700);
    return d;
  }();
  return dir;
}

uint64_t netns_inode() {
  struct stat st {};
  if (stat("/proc/self/ns/net", &st) != 0) return 1;  // no namespaces: one host
  return st.st_ino;
}

uint16_t host_lid() {
  std::string mine = fabric_dir() + "/host-" + std::to_string(netns_inode());
  std::string text;
  if (read_small_file(mine, &text)) return static_cast<uint16_t>(atoi(field(text, "lid").c_str()));
  FabricLock lock;
  if (read_small_file(mine, &text)) return static_cast<uint16_t>(atoi(field(text, "lid").c_str()));
  // A new host takes the next LID after every host already known (LIDs start at 1; 0 is invalid).
  int highest = 0;
  if (DIR* d = opendir(fabric_dir().c_str())) {
    while (dirent* e = readdir(d)) {
      if (strncmp(e->d_name, "host-", 5) != 0 || strchr(e->d_name, '.')) continue;
      std::string other;
      if (read_small_file(fabric_dir() + "/" + e->d_name, &other))
        highest = std::max(highest, atoi(field(other, "lid").c_str()));
    }
    closedir(d);
  }
  int lid = highest + 1;
  if (lid >= 0xC000) lid = 1;  // unicast LIDs end below 0xC000
  write_file_atomically(mine, "lid=" + std::to_string(lid) + "\n");
  return static_cast<uint16_t>(lid);
}

uint64_t host_guid() {
  // "ST" marks a softib GUID; the rest identifies the network namespace.
  return (uint64_t{0x5354} << 48) | (netns_inode() & 0xFFFFFFFFFFFFull);
}

uint32_t next_fabric_number() {
  // One machine-wide counter in a shared page: numbers never repeat while the fabric lives, so
  // re-created queue pairs and memory regions get new numbers, as on a real HCA.
  static std::atomic<uint32_t>* counter = [] () -> std::atomic<uint32_t>* {
    std::string path = fabric_dir() + "/counters";
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return nullptr;
    {
      FabricLock lock;
      struct stat st {};
      if (fstat(fd, &st) == 0 && st.st_size < 4096 && ftruncate(fd, 4096) != 0) {
        close(fd);
        return nullptr;
      }
    }
    void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return page == MAP_FAILED ? nullptr : static_cast<std::atomic<uint32_t>*>(page);
  }();
  static std::atomic<uint32_t> fallback{static_cast<uint32_t>(getpid()) << 8};
  return (counter ? counter : &fallback)->fetch_add(1) + 0x40;
}

std::string qp_record_path(uint16_t lid, uint32_t qpn) {
  return fabric_dir() + "/qp-" + std::to_string(lid) + "-" + std::to_string(qpn);
}

bool publish_qp(uint16_t lid, uint32_t qpn, const Endpoint& ep) {
  std::string ips;
  for (const auto& ip : ep.ipv4) ips += (ips.empty() ? "" : ",") + ip;
  std::string text = "unix=" + ep.unix_path + "\ntcp=" + std::to_string(ep.tcp_port) +
                     "\nips=" + ips + "\nlid=" + std::to_string(lid) + "\n";
  if (getenv("SOFTIB_TRACE")) fprintf(stderr, "softib[%d]: publish %u-%u\n", getpid(), lid, qpn);
  return write_file_atomically(qp_record_path(lid, qpn), text);
}

void withdraw_qp(uint16_t lid, uint32_t qpn) {
  if (getenv("SOFTIB_TRACE")) fprintf(stderr, "softib[%d]: withdraw %u-%u\n", getpid(), lid, qpn);
  unlink(qp_record_path(lid, qpn).c_str());
}

bool lookup_qp(uint16_t lid, uint32_t qpn, Endpoint* ep) {
  std::string text;
  if (!read_small_file(qp_record_path(lid, qpn), &text)) return false;
  ep->unix_path = field(text, "unix");
  ep->tcp_port = static_cast<uint16_t>(atoi(field(text, "tcp").c_str()));
  ep->lid = lid;
  ep->ipv4.clear();
  std::string ips = field(text, "ips");
  size_t start = 0;
  while (start < ips.size()) {
    size_t comma = ips.find(',', start);
    if (comma == std::string::npos) comma = ips.size();
    if (comma > start) ep->ipv4.push_back(ips.substr(start, comma - start));
    start = comma + 1;
  }
  return true;
}

int connect_endpoint(const Endpoint& ep, Route route) {
  if (route == Route::kUnixSocket) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", ep.unix_path.c_str());
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close(fd);
      return -1;
    }
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
  }
  // TCP: the listener takes every address; the published ones leave out loopback, which reaches
  // a context of this host even when its other addresses are filtered.
  if (ep.tcp_port == 0) return -1;  // its context has no TCP listener
  std::vector<std::string> addresses = ep.ipv4;
  if (route == Route::kSameHostTcp) addresses.insert(addresses.begin(), "127.0.0.1");
  for (const auto& ip : addresses) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(ep.tcp_port);
    if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
      close(fd);
      continue;
    }
    int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    if (rc == 0 || (errno == EINPROGRESS && wait_connected(fd, 2000) == 0)) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    close(fd);
  }
  return -1;
}

std::vector<std::string> local_ipv4_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK)) continue;
      char buf[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
      out.emplace_back(buf);
    }
    freeifaddrs(list);
  }
  if (out.empty()) out.emplace_back("127.0.0.1");
  return out;
}

}  // namespace softib
