// Unit tests for util/socket, util/socket_address and util/net_interfaces: address parsing/printing,
// NCCL_SOCKET_IFNAME filters, the one reader of NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY, interface
// selection order, and the Socket class (handshake, junk rejection, timeouts, EOF, abort, connect
// retries, and simultaneous large send/receive).
#include "util/socket.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "support/scoped_env.h"
#include "util/last_error.h"
#include "util/net_interfaces.h"
#include "util/socket_retry.h"
#include "util/time.h"

namespace accl {
namespace {

constexpr uint64_t kMagic = 0x1234567890abcdefull;

SocketAddress loopback4() {
  SocketAddress a;
  EXPECT_EQ(SocketAddress::parse("127.0.0.1:0", &a), ncclSuccess);
  return a;
}

NetInterface iface(const char* name, const char* addr, const char* mask) {
  NetInterface i;
  i.name = name;
  std::string a = addr, m = mask;
  bool v6 = a.find(':') != std::string::npos;
  if (v6) {
    i.addr.in6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, addr, &i.addr.in6.sin6_addr);
    i.netmask.in6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, mask, &i.netmask.in6.sin6_addr);
  } else {
    i.addr.in4.sin_family = AF_INET;
    inet_pton(AF_INET, addr, &i.addr.in4.sin_addr);
    i.netmask.in4.sin_family = AF_INET;
    inet_pton(AF_INET, mask, &i.netmask.in4.sin_addr);
  }
  return i;
}

std::vector<std::string> names(const std::vector<NetInterface>& v) {
  std::vector<std::string> out;
  for (const NetInterface& i : v) out.push_back(i.name + "/" + i.addr.hostString());
  return out;
}

// ---- addresses ----

TEST(SocketAddressTest, ParsesIpv4AndPrintsBack) {
  SocketAddress a;
  ASSERT_EQ(SocketAddress::parse("10.1.2.3:4567", &a), ncclSuccess);
  EXPECT_EQ(a.family(), AF_INET);
  EXPECT_EQ(a.port(), 4567);
  EXPECT_EQ(a.toString(), "10.1.2.3:4567");
  EXPECT_EQ(a.hostString(), "10.1.2.3");
  EXPECT_EQ(a.length(), sizeof(sockaddr_in));
  EXPECT_FALSE(a.isLoopback());
  a.setPort(0);
  EXPECT_EQ(a.toString(), "10.1.2.3:0");
}

TEST(SocketAddressTest, ParsesBracketedIpv6) {
  SocketAddress a;
  ASSERT_EQ(SocketAddress::parse("[::1]:80", &a), ncclSuccess);
  EXPECT_EQ(a.family(), AF_INET6);
  EXPECT_EQ(a.port(), 80);
  EXPECT_EQ(a.toString(), "[::1]:80");
  EXPECT_TRUE(a.isLoopback());
  ASSERT_EQ(SocketAddress::parse("[fd00::2]:65535", &a), ncclSuccess);
  EXPECT_EQ(a.toString(), "[fd00::2]:65535");
}

TEST(SocketAddressTest, BareIpv6WithTrailingPortUsesLastColon) {
  SocketAddress a;
  ASSERT_EQ(SocketAddress::parse("fd00::2:99", &a), ncclSuccess);
  EXPECT_EQ(a.family(), AF_INET6);
  EXPECT_EQ(a.port(), 99);
}

TEST(SocketAddressTest, ResolvesHostnames) {
  SocketAddress a;
  ASSERT_EQ(SocketAddress::parse("localhost:1234", &a), ncclSuccess);
  EXPECT_TRUE(a.isInet());
  EXPECT_TRUE(a.isLoopback());
  EXPECT_EQ(a.port(), 1234);
  ASSERT_EQ(SocketAddress::parse("localhost:1234", &a, AF_INET), ncclSuccess);
  EXPECT_EQ(a.family(), AF_INET);
}

TEST(SocketAddressTest, RejectsMalformedText) {
  SocketAddress a;
  for (const char* bad : {"", "1.2.3.4", "1.2.3.4:", ":80", "1.2.3.4:99999", "1.2.3.4:-1", "1.2.3.4:12ab",
                          "[::1]80", "[::1", "[::1]:", "no-such-host.invalid:80"}) {
    EXPECT_EQ(SocketAddress::parse(bad, &a, AF_UNSPEC, "test"), ncclInvalidArgument) << "'" << bad << "'";
  }
  EXPECT_NE(std::string(lastErrorText()).find("test:"), std::string::npos) << lastErrorText();
}

TEST(SocketAddressTest, EqualityIgnoresPadding) {
  SocketAddress a, b;
  ASSERT_EQ(SocketAddress::parse("127.0.0.1:5", &a), ncclSuccess);
  ASSERT_EQ(SocketAddress::parse("127.0.0.1:5", &b), ncclSuccess);
  EXPECT_TRUE(a == b);
  b.setPort(6);
  EXPECT_FALSE(a == b);
  EXPECT_EQ(SocketAddress().family(), 0);
  EXPECT_EQ(SocketAddress().toString(), "<invalid family 0>");
}

// ---- NCCL_SOCKET_IFNAME filters ----

TEST(IfNameFilterTest, PrefixList) {
  IfNameFilter f = IfNameFilter::parse("eth,ib");
  EXPECT_FALSE(f.exclude);
  EXPECT_FALSE(f.exact);
  ASSERT_EQ(f.entries.size(), 2u);
  EXPECT_TRUE(f.matches("eth0"));
  EXPECT_TRUE(f.matches("ib1"));
  EXPECT_FALSE(f.matches("lo"));
  EXPECT_FALSE(f.matches("et"));
}

TEST(IfNameFilterTest, ExactList) {
  IfNameFilter f = IfNameFilter::parse("=eth0,lo");
  EXPECT_TRUE(f.exact);
  EXPECT_TRUE(f.matches("eth0"));
  EXPECT_TRUE(f.matches("lo"));
  EXPECT_FALSE(f.matches("eth01"));
  EXPECT_FALSE(f.matches("eth"));
}

TEST(IfNameFilterTest, ExcludeList) {
  IfNameFilter f = IfNameFilter::parse("^docker,lo");
  EXPECT_TRUE(f.exclude);
  EXPECT_FALSE(f.matches("docker0"));
  EXPECT_FALSE(f.matches("lo"));
  EXPECT_TRUE(f.matches("eth0"));
  IfNameFilter g = IfNameFilter::parse("^=eth0");
  EXPECT_TRUE(g.exclude);
  EXPECT_TRUE(g.exact);
  EXPECT_FALSE(g.matches("eth0"));
  EXPECT_TRUE(g.matches("eth01"));
}

TEST(IfNameFilterTest, PortsBlanksAndEmptyEntries) {
  IfNameFilter f = IfNameFilter::parse(" eth0:1234 , ,ib0");
  ASSERT_EQ(f.entries.size(), 2u);
  EXPECT_EQ(f.entries[0].name, "eth0");
  EXPECT_EQ(f.entries[0].port, 1234);
  EXPECT_EQ(f.entries[1].port, -1);
  EXPECT_TRUE(f.matches("eth0"));
  EXPECT_TRUE(f.matches("eth0", 1234));
  EXPECT_FALSE(f.matches("eth0", 99));
  EXPECT_TRUE(f.matches("ib0", 99));
  EXPECT_TRUE(IfNameFilter::parse("").entries.empty());
  EXPECT_FALSE(IfNameFilter::parse("").matches("eth0"));
  EXPECT_TRUE(IfNameFilter::parse("^").matches("eth0"));
}

TEST(SocketFamilyTest, Parse) {
  EXPECT_EQ(parseSocketFamily("AF_INET"), AF_INET);
  EXPECT_EQ(parseSocketFamily("AF_INET6"), AF_INET6);
  EXPECT_EQ(parseSocketFamily(""), AF_UNSPEC);
  EXPECT_EQ(parseSocketFamily("inet"), AF_UNSPEC);
}

// ---- the one reader of NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY ----

TEST(SocketIfSettingTest, ParsesListSyntaxAndFamily) {
  SocketIfSetting unset = SocketIfSetting::parse("", "");
  EXPECT_FALSE(unset.hasList());
  EXPECT_TRUE(unset.allowsName("docker0"));  // no list: any name; the order is selectInterfaces' job
  EXPECT_TRUE(unset.allowsFamily(AF_INET));
  EXPECT_TRUE(unset.allowsFamily(AF_INET6));

  SocketIfSetting prefix = SocketIfSetting::parse("eth,ib", "AF_INET");
  EXPECT_TRUE(prefix.hasList());
  EXPECT_TRUE(prefix.allowsName("eth0"));
  EXPECT_TRUE(prefix.allowsName("ib1"));
  EXPECT_FALSE(prefix.allowsName("lo"));
  EXPECT_EQ(prefix.family, AF_INET);
  EXPECT_TRUE(prefix.allows(iface("eth0", "10.0.0.5", "255.0.0.0")));
  EXPECT_FALSE(prefix.allows(iface("eth0", "fd00::5", "ffff:ffff:ffff:ffff::")));  // family
  EXPECT_FALSE(prefix.allows(iface("lo", "127.0.0.1", "255.0.0.0")));              // name

  SocketIfSetting exclude = SocketIfSetting::parse("^docker,lo", "");
  EXPECT_FALSE(exclude.allowsName("docker0"));
  EXPECT_FALSE(exclude.allowsName("lo"));
  EXPECT_TRUE(exclude.allowsName("eth0"));

  SocketIfSetting exact = SocketIfSetting::parse("=eth0", "AF_INET6");
  EXPECT_TRUE(exact.allowsName("eth0"));
  EXPECT_FALSE(exact.allowsName("eth01"));
  EXPECT_EQ(exact.family, AF_INET6);
  EXPECT_FALSE(exact.allowsFamily(AF_INET));
  EXPECT_EQ(exact.describe(), "NCCL_SOCKET_IFNAME='=eth0', NCCL_SOCKET_FAMILY='AF_INET6'");

  SocketIfSetting notExact = SocketIfSetting::parse("^=eth0", "inet");
  EXPECT_FALSE(notExact.allowsName("eth0"));
  EXPECT_TRUE(notExact.allowsName("eth01"));
  EXPECT_EQ(notExact.family, AF_UNSPEC);  // an unknown family is ignored, as NCCL does
  EXPECT_EQ(notExact.familyText, "inet");  // and still quoted as given

  // A list that is set but names nothing is still a list: nothing is allowed and nothing else is tried.
  SocketIfSetting empty = SocketIfSetting::parse(",", "");
  EXPECT_TRUE(empty.hasList());
  EXPECT_FALSE(empty.allowsName("eth0"));
  EXPECT_TRUE(selectInterfaces({iface("eth0", "10.0.0.5", "255.0.0.0")}, empty, nullptr, 4).empty());
}

// Read on every call (the settings are live, and tests change them between devices and
// communicators); a value already read is a snapshot its holder keeps.
TEST(SocketIfSettingTest, ReadsTheSettingsAfreshOnEveryCall) {
  test::ScopedEnvVar ifname("NCCL_SOCKET_IFNAME", "=eth0");
  test::ScopedEnvVar family("NCCL_SOCKET_FAMILY", "AF_INET");
  SocketIfSetting first = readSocketIfSetting();
  EXPECT_EQ(first.ifnameText, "=eth0");
  EXPECT_TRUE(first.names.exact);
  EXPECT_EQ(first.family, AF_INET);
  {
    test::ScopedEnvVar ifname2("NCCL_SOCKET_IFNAME", "^lo");
    test::ScopedEnvVar family2("NCCL_SOCKET_FAMILY", nullptr);
    SocketIfSetting second = readSocketIfSetting();
    EXPECT_EQ(second.ifnameText, "^lo");
    EXPECT_TRUE(second.names.exclude);
    EXPECT_FALSE(second.allowsName("lo"));
    EXPECT_TRUE(second.allowsName("eth0"));
    EXPECT_EQ(second.familyText, "");
    EXPECT_EQ(second.family, AF_UNSPEC);
    {
      test::ScopedEnvVar ifname3("NCCL_SOCKET_IFNAME", nullptr);
      EXPECT_FALSE(readSocketIfSetting().hasList());
    }
  }
  EXPECT_EQ(readSocketIfSetting().describe(), "NCCL_SOCKET_IFNAME='=eth0', NCCL_SOCKET_FAMILY='AF_INET'");
  EXPECT_EQ(first.ifnameText, "=eth0");
}

// ---- interface selection order ----

TEST(SelectInterfacesTest, NcclOrderOfPreference) {
  std::vector<NetInterface> all = {iface("lo", "127.0.0.1", "255.0.0.0"),
                                   iface("docker0", "172.17.0.1", "255.255.0.0"),
                                   iface("eth0", "10.0.0.5", "255.0.0.0"),
                                   iface("eth0", "fd00::5", "ffff:ffff:ffff:ffff::"),
                                   iface("virbr0", "192.168.122.1", "255.255.255.0"),
                                   iface("ib0", "192.168.1.2", "255.255.255.0")};
  // ib* first.
  EXPECT_EQ(names(selectInterfaces(all, SocketIfSetting::parse("", ""), nullptr, 4)),
            std::vector<std::string>{"ib0/192.168.1.2"});
  // Without ib: anything but docker/lo/virbr; one address per name (the first).
  std::vector<NetInterface> noIb(all.begin(), all.end() - 1);
  EXPECT_EQ(names(selectInterfaces(noIb, SocketIfSetting::parse("", ""), nullptr, 4)),
            std::vector<std::string>{"eth0/10.0.0.5"});
  EXPECT_EQ(names(selectInterfaces(noIb, SocketIfSetting::parse("", "AF_INET6"), nullptr, 4)),
            std::vector<std::string>{"eth0/fd00::5"});
  // Then docker, then lo, then virbr.
  std::vector<NetInterface> rest = {all[0], all[1], all[4]};
  EXPECT_EQ(names(selectInterfaces(rest, SocketIfSetting::parse("", ""), nullptr, 4)),
            std::vector<std::string>{"docker0/172.17.0.1"});
  rest = {all[4], all[0]};
  EXPECT_EQ(names(selectInterfaces(rest, SocketIfSetting::parse("", ""), nullptr, 4)),
            std::vector<std::string>{"lo/127.0.0.1"});
  rest = {all[4]};
  EXPECT_EQ(names(selectInterfaces(rest, SocketIfSetting::parse("", ""), nullptr, 4)),
            std::vector<std::string>{"virbr0/192.168.122.1"});
  EXPECT_TRUE(selectInterfaces({}, SocketIfSetting::parse("", ""), nullptr, 4).empty());
}

TEST(SelectInterfacesTest, ExplicitListWinsAndNothingElseIsTried) {
  std::vector<NetInterface> all = {
      iface("lo", "127.0.0.1", "255.0.0.0"), iface("eth0", "10.0.0.5", "255.0.0.0"),
      iface("eth1", "10.1.0.5", "255.255.0.0"), iface("ib0", "192.168.1.2", "255.255.255.0")};
  EXPECT_EQ(names(selectInterfaces(all, SocketIfSetting::parse("=lo", ""), nullptr, 4)),
            std::vector<std::string>{"lo/127.0.0.1"});
  EXPECT_EQ(names(selectInterfaces(all, SocketIfSetting::parse("eth", ""), nullptr, 4)),
            (std::vector<std::string>{"eth0/10.0.0.5", "eth1/10.1.0.5"}));
  EXPECT_EQ(names(selectInterfaces(all, SocketIfSetting::parse("eth", ""), nullptr, 1)),
            std::vector<std::string>{"eth0/10.0.0.5"});
  EXPECT_EQ(names(selectInterfaces(all, SocketIfSetting::parse("^ib,lo", ""), nullptr, 4)),
            (std::vector<std::string>{"eth0/10.0.0.5", "eth1/10.1.0.5"}));
  EXPECT_TRUE(selectInterfaces(all, SocketIfSetting::parse("=eth", ""), nullptr, 4).empty());
  EXPECT_TRUE(selectInterfaces(all, SocketIfSetting::parse("eth", "AF_INET6"), nullptr, 4).empty());
}

TEST(SelectInterfacesTest, CommIdSubnetBeatsGenericChoice) {
  std::vector<NetInterface> all = {iface("lo", "127.0.0.1", "255.0.0.0"),
                                   iface("eth0", "10.0.0.5", "255.0.0.0"),
                                   iface("docker0", "172.17.0.1", "255.255.0.0")};
  SocketAddress commId;
  ASSERT_EQ(SocketAddress::parse("172.17.3.4:9000", &commId), ncclSuccess);
  EXPECT_EQ(names(selectInterfaces(all, SocketIfSetting::parse("", ""), &commId, 4)),
            std::vector<std::string>{"docker0/172.17.0.1"});
  ASSERT_EQ(SocketAddress::parse("127.0.0.1:9000", &commId), ncclSuccess);
  EXPECT_EQ(names(selectInterfaces(all, SocketIfSetting::parse("", ""), &commId, 4)),
            std::vector<std::string>{"lo/127.0.0.1"});
  ASSERT_EQ(SocketAddress::parse("8.8.8.8:9000", &commId), ncclSuccess);
  EXPECT_EQ(names(selectInterfaces(all, SocketIfSetting::parse("", ""), &commId, 4)),
            std::vector<std::string>{"eth0/10.0.0.5"});
}

TEST(SelectInterfacesTest, SameSubnet) {
  NetInterface eth = iface("eth0", "10.0.0.5", "255.255.255.0");
  SocketAddress a;
  ASSERT_EQ(SocketAddress::parse("10.0.0.200:1", &a), ncclSuccess);
  EXPECT_TRUE(sameSubnet(eth, a));
  ASSERT_EQ(SocketAddress::parse("10.0.1.200:1", &a), ncclSuccess);
  EXPECT_FALSE(sameSubnet(eth, a));
  ASSERT_EQ(SocketAddress::parse("[fd00::7]:1", &a), ncclSuccess);
  EXPECT_FALSE(sameSubnet(eth, a));
  EXPECT_TRUE(sameSubnet(iface("eth0", "fd00::5", "ffff:ffff:ffff:ffff::"), a));
}

TEST(ListInterfacesTest, MachineHasLoopbackAndNoLinkLocal) {
  std::vector<NetInterface> all;
  ASSERT_EQ(listInterfaces(&all), ncclSuccess);
  bool lo = false;
  for (const NetInterface& i : all) {
    EXPECT_TRUE(i.addr.isInet());
    EXPECT_EQ(i.addr.port(), 0);
    if (i.addr.family() == AF_INET6) {
      EXPECT_FALSE(IN6_IS_ADDR_LINKLOCAL(&i.addr.in6.sin6_addr)) << i.name;
    }
    lo = lo || i.addr.isLoopback();
  }
  EXPECT_TRUE(lo);
}

// ---- sockets ----

struct Pair {
  Socket listener, client, server;
};

void connectPair(Pair* p, int64_t timeoutMs = 5000) {
  ASSERT_EQ(Socket::listen(loopback4(), &p->listener), ncclSuccess);
  ASSERT_NE(p->listener.localAddress().port(), 0);
  auto accepted = std::async(std::launch::async, [p, timeoutMs] {
    return p->listener.accept(kMagic, SocketType::kBootstrap, SocketWait::in(timeoutMs, nullptr, "test peer"),
                              &p->server);
  });
  ASSERT_EQ(Socket::connect(p->listener.localAddress(), kMagic, SocketType::kBootstrap,
                            SocketWait::in(timeoutMs, nullptr, "test listener"), &p->client),
            ncclSuccess);
  ASSERT_EQ(accepted.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  ASSERT_EQ(accepted.get(), ncclSuccess);
  ASSERT_TRUE(p->server.valid());
}

TEST(SocketTest, ConnectAcceptSendRecv) {
  Pair p;
  connectPair(&p);
  EXPECT_EQ(p.server.peerAddress().port(), p.client.localAddress().port());
  const char msg[] = "hello bootstrap";
  ASSERT_EQ(p.client.sendAll(msg, sizeof(msg), SocketWait::in(1000, nullptr, "x")), ncclSuccess);
  char got[sizeof(msg)] = {};
  ASSERT_EQ(p.server.recvAll(got, sizeof(got), SocketWait::in(1000, nullptr, "x")), ncclSuccess);
  EXPECT_STREQ(got, msg);
  // Zero bytes is a no-op.
  EXPECT_EQ(p.server.sendAll(nullptr, 0, SocketWait::in(1000, nullptr, "x")), ncclSuccess);
  EXPECT_EQ(p.client.recvAll(nullptr, 0, SocketWait::in(1000, nullptr, "x")), ncclSuccess);
}

TEST(SocketTest, LargeTransferThroughSmallBuffers) {
  Pair p;
  connectPair(&p);
  std::vector<uint32_t> out(4 << 20), in(4 << 20, 0);  // 16 MiB: many times the socket buffers
  std::iota(out.begin(), out.end(), 7u);
  auto sender = std::async(std::launch::async, [&] {
    return p.client.sendAll(out.data(), out.size() * 4, SocketWait::in(20000, nullptr, "x"));
  });
  ASSERT_EQ(p.server.recvAll(in.data(), in.size() * 4, SocketWait::in(20000, nullptr, "x")), ncclSuccess);
  ASSERT_EQ(sender.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_EQ(sender.get(), ncclSuccess);
  EXPECT_EQ(in, out);
}

TEST(SocketTest, SendRecvBothWaysDoesNotDeadlock) {
  Pair p;
  connectPair(&p);
  const size_t n = 8 << 20;  // both sides send 8 MiB before either reads with plain sendAll it would block
  std::vector<char> a(n), b(n), gotA(n), gotB(n);
  for (size_t i = 0; i < n; ++i) a[i] = char(i * 7), b[i] = char(i * 13 + 1);
  auto side = std::async(std::launch::async, [&] {
    return Socket::sendRecv(p.server, b.data(), n, p.server, gotA.data(), n,
                            SocketWait::in(20000, nullptr, "x"));
  });
  ASSERT_EQ(
      Socket::sendRecv(p.client, a.data(), n, p.client, gotB.data(), n, SocketWait::in(20000, nullptr, "x")),
      ncclSuccess);
  ASSERT_EQ(side.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_EQ(side.get(), ncclSuccess);
  EXPECT_EQ(gotA, a);
  EXPECT_EQ(gotB, b);
}

TEST(SocketTest, RecvTimesOutWithMessage) {
  Pair p;
  connectPair(&p);
  char c;
  int64_t t0 = nowMs();
  EXPECT_EQ(p.server.recvAll(&c, 1, SocketWait::in(200, nullptr, "the test byte")), ncclRemoteError);
  int64_t took = nowMs() - t0;
  EXPECT_GE(took, 190);
  EXPECT_LT(took, 2000);
  std::string err = lastErrorText();
  EXPECT_NE(err.find("timed out after 200 ms waiting for the test byte"), std::string::npos) << err;
  EXPECT_NE(err.find("127.0.0.1:"), std::string::npos) << err;
}

TEST(SocketTest, EofIsRemoteError) {
  Pair p;
  connectPair(&p);
  const char partial[3] = {1, 2, 3};
  ASSERT_EQ(p.client.sendAll(partial, 3, SocketWait::in(1000, nullptr, "x")), ncclSuccess);
  p.client.close();
  char buf[8];
  EXPECT_EQ(p.server.recvAll(buf, sizeof(buf), SocketWait::in(2000, nullptr, "eight bytes")),
            ncclRemoteError);
  std::string err = lastErrorText();
  EXPECT_NE(err.find("closed by the peer after 3 of 8 bytes"), std::string::npos) << err;
  EXPECT_TRUE(p.server.peerClosed());
}

TEST(SocketTest, SendToClosedPeerIsRemoteError) {
  Pair p;
  connectPair(&p);
  p.server.close();
  std::vector<char> big(1 << 20);
  ncclResult_t res = ncclSuccess;
  for (int i = 0; i < 64 && res == ncclSuccess; ++i)
    res = p.client.sendAll(big.data(), big.size(), SocketWait::in(2000, nullptr, "x"));
  EXPECT_EQ(res, ncclRemoteError) << lastErrorText();
}

TEST(SocketTest, AbortFlagEndsAWait) {
  Pair p;
  connectPair(&p);
  std::atomic<int> abortFlag{0};
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    abortFlag.store(1);
  });
  setLastError("sentinel");
  char c;
  int64_t t0 = nowMs();
  EXPECT_EQ(p.server.recvAll(&c, 1, SocketWait::in(20000, &abortFlag, "x")), ncclInternalError);
  EXPECT_LT(nowMs() - t0, 2000);
  aborter.join();
  EXPECT_STREQ(lastErrorText(), "sentinel");  // an abort is not a new error
  Socket s;
  EXPECT_EQ(p.listener.acceptRaw(SocketWait::in(20000, &abortFlag, "x"), &s), ncclInternalError);
}

TEST(SocketTest, AcceptSkipsJunkWrongMagicAndSilentConnections) {
  Socket listener;
  ASSERT_EQ(Socket::listen(loopback4(), &listener), ncclSuccess);
  SocketAddress addr = listener.localAddress();
  setLastError("sentinel");
  // A raw client that speaks no handshake at all.
  auto raw = [&](const void* bytes, size_t n) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(::connect(fd, &addr.sa, addr.length()), 0);
    if (n) {
      EXPECT_EQ(::send(fd, bytes, n, 0), (ssize_t)n);
    }
    return fd;
  };
  unsigned char junk[64];
  for (size_t i = 0; i < sizeof(junk); ++i) junk[i] = (unsigned char)(i * 37 + 11);
  int junkFd = raw(junk, sizeof(junk));
  int silentFd = raw(nullptr, 0);
  int shortFd = raw("abc", 3);
  ::close(shortFd);  // EOF in the middle of a handshake
  Socket wrongMagic, wrongType, good;
  ASSERT_EQ(Socket::connect(addr, kMagic + 1, SocketType::kBootstrap, SocketWait::in(2000, nullptr, "x"),
                            &wrongMagic),
            ncclSuccess);
  ASSERT_EQ(Socket::connect(addr, kMagic, SocketType::kProxy, SocketWait::in(2000, nullptr, "x"), &wrongType),
            ncclSuccess);
  ASSERT_EQ(Socket::connect(addr, kMagic, SocketType::kBootstrap, SocketWait::in(2000, nullptr, "x"), &good),
            ncclSuccess);
  Socket accepted;
  int64_t t0 = nowMs();
  ASSERT_EQ(
      listener.accept(kMagic, SocketType::kBootstrap, SocketWait::in(5000, nullptr, "x"), &accepted, 200),
      ncclSuccess);
  EXPECT_LT(nowMs() - t0, 3000);  // the silent connection costs at most ~200 ms
  EXPECT_EQ(accepted.peerAddress().port(), good.localAddress().port());
  EXPECT_STREQ(lastErrorText(), "sentinel");  // strangers do not poison ncclGetLastError
  // The accepted connection works.
  int v = 42, w = 0;
  ASSERT_EQ(good.sendAll(&v, sizeof(v), SocketWait::in(1000, nullptr, "x")), ncclSuccess);
  ASSERT_EQ(accepted.recvAll(&w, sizeof(w), SocketWait::in(1000, nullptr, "x")), ncclSuccess);
  EXPECT_EQ(w, 42);
  ::close(junkFd);
  ::close(silentFd);
}

TEST(SocketTest, AcceptWithOnlyJunkTimesOut) {
  Socket listener;
  ASSERT_EQ(Socket::listen(loopback4(), &listener), ncclSuccess);
  Socket bad;
  ASSERT_EQ(Socket::connect(listener.localAddress(), kMagic + 1, SocketType::kBootstrap,
                            SocketWait::in(2000, nullptr, "x"), &bad),
            ncclSuccess);
  Socket accepted;
  int64_t t0 = nowMs();
  EXPECT_EQ(listener.accept(kMagic, SocketType::kBootstrap, SocketWait::in(300, nullptr, "the real peer"),
                            &accepted),
            ncclRemoteError);
  EXPECT_LT(nowMs() - t0, 2000);
  EXPECT_NE(std::string(lastErrorText()).find("timed out after 300 ms waiting for the real peer"),
            std::string::npos)
      << lastErrorText();
}

// A port nobody listens on: bind, read the port, close.
SocketAddress closedPort() {
  Socket s;
  EXPECT_EQ(Socket::listen(loopback4(), &s), ncclSuccess);
  SocketAddress a = s.localAddress();
  s.close();
  return a;
}

TEST(SocketTest, ConnectRetriesThenFailsNamingPeerAndErrno) {
  test::ScopedEnvVar retries("NCCL_SOCKET_RETRY_CNT", "2");
  test::ScopedEnvVar sleepMs("NCCL_SOCKET_RETRY_SLEEP_MSEC", "20");
  SocketAddress target = closedPort();
  Socket s;
  int64_t t0 = nowMs();
  EXPECT_EQ(Socket::connect(target, kMagic, SocketType::kBootstrap,
                            SocketWait::in(10000, nullptr, "the test root"), &s),
            ncclRemoteError);
  int64_t took = nowMs() - t0;
  EXPECT_GE(took, 55);  // sleeps of 20 + 40 ms
  EXPECT_LT(took, 3000);
  std::string err = lastErrorText();
  EXPECT_NE(err.find("failed after 3 attempts"), std::string::npos) << err;
  EXPECT_NE(err.find(target.toString()), std::string::npos) << err;
  EXPECT_NE(err.find(strerror(ECONNREFUSED)), std::string::npos) << err;
}

TEST(SocketTest, ConnectRetriesStopAtTheDeadline) {
  test::ScopedEnvVar retries("NCCL_SOCKET_RETRY_CNT", "1000");
  test::ScopedEnvVar sleepMs("NCCL_SOCKET_RETRY_SLEEP_MSEC", "50");
  Socket s;
  int64_t t0 = nowMs();
  EXPECT_EQ(Socket::connect(closedPort(), kMagic, SocketType::kBootstrap,
                            SocketWait::in(400, nullptr, "the root"), &s),
            ncclRemoteError);
  int64_t took = nowMs() - t0;
  EXPECT_GE(took, 390);
  EXPECT_LT(took, 2500);
  EXPECT_NE(std::string(lastErrorText()).find("timed out after 400 ms waiting for the root"),
            std::string::npos)
      << lastErrorText();
}

TEST(SocketTest, ConnectSucceedsWhenListenerAppearsLater) {
  test::ScopedEnvVar sleepMs("NCCL_SOCKET_RETRY_SLEEP_MSEC", "20");
  SocketAddress target = closedPort();
  Socket listener;
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    EXPECT_EQ(Socket::listen(target, &listener), ncclSuccess);
  });
  Socket s;
  EXPECT_EQ(
      Socket::connect(target, kMagic, SocketType::kBootstrap, SocketWait::in(5000, nullptr, "late"), &s),
      ncclSuccess);
  late.join();
  Socket accepted;
  EXPECT_EQ(listener.accept(kMagic, SocketType::kBootstrap, SocketWait::in(2000, nullptr, "x"), &accepted),
            ncclSuccess);
}

TEST(SocketTest, ListenRejectsNonInetAndReportsBindErrors) {
  Socket s;
  EXPECT_EQ(Socket::listen(SocketAddress(), &s), ncclInvalidArgument);
  Socket a, b;
  ASSERT_EQ(Socket::listen(loopback4(), &a), ncclSuccess);
  EXPECT_EQ(Socket::listen(a.localAddress(), &b), ncclSystemError);
  EXPECT_NE(std::string(lastErrorText()).find(a.localAddress().toString()), std::string::npos)
      << lastErrorText();
}

TEST(SocketTest, Ipv6LoopbackWorks) {
  SocketAddress v6;
  ASSERT_EQ(SocketAddress::parse("[::1]:0", &v6), ncclSuccess);
  Socket listener;
  if (Socket::listen(v6, &listener) != ncclSuccess) GTEST_SKIP() << "no IPv6 loopback here";
  Socket c, s;
  ASSERT_EQ(Socket::connect(listener.localAddress(), kMagic, SocketType::kBootstrap,
                            SocketWait::in(2000, nullptr, "x"), &c),
            ncclSuccess);
  ASSERT_EQ(listener.accept(kMagic, SocketType::kBootstrap, SocketWait::in(2000, nullptr, "x"), &s),
            ncclSuccess);
  EXPECT_EQ(s.peerAddress().family(), AF_INET6);
}

TEST(SocketTest, MoveTransfersOwnership) {
  Socket a;
  ASSERT_EQ(Socket::listen(loopback4(), &a), ncclSuccess);
  int fd = a.fd();
  Socket b(std::move(a));
  EXPECT_FALSE(a.valid());
  EXPECT_EQ(b.fd(), fd);
  Socket c;
  c = std::move(b);
  EXPECT_EQ(c.fd(), fd);
  c.close();
  EXPECT_FALSE(c.valid());
}

// The socket retry settings have one reader (util/socket_retry.h) and one meaning for every
// caller: retries after the first try, and a back-off of N times the sleep before try N.
TEST(SocketRetryPolicyTest, OneMeaningForBothSettings) {
  {
    test::ScopedEnvVar cnt("NCCL_SOCKET_RETRY_CNT", nullptr);
    test::ScopedEnvVar sleep("NCCL_SOCKET_RETRY_SLEEP_MSEC", nullptr);
    const SocketRetryPolicy d = socketRetryPolicy();
    EXPECT_EQ(d.retries, 34);
    EXPECT_EQ(d.sleepMs, 100);
  }
  test::ScopedEnvVar cnt("NCCL_SOCKET_RETRY_CNT", "3");
  test::ScopedEnvVar sleep("NCCL_SOCKET_RETRY_SLEEP_MSEC", "25");
  const SocketRetryPolicy p = socketRetryPolicy();
  EXPECT_EQ(p.retries, 3);
  EXPECT_EQ(p.sleepMs, 25);
  EXPECT_EQ(p.backoffMs(0), 25);
  EXPECT_EQ(p.backoffMs(3), 100);
  test::ScopedEnvVar badCnt("NCCL_SOCKET_RETRY_CNT", "-5");
  test::ScopedEnvVar badSleep("NCCL_SOCKET_RETRY_SLEEP_MSEC", "-1");
  const SocketRetryPolicy clamped = socketRetryPolicy();
  EXPECT_EQ(clamped.retries, 0);
  EXPECT_EQ(clamped.sleepMs, 0);
  EXPECT_EQ(clamped.backoffMs(7), 0);
}

// A refused connect is tried 1 + NCCL_SOCKET_RETRY_CNT times, backing off as the policy says.
TEST(SocketRetryPolicyTest, ConnectFollowsThePolicy) {
  test::ScopedEnvVar cnt("NCCL_SOCKET_RETRY_CNT", "2");
  test::ScopedEnvVar sleep("NCCL_SOCKET_RETRY_SLEEP_MSEC", "40");
  // A port nobody listens on: bind one, note it, close it.
  Socket probe;
  SocketAddress any;
  ASSERT_EQ(SocketAddress::parse("127.0.0.1:0", &any), ncclSuccess);
  ASSERT_EQ(Socket::listen(any, &probe), ncclSuccess);
  const SocketAddress dead = probe.localAddress();
  probe.close();
  Socket s;
  const int64_t t0 = nowMs();
  EXPECT_EQ(Socket::connect(dead, 0x1234, SocketType::kBootstrap, SocketWait::in(5000, nullptr, "retry test"), &s),
            ncclRemoteError);
  const int64_t waited = nowMs() - t0;
  // Back-offs of 40 and 80 ms before tries 2 and 3 (the message counts the tries).
  EXPECT_GE(waited, 120);
  EXPECT_NE(std::string(lastErrorText()).find("failed after 3 attempts"), std::string::npos) << lastErrorText();
}

}  // namespace
}  // namespace accl
