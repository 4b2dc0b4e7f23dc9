// Point-to-point batches on the CUDA Prims (src/device/cuda/p2p_batch.h) on the CPU SIMT harness:
// a block's transfers on their own warp groups (sends apart from receives, several peers at once),
// or in rounds on one warp, so patterns that deadlock when one group runs them one after the other
// complete — a rank receiving from B before sending to B while B does the same, rings of 2 and 3
// ranks receiving first, an all-to-all of 4 ranks with and without self transfers (more transfers
// than groups), two sends to one peer — for every protocol, with counts 0, 1, odd and more steps
// than FIFO slots, at 32 to 512 threads per block.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "device/cuda/p2p_batch.h"
#include "prims_test_net.h"

namespace accl {
namespace {

using primstest::protoName;
using primstest::TestNet;

uint8_t pattern(int from, int to, size_t i, int tag = 0) { return uint8_t(from * 31 + to * 7 + i * 13 + 1 + tag * 57); }

// One rank's batch entry: send to / receive from `peer` `count` bytes.
struct Xfer {
  bool isSend;
  int peer;
  size_t count;
  int tag = 0;  // tells apart the transfers of one pair of ranks (the data carries it)
};

// Runs batch[r] on rank r's block; sendbufs hold pattern(r, peer, i), receives land in their own
// buffers, which are then checked. "" or what went wrong. `around(r, after)`, when given, runs in
// every thread of rank r's block before (after = false) and after the batch.
std::string runBatches(const std::vector<std::vector<Xfer>>& batch, ProtoId proto, int blockDim,
                       const std::function<void(int, bool)>& around = nullptr) {
  const int n = int(batch.size());
  TestNet net(n);
  const size_t chunk = primsChunkCapacity(*net.sendEnd(0, 0), proto, 1);
  const size_t guard = 3;
  std::vector<std::vector<std::vector<uint8_t>>> bufs(n);  // [rank][item]
  for (int r = 0; r < n; ++r)
    for (const Xfer& x : batch[r]) {
      std::vector<uint8_t> b(x.count + guard, 0xee);
      if (x.isSend)
        for (size_t i = 0; i < x.count; ++i) b[i] = pattern(r, x.peer, i, x.tag);
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
        if (around) around(r, false);
        if (!cudaP2pBatch<uint8_t>(int(batch[r].size()), get, nullptr)) simt::atomicAdd32(&failed, 1);
        if (around) around(r, true);
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
        if (b[i] != pattern(x.peer, r, i, x.tag))
          return "rank " + std::to_string(r) + " from " + std::to_string(x.peer) + ": byte " + std::to_string(i) +
                 " = " + std::to_string(b[i]) + ", expected " + std::to_string(pattern(x.peer, r, i, x.tag));
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

// A block of one warp cannot split: sends and receives share it, in rounds.
TEST_P(CudaPrimsP2p, OneWarpBlockRunsTheBatchInOrder) {
  const ProtoId proto = GetParam();
  const std::vector<std::vector<Xfer>> batch = {{{true, 1, 3001}, {false, 1, 2999}},
                                                {{true, 0, 2999}, {false, 0, 3001}}};
  EXPECT_EQ(runBatches(batch, proto, 32), "");
}

// Batch shapes at every block size: a suite of its own, as the weak-memory run (the
// CudaPrimsP2p suite) would take minutes over them.
class CudaP2pBatchShapes : public ::testing::TestWithParam<ProtoId> {};

// Each rank of a ring receives from the previous rank (listed first) and sends to the next; both
// transfers need more FIFO steps than the FIFO holds, so a block that ran its receive before its
// send would wait on itself. Counts 0, 1, odd (a partial last step) and multi-chunk; one warp
// (rounds), two and three (a one-warp group each) and sixteen (eight warps a group: two ranks and
// the longest count only, which keeps the test within its time limit under TSan).
TEST_P(CudaP2pBatchShapes, RingReceiveFirstLongerThanTheFifo) {
  const ProtoId proto = GetParam();
  const size_t chunk = primsChunkCapacity(*TestNet(1).sendEnd(0, 0), proto, 1);
  for (int n : {2, 3})
    for (size_t count : {size_t(0), size_t(1), size_t(2 * chunk + 1), chunk * (kFifoSteps + 3) + 5})
      for (int blockDim : {32, 64, 96, 512}) {
        if (blockDim == 512 && (n != 2 || count <= 2 * chunk + 1)) continue;
        SCOPED_TRACE(std::to_string(n) + " ranks, " + std::to_string(count) + " bytes, " + std::to_string(blockDim) +
                     " threads");
        std::vector<std::vector<Xfer>> batch(n);
        for (int r = 0; r < n; ++r) batch[r] = {{false, (r + n - 1) % n, count}, {true, (r + 1) % n, count}};
        EXPECT_EQ(runBatches(batch, proto, blockDim), "");
      }
}

// An all-to-all of 4 ranks, every receive listed before every send and in the reverse peer
// order on odd ranks, each transfer longer than the FIFO: without self transfers (6 per rank),
// and with them (8: more than a block has groups, so some groups take two in rounds); one warp
// (rounds), three (groups of two transfers) and eight (a group per transfer without self).
TEST_P(CudaP2pBatchShapes, AllToAllOfFourReceivesFirst) {
  const ProtoId proto = GetParam();
  const int n = 4;
  const size_t chunk = primsChunkCapacity(*TestNet(1).sendEnd(0, 0), proto, 1);
  auto size = [&](int from, int to) { return chunk * (kFifoSteps + 1 + (from + 2 * to) % 3) + size_t(from * 4 + to); };
  for (bool self : {false, true})
    for (int blockDim : {32, 96, 256}) {
      SCOPED_TRACE(std::string(self ? "with" : "without") + " self transfers, " + std::to_string(blockDim) + " threads");
      std::vector<std::vector<Xfer>> batch(n);
      for (int r = 0; r < n; ++r) {
        for (int k = 0; k < n; ++k) {
          const int q = r % 2 ? n - 1 - k : k;
          if (q != r || self) batch[r].push_back({false, q, size(q, r)});
        }
        for (int q = 0; q < n; ++q)
          if (q != r || self) batch[r].push_back({true, q, size(r, q)});
      }
      EXPECT_EQ(runBatches(batch, proto, blockDim), "");
    }
}

// Two sends to one peer in one batch share its connection: they stay on one group, in batch
// order, and the peer's two receives (listed first) get them in that order.
TEST_P(CudaPrimsP2p, TwoTransfersOnOneConnection) {
  const ProtoId proto = GetParam();
  const size_t chunk = primsChunkCapacity(*TestNet(1).sendEnd(0, 0), proto, 1);
  const size_t a = chunk * (kFifoSteps + 2) + 3, b = chunk + 7;
  const std::vector<std::vector<Xfer>> batch = {
      {{false, 1, b, 1}, {false, 1, a, 2}, {true, 1, a, 3}, {true, 1, b, 4}},
      {{false, 0, a, 3}, {false, 0, b, 4}, {true, 0, b, 1}, {true, 0, a, 2}}};
  for (int blockDim : {32, 64, 96, 512}) {
    SCOPED_TRACE(std::to_string(blockDim) + " threads");
    EXPECT_EQ(runBatches(batch, proto, blockDim), "");
  }
}

// A slow peer holds up only its own transfer: rank 1 starts its batch only once rank 2 has
// received all of rank 0's data, more than the FIFO holds, so rank 0's send to 1 stalls with a
// full FIFO while its send to 2 must go on. A block that ran the two sends in lock step would
// wait for ever (the launch's deadline); blocks of two or more warps give each send its group.
TEST_P(CudaPrimsP2p, SlowPeerHoldsUpOnlyItsOwnTransfer) {
  const ProtoId proto = GetParam();
  const size_t count = primsChunkCapacity(*TestNet(1).sendEnd(0, 0), proto, 1) * (kFifoSteps + 3) + 1;
  const std::vector<std::vector<Xfer>> batch = {{{true, 1, count}, {true, 2, count}}, {{false, 0, count}},
                                                {{false, 0, count}}};
  for (int blockDim : {64, 96, 512}) {
    SCOPED_TRACE(std::to_string(blockDim) + " threads");
    uint64_t rank2Done = 0;
    auto around = [&](int r, bool after) {
      if (r == 1 && !after) {  // one thread waits, the others at the barrier
        if (simt::threadIndex() == 0) simt::spinUntil([&] { return simt::loadAcquire(&rank2Done) != 0; }, nullptr);
        simt::syncBlock();
      }
      if (r == 2 && after && simt::threadIndex() == 0) simt::storeRelease(&rank2Done, 1);
    };
    EXPECT_EQ(runBatches(batch, proto, blockDim, around), "");
  }
}

INSTANTIATE_TEST_SUITE_P(AllProtocols, CudaP2pBatchShapes, ::testing::Values(kProtoSimple, kProtoLL, kProtoLL128),
                         [](const ::testing::TestParamInfo<ProtoId>& info) {
                           return std::string(protoName(info.param));
                         });
INSTANTIATE_TEST_SUITE_P(AllProtocols, CudaPrimsP2p, ::testing::Values(kProtoSimple, kProtoLL, kProtoLL128),
                         [](const ::testing::TestParamInfo<ProtoId>& info) {
                           return std::string(protoName(info.param));
                         });

}  // namespace
}  // namespace accl
