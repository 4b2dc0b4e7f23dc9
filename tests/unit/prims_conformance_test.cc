// Prims conformance (tests/support/prims_conformance_suite.h) for the host Prims: two HostPrims,
// each on its own thread, joined by two FIFOs built through the real transports in this process
// (p2p and shm), run every scenario for every protocol (LL128 is carried as Simple on the host),
// three types and two ops, over the same connections throughout.
#include <gtest/gtest.h>

#include <thread>

#include "backend/host/host_prims.h"
#include "support/prims_conformance_suite.h"
#include "support/transport_ends.h"
#include "transports/transport.h"

namespace accl {
namespace {

using namespace conformance;

// Small slots, so that chunks are short and the FIFO wraps many times.
FifoLayout conformanceLayout() {
  FifoLayout l;
  l.simpleSlotBytes = 256;
  l.llSlotWords = 16;  // 64 payload bytes
  return l;
}

// The host backend: HostPrims over connections made by a transport in this process.
class HostPrimsHarness {
 public:
  static constexpr const char* kName = "host";
  static int connectionKinds() { return 2; }

  explicit HostPrimsHarness(int kind)
      : transport_(kind == 0 ? &kHostP2pTransport : &kHostShmTransport),
        layout_(conformanceLayout()),
        aToB_(*transport_, layout_, /*recvRank=*/1, /*sendRank=*/0),
        bToA_(*transport_, layout_, /*recvRank=*/0, /*sendRank=*/1) {
    ok_ = aToB_.connect() == ncclSuccess && bToA_.connect() == ncclSuccess;
    wait_.timeoutMs = 20000;  // a broken protocol fails the test instead of hanging it
    wait_.spinCount = 64;
    wait_.yieldUs = 50;
  }
  const char* connectionName() const { return transport_->name; }
  bool ok() const { return ok_; }

  size_t capacity(ProtoId proto, ncclDataType_t type) const {
    return HostPrims::chunkCapacity(layout_, proto, elemBytes(type));
  }

  void run(int scenario, int steps, ProtoId proto, ncclDataType_t type, const DevRedOp& op, const void* const in[2],
           void* const out[2], ncclResult_t status[2]) {
    const size_t cap = capacity(proto, type);
    auto end = [&](int role) {
      // A receives on B->A and sends on A->B; B the opposite.
      test::EndPair& inbound = role == 0 ? bToA_ : aToB_;
      test::EndPair& outbound = role == 0 ? aToB_ : bToA_;
      HostPrimsArgs a;
      a.recv[a.nRecv++] = HostConnEnd{&inbound.recv.end.view, 1 - role, 0};
      a.send[a.nSend++] = HostConnEnd{&outbound.send.end.view, 1 - role, 0};
      a.input = in[role];
      a.output = out[role];
      a.type = type;
      a.op = op;
      a.proto = proto;
      a.wait = &wait_;
      a.what = role == 0 ? "conformance A" : "conformance B";
      HostPrims prims(a);
      runScript(prims, scenario, role, steps, cap);
      status[role] = prims.status();
    };
    std::thread a(end, 0);
    end(1);
    a.join();
  }

 private:
  const Transport* transport_;
  FifoLayout layout_;
  test::EndPair aToB_, bToA_;
  WaitPolicy wait_;
  bool ok_ = false;
};

}  // namespace

namespace conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(Host, PrimsConformanceTest, ::testing::Types<HostPrimsHarness>);
}  // namespace conformance

namespace {

// The schedule of steps itself: zero-element steps, odd sizes, full chunks, and more steps than
// the FIFO has slots.
TEST(PrimsConformanceScript, StepPlanCoversTheAwkwardSizes) {
  const size_t cap = 16;
  bool zero = false, one = false, odd = false, full = false;
  for (int k = 0; k < kConformanceSteps; ++k) {
    const size_t n = stepElems(k, cap);
    zero |= n == 0;
    one |= n == 1;
    odd |= n == 7;
    full |= n == cap;
    EXPECT_LE(n, cap);
  }
  EXPECT_TRUE(zero && one && odd && full);
  EXPECT_GT(kConformanceSteps, kFifoSteps);
  EXPECT_EQ(totalElems(6, cap), cap + 0 + 1 + 7 + (cap - 1) + 3);
  EXPECT_EQ(stepElems(0, 1), 1u);
  EXPECT_EQ(stepElems(3, 1), 1u) << "sizes are clipped to the chunk capacity";
}

}  // namespace
}  // namespace accl
