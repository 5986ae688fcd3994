// The TCP connection an HTTP request arrived on, found from the request's address pair, so that a
// handler waiting for a non-streamed result can tell whether the client is still there
// (cpp-httplib 0.11 gives handlers no socket and reports a hang-up only on a failed write).
#pragma once

#include <optional>
#include <string>

namespace ds {

class ClientConnection {
 public:
  // The open socket of this process whose local port is `local_port` and whose peer is
  // remote_addr:remote_port (as cpp-httplib's Request reports them); nullopt if none is found.
  static std::optional<ClientConnection> find(const std::string& remote_addr, int remote_port,
                                              int local_port);

  // True once the peer has closed or reset the connection (a pending request body or pipelined
  // request does not count). Never blocks.
  bool closed() const;

  int fd() const { return fd_; }

 private:
  explicit ClientConnection(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace ds
