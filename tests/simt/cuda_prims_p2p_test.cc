// Point-to-point batches on the CUDA Prims (src/device/cuda/p2p_batch.h) on the CPU SIMT harness:
// sends and receives of one block on separate warp groups, so patterns that deadlock when one
// group runs them in turn complete — a rank receiving from B before sending to B while B does the
// same, an all-to-all with a self transfer and empty transfers — for every protocol, with more
// steps than FIFO slots.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "device/cuda/p2p_batch.h"
#include "prims_test_net.h"

namespace accl {
namespace {

using primstest::protoName;
using primstest::TestNet;

uint8_t pattern(int from, int to, size_t i) { return uint8_t(from * 31 + to * 7 + i * 13 + 1); }

// One rank's batch entry: send to / receive from `peer` `count` bytes.
struct Xfer {
  bool isSend;
  int peer;
  size_t count;
};

// Runs batch[r] on rank r's block; sendbufs hold pattern(r, peer, i), receives land in their own
// buffers, which are then checked. "" or what went wrong.
std::string runBatches(const std::vector<std::vector<Xfer>>& batch, ProtoId proto, int blockDim) {
  const int n = int(batch.size());
  TestNet net(n);
  const size_t chunk = primsChunkCapacity(*net.sendEnd(0, 0), proto, 1);
  const size_t guard = 3;
  std::vector<std::vector<std::vector<uint8_t>>> bufs(n);  // [rank][item]
  for (int r = 0; r < n; ++r)
    for (const Xfer& x : batch[r]) {
      std::vector<uint8_t> b(x.count + guard, 0xee);
      if (x.isSend)
        for (size_t i = 0; i < x.count; ++i) b[i] = pattern(r, x.peer, i);
      bufs[r].push_back(std::move(b));
    }
  uint32_t failed = 0;
  std::string err = net.launch(
      [&] {
        const int r = simt::blockIndex();
        auto get = [&](int i) {
          const Xfer& x = batch[r][i];
          CudaP2pTransfer t;
          t.isSend = x.isSend;
          t.conn = x.isSend ? net.sendEnd(r, x.peer) : net.recvEnd(r, x.peer);
          if (x.isSend) t.sendbuff = bufs[r][i].data();
          else t.recvbuff = bufs[r][i].data();
          t.count = x.count;
          t.chunkElems = chunk;
          t.proto = proto;
          return t;
        };
        if (!cudaP2pBatch<uint8_t>(int(batch[r].size()), get, nullptr)) simt::atomicAdd32(&failed, 1);
      },
      blockDim);
  if (!err.empty()) return err;
  if (failed) return "a block reported an abort";
  for (int r = 0; r < n; ++r)
    for (size_t k = 0; k < batch[r].size(); ++k) {
      const Xfer& x = batch[r][k];
      if (x.isSend) continue;
      const std::vector<uint8_t>& b = bufs[r][k];
      for (size_t i = 0; i < x.count; ++i)
        if (b[i] != pattern(x.peer, r, i))
          return "rank " + std::to_string(r) + " from " + std::to_string(x.peer) + ": byte " + std::to_string(i) +
                 " = " + std::to_string(b[i]) + ", expected " + std::to_string(pattern(x.peer, r, i));
      for (size_t i = x.count; i < b.size(); ++i)
        if (b[i] != 0xee) return "rank " + std::to_string(r) + " guard byte overwritten";
    }
  return net.checkSteps();
}

class CudaPrimsP2p : public ::testing::TestWithParam<ProtoId> {};

// Rank A receives from B before sending to B, and B does the same: one group running the batch
// in turn would wait for data in both blocks forever. 21 steps (more than kFifoSteps) at 64
// threads (a warp per group) and at 256 (four warps per group: peer warp + three data warps).
TEST_P(CudaPrimsP2p, ReceiveBeforeSendBothWays) {
  const ProtoId proto = GetParam();
  const size_t chunk = primsChunkCapacity(*TestNet(1).sendEnd(0, 0), proto, 1);
  const size_t count = chunk * 20 + 17;
  const std::vector<std::vector<Xfer>> batch = {{{false, 1, count}, {true, 1, count}},
                                                {{false, 0, count}, {true, 0, count}}};
  EXPECT_EQ(runBatches(batch, proto, 64), "");
  EXPECT_EQ(runBatches(batch, proto, 256), "");
  // Unequal sizes in the two directions, one of them empty.
  EXPECT_EQ(runBatches({{{false, 1, 0}, {true, 1, count}}, {{false, 0, count}, {true, 0, 0}}}, proto, 64), "");
}

// Every rank sends to and receives from every rank (itself included), receives listed first on
// odd ranks and sends first on even ones, with sizes 0, 1, odd and multi-chunk.
TEST_P(CudaPrimsP2p, AllToAllWithSelfAndEmptyTransfers) {
  const ProtoId proto = GetParam();
  const int n = 3;
  auto size = [](int from, int to) { return size_t((from * 3 + to * 5) % 7) * 389 % 2500; };
  std::vector<std::vector<Xfer>> batch(n);
  for (int r = 0; r < n; ++r) {
    std::vector<Xfer> sends, recvs;
    for (int q = 0; q < n; ++q) {
      sends.push_back({true, q, size(r, q)});
      recvs.push_back({false, q, size(q, r)});
    }
    const std::vector<Xfer>& first = r % 2 ? recvs : sends;
    const std::vector<Xfer>& second = r % 2 ? sends : recvs;
    batch[r] = first;
    batch[r].insert(batch[r].end(), second.begin(), second.end());
  }
  EXPECT_EQ(runBatches(batch, proto, 128), "");
}

// A block of one warp cannot split: sends and receives share it, in batch order (fine when the
// batch lists each rank's send to a peer before its receive from it).
TEST_P(CudaPrimsP2p, OneWarpBlockRunsTheBatchInOrder) {
  const ProtoId proto = GetParam();
  const std::vector<std::vector<Xfer>> batch = {{{true, 1, 3001}, {false, 1, 2999}},
                                                {{true, 0, 2999}, {false, 0, 3001}}};
  EXPECT_EQ(runBatches(batch, proto, 32), "");
}

INSTANTIATE_TEST_SUITE_P(AllProtocols, CudaPrimsP2p, ::testing::Values(kProtoSimple, kProtoLL, kProtoLL128),
                         [](const ::testing::TestParamInfo<ProtoId>& info) {
                           return std::string(protoName(info.param));
                         });

}  // namespace
}  // namespace accl
