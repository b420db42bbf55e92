// One X client's connection through the proxy (README.md, "The X proxy"): the program's socket
// on one side, the real X server's on the other. Requests pass through whole; the ones that build
// server state are kept in a pruned log; replies, events and errors pass back with the sequence
// numbers the program expects. When the server's end reads closed (after a restart the sockets
// kind gives the proxy its old end with the peer gone), the connection is made again to the
// display the restart names, the log is replayed and the program goes on, none the wiser.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "plugins/x11/proxy/x11_protocol.h"

namespace stasis::x11 {

class ClientConnection {
 public:
  ClientConnection(int client_fd, std::string display) : client_fd_(client_fd), display_(std::move(display)) {}
  ~ClientConnection();
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  int client_fd() const { return client_fd_; }
  int server_fd() const { return server_fd_; }
  bool has_output_for_server() const { return !to_server_raw_.empty() || !to_server_.empty(); }
  bool has_output_for_client() const { return to_client_.size() > to_client_offset_; }

  // Each returns false when the connection is over (the client left, or the server is gone and
  // could not be replaced: said on stderr).
  bool read_client();
  bool read_server();
  bool write_server();
  bool write_client();

 private:
  struct Request {
    std::vector<uint8_t> bytes;
    uint64_t client_seq = 0;
  };
  struct Pending {  // a request sent and not yet answered, with what its answer tells the proxy
    uint64_t server_seq = 0;
    Request request;
  };
  // Sequence numbers: requests the server counts from `first` map to the program's count by
  // `offset`; requests the proxy made itself (the replay) all map to `fixed`.
  struct SeqSegment {
    uint64_t first = 0;
    int64_t offset = 0;
    bool injected = false;
    uint64_t fixed = 0;
  };
  struct Logged {
    std::vector<uint8_t> bytes;
    uint32_t subject = 0;  // the resource it creates or changes (0: the connection itself)
    uint32_t parent = 0;   // CreateWindow: the parent, so a destroyed window takes its children
  };
  struct Extension {  // as the program was told (the first server), and as this server has it
    std::string name;
    uint8_t major = 0, first_event = 0, first_error = 0;
    uint8_t server_major = 0, server_first_event = 0, server_first_error = 0;
  };

  void take_request(std::vector<uint8_t> bytes);
  void to_server_tags(std::vector<uint8_t>& bytes) const;
  void request_sent(Request& r);
  void log_request(const std::vector<uint8_t>& bytes);
  void forget_resource(const std::vector<uint8_t>& free_request);
  void learn_atom(uint32_t atom, std::string name);
  bool answered(uint8_t* message, size_t size);
  uint8_t server_opcode(uint8_t program_opcode) const;
  void to_program_codes(uint8_t* message) const;
  bool has_reply(const std::vector<uint8_t>& bytes) const;
  size_t log_bytes() const;
  std::string request_name(const std::vector<uint8_t>& bytes) const;

  bool reconnect();
  bool setup_again();
  bool open_server(std::string& why);
  bool replay(std::string& why);

  int client_fd_;
  int server_fd_ = -1;
  std::string display_;
  std::vector<int> spare_server_fds_;  // held so the server gives the proxy the old client slot

  std::vector<uint8_t> from_client_, from_server_, to_server_raw_, to_client_;
  size_t to_client_offset_ = 0, to_server_offset_ = 0;
  std::deque<Request> to_server_;
  std::vector<uint8_t> setup_request_, setup_reply_;
  bool setup_sent_ = false, setup_answered_ = false, big_requests_ = false;
  int setup_tries_ = 0;  // set-ups the server closed unanswered (setup_again)
  uint32_t resource_base_ = 0, resource_mask_ = 0;

  uint64_t client_seq_ = 0;       // requests taken from the program
  uint64_t client_seq_sent_ = 0;  // the last of them the server has been given
  uint64_t server_seq_ = 0;       // requests the server has been given on this connection
  std::deque<SeqSegment> segments_;
  std::deque<Pending> pending_;

  std::vector<Logged> log_;
  std::vector<Extension> extensions_;  // what QueryExtension answered, for the ones let through
  std::map<uint32_t, std::string> atom_names_;  // the old server's atoms the proxy knows by name
  uint32_t highest_atom_ = kLastPredefinedAtom;  // every atom up to it is in atom_names_ or asked for
  uint8_t glx_major_ = 0, big_requests_major_ = 0;
  size_t asked_again_ = 0;    // requests of the old server's asked again of the new one
  uint32_t program_tag_ = 0;              // the GLX context tag the program holds (MakeCurrent's reply)
  std::map<uint32_t, uint32_t> tags_;     // program's tag -> this server's, when a replay gave another
};

}  // namespace stasis::x11
