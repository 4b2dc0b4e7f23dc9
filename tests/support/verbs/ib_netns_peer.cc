// One end of ib_netns_test.sh: the IB NetDevice over the verbs emulator, run inside a network
// namespace. `server <dir> <n>` listens (the handle goes to <dir>/handle), receives n 16 MiB
// messages and checks them. `client <dir> <n> [cut]` connects and sends them; with `cut` it
// stops after two messages, writes <dir>/ready-to-cut, waits for <dir>/cut-done (the script has
// set the link down), sends once more and expects ncclRemoteError within 20 s. Exit 0 = as
// expected; the last line printed says what happened.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "transports/net/ib/ib_net.h"

using namespace accl;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool waitFile(const std::string& path, double seconds) {
  auto t = Clock::now();
  while (access(path.c_str(), F_OK) != 0) {
    if (since(t) > seconds) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

char pattern(size_t k, int i) { return static_cast<char>(k * 7 + i); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s server|client <dir> <messages> [cut]\n", argv[0]);
    return 2;
  }
  bool server = strcmp(argv[1], "server") == 0;
  std::string dir = argv[2];
  int messages = atoi(argv[3]);
  bool cut = argc > 4 && strcmp(argv[4], "cut") == 0;
  std::unique_ptr<NetDevice> net;
  if (createIbNetDevice(&net) != ncclSuccess || net->deviceCount() < 1) {
    printf("%s: no IB device\n", argv[1]);
    return 3;
  }
  const size_t bytes = size_t(16) << 20;
  std::vector<char> buf(bytes);
  NetHandle h;
  if (server) {
    NetListenComm* l = nullptr;
    if (net->listen(0, &h, &l) != ncclSuccess) return 4;
    {
      std::ofstream f(dir + "/handle.tmp", std::ios::binary);
      f.write(reinterpret_cast<char*>(&h), sizeof(h));
    }
    rename((dir + "/handle.tmp").c_str(), (dir + "/handle").c_str());
    NetRecvComm* r = nullptr;
    auto t0 = Clock::now();
    while (!r && since(t0) < 30)
      if (net->accept(l, &r) != ncclSuccess) return 5;
    if (!r) return 5;
    // Every receive is posted up front, each into its own buffer: the receiver's clear-to-send for
    // message 2 then reaches the client ahead of the acknowledgements of message 1 (one ordered
    // stream), so when the client cuts the link after message 1 its next send is certain to be
    // posted as a work request, whose retry budget then ends it. (Posted one at a time, a slow
    // server could see the cut before announcing message 2: the client would then wait for that
    // clear-to-send with no request on the wire to fail, and this test with it.)
    std::vector<std::vector<char>> bufs(messages, std::vector<char>(bytes));
    std::vector<NetMemHandle*> mhs(messages, nullptr);
    std::vector<NetRequest*> reqs(messages, nullptr);
    for (int i = 0; i < messages; i++) {
      if (net->regMr(r, bufs[i].data(), bytes, kNetPtrHost, &mhs[i]) != ncclSuccess) return 6;
      void* d[1] = {bufs[i].data()};
      size_t sz[1] = {bytes};
      int tg[1] = {i};
      if (net->irecv(r, 1, d, sz, tg, &mhs[i], &reqs[i]) != ncclSuccess || !reqs[i]) return 7;
    }
    for (int i = 0; i < messages; i++) {
      auto t = Clock::now();
      int done = 0;
      size_t got[1] = {0};
      ncclResult_t res = ncclSuccess;
      while (!done && res == ncclSuccess && since(t) < 60) res = net->test(reqs[i], &done, got);
      size_t bad = 0;
      for (size_t k = 0; k < bytes && done; k++) bad += bufs[i][k] != pattern(k, i);
      printf("server: message %d: result %d, %zu bytes, %zu wrong (%.2f s)\n", i, res, got[0], bad, since(t));
      if (!done || got[0] != bytes || bad) return 8;
    }
    return 0;
  }
  if (!waitFile(dir + "/handle", 30)) return 4;
  {
    std::ifstream f(dir + "/handle", std::ios::binary);
    f.read(reinterpret_cast<char*>(&h), sizeof(h));
  }
  NetSendComm* s = nullptr;
  auto t0 = Clock::now();
  while (!s && since(t0) < 30)
    if (net->connect(0, NetCommConfig{}, h, &s) != ncclSuccess) return 5;
  if (!s) return 5;
  NetMemHandle* mh = nullptr;
  if (net->regMr(s, buf.data(), bytes, kNetPtrHost, &mh) != ncclSuccess) return 6;
  for (int i = 0; i < messages; i++) {
    bool expectFailure = cut && i == 2;
    if (expectFailure) {
      FILE* f = fopen((dir + "/ready-to-cut").c_str(), "w");
      if (f) fclose(f);
      if (!waitFile(dir + "/cut-done", 30)) return 9;
    }
    for (size_t k = 0; k < bytes; k++) buf[k] = pattern(k, i);
    NetRequest* q = nullptr;
    auto t = Clock::now();
    ncclResult_t res = ncclSuccess;
    while (!q && res == ncclSuccess && since(t) < 30) res = net->isend(s, buf.data(), bytes, i, mh, &q);
    int done = 0;
    while (q && !done && res == ncclSuccess && since(t) < 30) res = net->test(q, &done, nullptr);
    printf("client: message %d: result %d, done %d (%.2f s)%s%s\n", i, res, done, since(t),
           res != ncclSuccess ? "; last error: " : "", res != ncclSuccess ? ncclGetLastError(nullptr) : "");
    if (expectFailure) return res == ncclRemoteError && since(t) < 20 ? 0 : 10;
    if (res != ncclSuccess || !done) return 11;
  }
  return 0;
}
