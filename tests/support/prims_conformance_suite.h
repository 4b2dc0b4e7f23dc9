// The Prims conformance suite (scenarios and expectations: prims_conformance.h) as a GoogleTest
// typed test suite over a *harness*, so that every backend's Prims runs the same checks:
//
//   INSTANTIATE_TYPED_TEST_SUITE_P(Host, PrimsConformanceTest, ::testing::Types<HostPrimsHarness>);
//
// A harness joins two Prims, A and B, by two FIFOs (A -> B, B -> A) and runs both ends of a
// scenario at once (threads, or one kernel). It provides:
//   static constexpr const char* kName;          // "host", "cuda"
//   static int connectionKinds();                // how many ways it can build the FIFOs
//   explicit Harness(int kind);                  // builds them (e.g. over transport `kind`)
//   const char* connectionName() const;
//   bool ok() const;                             // the FIFOs exist (else lastErrorText() says why)
//   size_t capacity(ProtoId, ncclDataType_t) const;  // elements per step
//   void run(int scenario, int steps, ProtoId, ncclDataType_t, const DevRedOp&,
//            const void* const in[2], void* const out[2], ncclResult_t status[2]);
// The same harness object serves every run of one test, so the FIFOs' step counters keep
// growing from one run to the next, as across the collectives of a communicator.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device/common/dev_red_op.h"
#include "device/common/fifo.h"
#include "device/common/ids.h"
#include "support/prims_conformance.h"
#include "util/last_error.h"

namespace accl::conformance {

constexpr int kConformanceSteps = 2 * kFifoSteps + 3;  // more steps than slots: senders wait for head
constexpr unsigned char kUntouched = 0xa5;             // output bytes no step may write

struct ConformanceType {
  ncclDataType_t type;
  const char* name;
};
inline constexpr ConformanceType kConformanceTypes[] = {
    {ncclFloat32, "float32"}, {ncclInt32, "int32"}, {ncclUint8, "uint8"}};
inline constexpr ProtoId kConformanceProtos[] = {kProtoSimple, kProtoLL, kProtoLL128};
inline const char* conformanceProtoName(ProtoId p) {
  return p == kProtoLL ? "LL" : p == kProtoLL128 ? "LL128" : "Simple";
}

template <class Harness>
class PrimsConformanceTest : public ::testing::Test {
 protected:
  // Every connection kind, protocol, type and op (sum, avg) for one scenario.
  void checkScenario(int scenario) {
    for (int kind = 0; kind < Harness::connectionKinds(); ++kind) {
      Harness h(kind);
      ASSERT_TRUE(h.ok()) << Harness::kName << " " << h.connectionName() << ": " << lastErrorText();
      for (ProtoId proto : kConformanceProtos)
        for (const ConformanceType& tc : kConformanceTypes)
          for (ncclRedOp_t redOp : {ncclSum, ncclAvg}) {
            SCOPED_TRACE(std::string(Harness::kName) + " " + h.connectionName() + " " + scenarioName(scenario) + " " +
                         conformanceProtoName(proto) + " " + tc.name + (redOp == ncclAvg ? " avg" : " sum"));
            runOnce(h, scenario, proto, tc.type, redOp);
            if (this->HasFatalFailure()) return;
          }
    }
  }

 private:
  void runOnce(Harness& h, int scenario, ProtoId proto, ncclDataType_t type, ncclRedOp_t redOp) {
    const size_t cap = h.capacity(proto, type);
    const size_t total = totalElems(kConformanceSteps, cap);
    const size_t esz = elemBytes(type);
    DevRedOp op;
    ASSERT_EQ(makeDevRedOp(redOp, type, 2, &op), ncclSuccess);
    const OpModel model{redOp == ncclAvg, type != ncclFloat32};
    std::vector<char> in[2], out[2];
    for (int r = 0; r < 2; ++r) {
      in[r].resize(total * esz + 1);
      for (size_t i = 0; i < total; ++i) storeElem(in[r].data(), type, i, inputOf(r, i));
      out[r].assign(2 * total * esz + 1, static_cast<char>(kUntouched));
    }
    const void* const ins[2] = {in[0].data(), in[1].data()};
    void* const outs[2] = {out[0].data(), out[1].data()};
    ncclResult_t status[2] = {ncclInternalError, ncclInternalError};
    h.run(scenario, kConformanceSteps, proto, type, op, ins, outs, status);
    ASSERT_EQ(status[0], ncclSuccess) << "end A: " << lastErrorText();
    ASSERT_EQ(status[1], ncclSuccess) << "end B: " << lastErrorText();
    for (int r = 0; r < 2; ++r) {
      const char end = r ? 'B' : 'A';
      int bad = 0;
      for (size_t i = 0; i < 2 * total && bad < 5; ++i) {
        double want = 0;
        if (expectedOutput(scenario, r, i, total, model, &want)) {
          const double got = loadElem(out[r].data(), type, i);
          if (got != want) {
            ++bad;
            ADD_FAILURE() << "end " << end << " output[" << i << "] = " << got << ", expected " << want;
          }
          continue;
        }
        for (size_t b = 0; b < esz; ++b)
          if (static_cast<unsigned char>(out[r][i * esz + b]) != kUntouched) {
            ++bad;
            ADD_FAILURE() << "end " << end << " output[" << i << "] was written; no step of the scenario writes it";
            break;
          }
      }
      EXPECT_EQ(static_cast<unsigned char>(out[r].back()), kUntouched) << "end " << end << " wrote past its output";
    }
  }
};

TYPED_TEST_SUITE_P(PrimsConformanceTest);

TYPED_TEST_P(PrimsConformanceTest, SendRecv) { this->checkScenario(kSendRecv); }
TYPED_TEST_P(PrimsConformanceTest, CopySendRecvReduceCopy) { this->checkScenario(kCopySendRecvReduceCopy); }
TYPED_TEST_P(PrimsConformanceTest, RecvReduceSend) { this->checkScenario(kRecvReduceSend); }
TYPED_TEST_P(PrimsConformanceTest, RecvReduceCopySend) { this->checkScenario(kRecvReduceCopySend); }
TYPED_TEST_P(PrimsConformanceTest, RecvCopySend) { this->checkScenario(kRecvCopySend); }

REGISTER_TYPED_TEST_SUITE_P(PrimsConformanceTest, SendRecv, CopySendRecvReduceCopy, RecvReduceSend,
                            RecvReduceCopySend, RecvCopySend);

}  // namespace accl::conformance
