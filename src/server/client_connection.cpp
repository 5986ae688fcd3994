#include "server/client_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>
#include <filesystem>

namespace ds {

namespace {

// Address text and port of a socket address (IPv4, IPv6); false for other families.
bool address_of(const sockaddr_storage& a, std::string& ip, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    if (!inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof(buf))) return false;
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    if (!inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof(buf))) return false;
    port = ntohs(v6->sin6_port);
  } else {
    return false;
  }
  ip = buf;
  return true;
}

}  // namespace

std::optional<ClientConnection> ClientConnection::find(const std::string& remote_addr, int remote_port,
                                                       int local_port) {
  if (remote_port < 0 || local_port < 0) return std::nullopt;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    char* end = nullptr;
    const std::string name = e.path().filename().string();
    const long fd = std::strtol(name.c_str(), &end, 10);
    if (end == name.c_str() || *end != '\0') continue;
    sockaddr_storage peer{}, local{};
    socklen_t n_peer = sizeof(peer), n_local = sizeof(local);
    if (getpeername(int(fd), reinterpret_cast<sockaddr*>(&peer), &n_peer) != 0) continue;
    if (getsockname(int(fd), reinterpret_cast<sockaddr*>(&local), &n_local) != 0) continue;
    std::string peer_ip, local_ip;
    int peer_port = -1, port = -1;
    if (!address_of(peer, peer_ip, peer_port) || !address_of(local, local_ip, port)) continue;
    if (peer_port == remote_port && port == local_port && peer_ip == remote_addr)
      return ClientConnection(int(fd));
  }
  return std::nullopt;
}

bool ClientConnection::closed() const {
  pollfd p{.fd = fd_, .events = POLLIN | POLLRDHUP, .revents = 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  if (p.revents & POLLIN) {  // readable: data (still connected) or end of stream (closed)
    char c;
    return recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
  }
  return false;
}

}  // namespace ds
