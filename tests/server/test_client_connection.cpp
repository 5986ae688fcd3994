// ClientConnection finds the server side of a TCP connection from its address pair and sees the
// peer's hang-up without blocking; pending data is not a hang-up.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/client_connection.h"

namespace ds {
namespace {

TEST(ClientConnection, FindsTheAcceptedSocketAndSeesTheHangUp) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t n = sizeof(a);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&a), &n), 0);
  const int server_port = ntohs(a.sin_port);

  const int client = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  const int accepted = accept(listener, nullptr, nullptr);
  ASSERT_GE(accepted, 0);
  sockaddr_in c{};
  n = sizeof(c);
  ASSERT_EQ(getsockname(client, reinterpret_cast<sockaddr*>(&c), &n), 0);

  EXPECT_FALSE(ClientConnection::find("127.0.0.1", ntohs(c.sin_port) + 1, server_port).has_value());
  const auto conn = ClientConnection::find("127.0.0.1", ntohs(c.sin_port), server_port);
  ASSERT_TRUE(conn.has_value());
  EXPECT_EQ(conn->fd(), accepted);
  EXPECT_FALSE(conn->closed());
  ASSERT_EQ(write(client, "x", 1), 1);  // pending data: still connected
  usleep(20000);
  EXPECT_FALSE(conn->closed());
  close(client);
  usleep(20000);
  EXPECT_TRUE(conn->closed());
  close(accepted);
  close(listener);
}

}  // namespace
}  // namespace ds
