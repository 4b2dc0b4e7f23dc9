// The CUDA Prims' per-step info (FifoCounter::stepInfo, device/common/fifo.h) on the CPU SIMT
// harness: the sender's posting lane writes fifoStepInfo of each step's slot before it publishes
// tail (what the network proxy forwards), with the size the protocol wrote: Simple the payload
// bytes, LL the 16-byte lines (8 data bytes each) with kFifoStepLL, LL128 whole warp groups of
// 128-byte lines with kFifoStepLL128.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "device/common/fifo.h"
#include "device/common/red_ops.h"
#include "device/cuda/cuda_prims.h"
#include "prims_test_net.h"

namespace accl {
namespace {

using primstest::protoName;
using primstest::TestNet;

uint32_t expectedInfo(ProtoId proto, size_t n) {
  const size_t bytes = n * sizeof(float);
  if (proto == kProtoLL) return uint32_t((bytes + 7) / 8 * 16) | kFifoStepLL;
  if (proto == kProtoLL128) {
    const size_t lines = (bytes + 119) / 120;
    const size_t groups = (lines + simt::kLL128LinesPerWarp - 1) / simt::kLL128LinesPerWarp;
    return uint32_t(groups * simt::kLL128LinesPerWarp * 128) | kFifoStepLL128;
  }
  return uint32_t(bytes);
}

// Rank 0 sends one step of each count to rank 1 (at most kFifoSteps steps, so no slot's info is
// overwritten); returns "" or what went wrong.
std::string runSteps(ProtoId proto, const std::vector<size_t>& counts, int blockDim) {
  TestNet net(2);
  size_t total = 0;
  for (size_t n : counts) total += n;
  std::vector<float> in(total + 1), out(total + 1, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i % 97) + 0.5f;
  std::string err = net.launch([&] {
    const int r = simt::blockIndex();
    CudaPrimsArgs args;
    if (r == 0) args.send[0] = net.sendEnd(0, 1), args.nSend = 1;
    else args.recv[0] = net.recvEnd(1, 0), args.nRecv = 1;
    args.input = in.data();
    args.output = out.data();
    args.proto = proto;
    CudaPrims<float, RedSum<float>, 1, 1> prims(args, RedSum<float>{});
    size_t off = 0;
    for (size_t n : counts) {
      if (r == 0) prims.send(off, n);
      else prims.recv(off, n);
      off += n;
    }
  }, blockDim);
  if (!err.empty()) return err;
  const uint32_t* info = net.sendEnd(0, 1)->stepInfo;
  for (size_t s = 0; s < counts.size(); ++s)
    if (info[s] != expectedInfo(proto, counts[s]))
      return std::string(protoName(proto)) + " step " + std::to_string(s) + " (" + std::to_string(counts[s]) +
             " floats): stepInfo " + std::to_string(info[s]) + ", expected " +
             std::to_string(expectedInfo(proto, counts[s]));
  for (size_t i = 0; i < total; ++i)
    if (out[i] != in[i]) return "element " + std::to_string(i) + " not delivered";
  if (out[total] != -1.0f) return "guard element overwritten";
  return net.checkSteps();
}

TEST(CudaPrimsStepInfo, SimpleWritesPayloadBytesPerStep) {
  // Slot capacity 256 floats: 0, 1, odd, prime, full.
  for (int blockDim : {32, 64})
    EXPECT_EQ(runSteps(kProtoSimple, {1, 0, 7, 256, 131, 4, 255, 64}, blockDim), "") << "blockDim " << blockDim;
}

TEST(CudaPrimsStepInfo, LLWritesLineBytesWithLLFlag) {
  // Slot capacity 128 floats (64 lines): odd counts round up to whole 16-byte lines.
  for (int blockDim : {32, 64})
    EXPECT_EQ(runSteps(kProtoLL, {1, 2, 3, 0, 128, 127, 17, 64}, blockDim), "") << "blockDim " << blockDim;
}

TEST(CudaPrimsStepInfo, LL128WritesWholeLineGroupsWithItsOwnFlag) {
  EXPECT_EQ(runSteps(kProtoLL128, {1, 30, 31, 240, 0, 121}, 64), "");
}

}  // namespace
}  // namespace accl
