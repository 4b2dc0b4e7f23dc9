// Simulated ranks for the CUDA Prims tests on the CPU SIMT harness: every ordered pair of ranks
// gets a connection (FIFO memory + the sender's and the receiver's PrimsConn ends, each with its
// own step), and a launch runs one 64-thread block per rank. The closed-form inputs and sums the
// tests compare against live here too.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/cuda/cuda_prims.h"
#include "device/cuda/prims_conn.h"
#include "device/simt/simt.h"

namespace accl::primstest {

// The memory of one connection (sender -> receiver) and its two ends.
struct TestConnection {
  static constexpr size_t kSimpleSlotBytes = 1024;  // 256 floats per step
  static constexpr size_t kLLSlotWords = 128;       // 512 data bytes: 128 floats
  static constexpr size_t kLL128SlotLines = 8;      // 960 data bytes: 240 floats (unless told)

  explicit TestConnection(size_t ll128SlotLines = kLL128SlotLines)
      : simple(kSimpleSlotBytes * kFifoSteps / sizeof(simt::Vec16)),
        ll(kLLSlotWords * kFifoSteps),
        ll128(ll128SlotLines * simt::kLL128LineWords * kFifoSteps + simt::kLL128LineWords) {
    PrimsConn c;
    c.tail = &tail;
    c.head = &head;
    c.simple = reinterpret_cast<char*>(simple.data());
    c.ll = ll.data();
    // On absolute 128-byte boundaries, as the FIFO layout puts them: a line is written whole only
    // inside one aligned segment (the weak-memory mode tears lines that straddle two).
    c.ll128 = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(ll128.data()) + 127) / 128 * 128);
    c.simpleSlotBytes = kSimpleSlotBytes;
    c.llSlotWords = kLLSlotWords;
    c.ll128SlotLines = ll128SlotLines;
    c.stepInfo = stepInfo;
    senderEnd = receiverEnd = c;
  }

  alignas(64) uint64_t tail = 0;  // receiver's memory
  alignas(64) uint64_t head = 0;  // sender's memory
  uint32_t stepInfo[kFifoSteps] = {};  // receiver's memory: fifoStepInfo of each slot (sender writes)
  std::vector<simt::Vec16> simple;
  std::vector<uint64_t> ll;
  std::vector<uint64_t> ll128;  // one line longer than the slots: room to align them
  PrimsConn senderEnd;
  PrimsConn receiverEnd;
};

class TestNet {
 public:
  // ll128SlotLines: LL128 lines per slot (a multiple of kLL128LinesPerWarp).
  explicit TestNet(int nranks, size_t ll128SlotLines = TestConnection::kLL128SlotLines) : n_(nranks) {
    for (int i = 0; i < n_ * n_; ++i) conns_.push_back(std::make_unique<TestConnection>(ll128SlotLines));
  }
  int nranks() const { return n_; }
  // The end of connection from -> to that `from` sends on / that `to` receives on.
  PrimsConn* sendEnd(int from, int to) { return &conns_[from * n_ + to]->senderEnd; }
  PrimsConn* recvEnd(int to, int from) { return &conns_[from * n_ + to]->receiverEnd; }

  // "" when both ends of every connection agree on the steps taken and the counters match.
  std::string checkSteps() const {
    for (int i = 0; i < n_ * n_; ++i) {
      const TestConnection& c = *conns_[i];
      if (c.senderEnd.step != c.receiverEnd.step || c.tail != c.senderEnd.step || c.head != c.receiverEnd.step)
        return "connection " + std::to_string(i / n_) + "->" + std::to_string(i % n_) + ": ends disagree (send step " +
               std::to_string(c.senderEnd.step) + ", recv step " + std::to_string(c.receiverEnd.step) + ")";
    }
    return "";
  }

  // Rank r's Prims arguments on the ring r-1 -> r -> r+1 (no peers when it is alone), moving
  // `input` into `output` with `proto`.
  CudaPrimsArgs ringArgs(int r, const void* input, void* output, ProtoId proto) {
    CudaPrimsArgs args;
    if (n_ > 1) {
      args.recv[0] = recvEnd(r, (r + n_ - 1) % n_);
      args.send[0] = sendEnd(r, (r + 1) % n_);
      args.nRecv = args.nSend = 1;
    }
    args.input = input;
    args.output = output;
    args.proto = proto;
    return args;
  }

  // Runs body() on one block per rank (simt::blockIndex() is the rank; 64 threads unless told:
  // one data warp and one peer warp); "" or the harness's error.
  std::string launch(const std::function<void()>& body, int blockDim = 64) const {
    simt::cpu::LaunchConfig cfg;
    cfg.gridDim = n_;
    cfg.blockDim = blockDim;
    cfg.deadline = std::chrono::milliseconds(60000);
    simt::cpu::LaunchResult r = simt::cpu::launch(cfg, body);
    return r.ok ? "" : "launch: " + r.error;
  }

 private:
  int n_;
  std::vector<std::unique_ptr<TestConnection>> conns_;
};

// Rank r contributes (r + 1) * ((i % 13) + 1) at element i; the sum over n ranks is
// n (n + 1) / 2 * ((i % 13) + 1), exact in every type the tests use.
template <class T>
T contribution(int rank, size_t i) {
  return T((rank + 1) * int((i % 13) + 1));
}
template <class T>
T closedFormSum(int nranks, size_t i) {
  return T(nranks * (nranks + 1) / 2 * int((i % 13) + 1));
}

inline const char* protoName(ProtoId p) { return p == kProtoLL ? "LL" : p == kProtoLL128 ? "LL128" : "Simple"; }

}  // namespace accl::primstest
