// accl_net_plugin_pingpong: two ranks on two "hosts" (run under tests/netns/multihost.sh -H 2
// -P 1) move data both ways at once through the network the registry chooses (NCCL_NET /
// NCCL_NET_PLUGIN as the caller sets them), as two proxies would: each rank listens, publishes its
// handle in a file under <dir>, connects to the other's, and then keeps up to 8 sends and 8
// receives in flight over one thread until every message (0, 1, 4099 bytes and 8 MiB, several of
// each) has arrived with the expected bytes. Exit 0 on success, 1 on any failure or at the
// deadline, with a line saying what went wrong.
//
//   accl_net_plugin_pingpong <dir> [expected network name]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "transports/net/net_registry.h"
#include "util/params.h"

namespace {

using namespace accl;
using Clock = std::chrono::steady_clock;

constexpr int kInFlight = 8;
const auto kDeadline = std::chrono::seconds(60);

int fail(const char* fmt, const char* detail) {
  std::fprintf(stderr, "pingpong: ");
  std::fprintf(stderr, fmt, detail);
  std::fprintf(stderr, "\n");
  return 1;
}

unsigned char expectedByte(int fromRank, int msg, size_t i) {
  return static_cast<unsigned char>(i * 7 + msg * 13 + fromRank * 101 + 5);
}

std::vector<size_t> messageSizes() {
  std::vector<size_t> sizes;
  for (int round = 0; round < 3; ++round)
    for (size_t s : {size_t(0), size_t(1), size_t(4099), size_t(8) << 20}) sizes.push_back(s);
  return sizes;
}

bool writeHandle(const std::string& path, const NetHandle& handle) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(reinterpret_cast<const char*>(handle.bytes), sizeof(handle.bytes));
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

bool readHandle(const std::string& path, NetHandle* handle) {
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(handle->bytes), sizeof(handle->bytes));
  return bool(in);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return fail("usage: %s <dir> [expected network]", argv[0]);
  const char* rankText = std::getenv("ACCL_MH_RANK");
  const char* job = std::getenv("ACCL_MH_NETNS");
  if (!rankText || !job) return fail("%s", "run me under tests/netns/multihost.sh -H 2 -P 1");
  const int rank = std::atoi(rankText), peer = 1 - rank;
  const std::string dir = argv[1];
  const std::string myFile = dir + "/" + job + "-handle" + std::to_string(rank);
  const std::string peerFile = dir + "/" + job + "-handle" + std::to_string(peer);
  const auto deadline = Clock::now() + kDeadline;

  NetChoice choice;
  choice.netName = paramStr("NCCL_NET");
  choice.commId = 0x5eed;
  std::unique_ptr<NetDevice> net;
  if (chooseNetDevice(choice, &net) != ncclSuccess) return fail("%s", "no network chosen (see the WARN above)");
  if (argc > 2 && std::strcmp(net->name(), argv[2]) != 0) return fail("the network chosen is %s", net->name());
  NetProperties props;
  net->getProperties(0, &props);
  std::printf("rank %d: network %s, device %s\n", rank, net->name(), props.name.c_str());

  NetHandle mine, theirs;
  NetListenComm* listen = nullptr;
  if (net->listen(0, &mine, &listen) != ncclSuccess) return fail("%s", "listen failed");
  if (!writeHandle(myFile, mine)) return fail("cannot write %s", myFile.c_str());
  while (!readHandle(peerFile, &theirs)) {
    if (Clock::now() > deadline) return fail("no handle from the peer in %s", peerFile.c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  NetSendComm* send = nullptr;
  NetRecvComm* recv = nullptr;
  while (!send || !recv) {
    if (!send && net->connect(0, NetCommConfig(), theirs, &send) != ncclSuccess) return fail("%s", "connect failed");
    if (!recv && net->accept(listen, &recv) != ncclSuccess) return fail("%s", "accept failed");
    if (Clock::now() > deadline) return fail("%s", "connection not established in time");
  }

  const std::vector<size_t> sizes = messageSizes();
  const int n = int(sizes.size());
  std::vector<std::vector<unsigned char>> out(n), in(n);
  std::vector<NetMemHandle*> outMr(n), inMr(n);
  for (int m = 0; m < n; ++m) {
    out[m].resize(sizes[m]);
    in[m].assign(sizes[m] + 1, 0xEE);  // one guard byte
    for (size_t i = 0; i < sizes[m]; ++i) out[m][i] = expectedByte(rank, m, i);
    if (net->regMr(static_cast<NetSendComm*>(send), out[m].data(), sizes[m], kNetPtrHost, &outMr[m]) != ncclSuccess ||
        net->regMr(static_cast<NetRecvComm*>(recv), in[m].data(), sizes[m], kNetPtrHost, &inMr[m]) != ncclSuccess)
      return fail("%s", "regMr failed");
  }

  // Both directions at once, up to kInFlight posted each way, as a proxy drives them.
  std::vector<NetRequest*> sreq(n, nullptr), rreq(n, nullptr);
  int sPosted = 0, rPosted = 0, sDone = 0, rDone = 0;
  while (sDone < n || rDone < n) {
    if (Clock::now() > deadline) return fail("%s", "transfers not finished in time");
    while (rPosted < n && rPosted - rDone < kInFlight) {
      void* data = in[rPosted].data();
      size_t size = sizes[rPosted];
      int tag = rPosted;
      if (net->irecv(recv, 1, &data, &size, &tag, &inMr[rPosted], &rreq[rPosted]) != ncclSuccess)
        return fail("%s", "irecv failed");
      if (!rreq[rPosted]) break;
      ++rPosted;
    }
    while (sPosted < n && sPosted - sDone < kInFlight) {
      if (net->isend(send, out[sPosted].data(), sizes[sPosted], sPosted, outMr[sPosted], &sreq[sPosted]) != ncclSuccess)
        return fail("%s", "isend failed");
      if (!sreq[sPosted]) break;
      ++sPosted;
    }
    int done = 0;
    size_t got = 0;
    if (sDone < sPosted) {
      if (net->test(sreq[sDone], &done, nullptr) != ncclSuccess) return fail("%s", "test(send) failed");
      if (done) ++sDone;
    }
    if (rDone < rPosted) {
      if (net->test(rreq[rDone], &done, &got) != ncclSuccess) return fail("%s", "test(recv) failed");
      if (done) {
        if (got != sizes[rDone]) return fail("%s", "a message arrived with the wrong size");
        for (size_t i = 0; i < got; ++i)
          if (in[rDone][i] != expectedByte(peer, rDone, i)) return fail("%s", "a message arrived with wrong bytes");
        if (in[rDone][got] != 0xEE) return fail("%s", "a message overran its buffer");
        ++rDone;
      }
    }
  }
  for (int m = 0; m < n; ++m) {
    net->deregMr(static_cast<NetSendComm*>(send), outMr[m]);
    net->deregMr(static_cast<NetRecvComm*>(recv), inMr[m]);
  }
  std::printf("rank %d: %d messages each way checked\n", rank, n);
  net->closeSend(send);
  net->closeRecv(recv);
  net->closeListen(listen);
  unlink(myFile.c_str());
  return 0;
}
