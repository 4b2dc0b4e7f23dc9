// Handles and enum arguments the user passes back to the library (issue 9, problem 7):
// - ncclCommDeregister with a bogus, forged, already deregistered or another comm's handle;
// - ncclRedOpDestroy with an op that is not live on the comm (bogus, negative, built-in,
//   destroyed, another comm's);
// - out-of-range ncclDataType_t / ncclRedOp_t / ncclScalarResidence_t / ncclCommMemStat_t values
//   (read as integers before use: no enum load of an invalid value, which UBSan reports).
// Each returns ncclInvalidArgument with a message naming the call and the bad value, never a crash.
// Two communicators of one process (ncclCommInitAll); invalid calls fail before any peer is needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "nccl.h"

namespace accl::test {
namespace {

class HandleValidationTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(ncclCommInitAll(comms_, 2, nullptr), ncclSuccess) << ncclGetLastError(nullptr); }
  void TearDown() override {
    for (ncclComm_t c : comms_)
      if (c) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  }
  // Runs `call`, expects `want` and a last error containing every needle.
  void expectError(const char* what, const std::function<ncclResult_t()>& call, ncclResult_t want,
                   const std::vector<std::string>& needles) {
    ncclResult_t got = call();
    std::string msg = ncclGetLastError(nullptr);
    EXPECT_EQ(got, want) << what << ": " << ncclGetErrorString(got) << "; " << msg;
    for (const std::string& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << what << ": " << msg;
  }
  static std::string hex(const void* p) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%p", p);
    return buf;
  }
  ncclComm_t comms_[2] = {nullptr, nullptr};
  std::vector<float> buf_ = std::vector<float>(1024, 1.0f);
};

// ---- ncclCommDeregister ---------------------------------------------------------------------------

TEST_F(HandleValidationTest, DeregisterOfABogusHandleIsRejected) {
  void* bogus = reinterpret_cast<void*>(uintptr_t{0x1234});
  expectError("bogus handle", [&] { return ncclCommDeregister(comms_[0], bogus); }, ncclInvalidArgument,
              {"ncclCommDeregister", hex(bogus), "not a live registration"});
  expectError("NULL handle", [&] { return ncclCommDeregister(comms_[0], nullptr); }, ncclInvalidArgument,
              {"ncclCommDeregister", "NULL"});
}

// A block that looks like the old handle layout (magic, comm): must not be trusted or freed.
TEST_F(HandleValidationTest, DeregisterOfAForgedHandleIsRejected) {
  struct {
    uint64_t magic = 0x6163636c72656773ull;  // "acclregs"
    ncclComm_t comm;
    void* buff;
    size_t size;
  } forged;
  forged.comm = comms_[0];
  forged.buff = buf_.data();
  forged.size = 64;
  expectError("forged handle", [&] { return ncclCommDeregister(comms_[0], &forged); }, ncclInvalidArgument,
              {"ncclCommDeregister", hex(&forged), "not a live registration"});
}

TEST_F(HandleValidationTest, DeregisterTwiceIsRejectedTheSecondTime) {
  void* handle = nullptr;
  ASSERT_EQ(ncclCommRegister(comms_[0], buf_.data(), buf_.size() * sizeof(float), &handle), ncclSuccess);
  ASSERT_NE(handle, nullptr);
  EXPECT_EQ(ncclCommDeregister(comms_[0], handle), ncclSuccess) << ncclGetLastError(nullptr);
  expectError("freed handle", [&] { return ncclCommDeregister(comms_[0], handle); }, ncclInvalidArgument,
              {"ncclCommDeregister", hex(handle), "already deregistered"});
  // A new registration never reuses the freed handle, so the old one stays invalid.
  void* again = nullptr;
  ASSERT_EQ(ncclCommRegister(comms_[0], buf_.data(), 64, &again), ncclSuccess);
  EXPECT_NE(again, handle);
  expectError("freed handle after a new registration", [&] { return ncclCommDeregister(comms_[0], handle); },
              ncclInvalidArgument, {"not a live registration"});
  EXPECT_EQ(ncclCommDeregister(comms_[0], again), ncclSuccess);
}

TEST_F(HandleValidationTest, DeregisterWithAnotherCommIsRejectedAndKeepsTheHandle) {
  void* handle = nullptr;
  ASSERT_EQ(ncclCommRegister(comms_[0], buf_.data(), 256, &handle), ncclSuccess);
  expectError("other comm's handle", [&] { return ncclCommDeregister(comms_[1], handle); }, ncclInvalidArgument,
              {"ncclCommDeregister", hex(handle), "was registered with comm " + hex(comms_[0])});
  EXPECT_EQ(ncclCommDeregister(comms_[0], handle), ncclSuccess) << "the owner can still deregister it";
}

// Handles the user never deregistered go with their communicator: a later deregister with them
// (on a live comm) is rejected, not a use-after-free.
TEST_F(HandleValidationTest, HandlesOfADestroyedCommAreForgotten) {
  void* handle = nullptr;
  ASSERT_EQ(ncclCommRegister(comms_[1], buf_.data(), 256, &handle), ncclSuccess);
  ASSERT_EQ(ncclCommDestroy(comms_[1]), ncclSuccess);
  comms_[1] = nullptr;
  expectError("handle of a destroyed comm", [&] { return ncclCommDeregister(comms_[0], handle); },
              ncclInvalidArgument, {"ncclCommDeregister", "not a live registration"});
}

// ---- ncclRedOpDestroy -----------------------------------------------------------------------------

TEST_F(HandleValidationTest, RedOpDestroyValidatesTheOpAgainstTheComm) {
  expectError("never created", [&] { return ncclRedOpDestroy(static_cast<ncclRedOp_t>(ncclNumOps + 1234), comms_[0]); },
              ncclInvalidArgument, {"ncclRedOpDestroy", std::to_string(int(ncclNumOps) + 1234)});
  expectError("negative", [&] { return ncclRedOpDestroy(static_cast<ncclRedOp_t>(-1), comms_[0]); },
              ncclInvalidArgument, {"ncclRedOpDestroy", "-1"});
  expectError("built-in", [&] { return ncclRedOpDestroy(ncclSum, comms_[0]); }, ncclInvalidArgument,
              {"ncclRedOpDestroy", "built-in"});
  float scalar = 2.0f;
  ncclRedOp_t op;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, ncclScalarHostImmediate, comms_[0]), ncclSuccess);
  expectError("other comm's op", [&] { return ncclRedOpDestroy(op, comms_[1]); }, ncclInvalidArgument,
              {"ncclRedOpDestroy", std::to_string(int(op))});
  EXPECT_EQ(ncclRedOpDestroy(op, comms_[0]), ncclSuccess) << ncclGetLastError(nullptr);
  expectError("destroyed twice", [&] { return ncclRedOpDestroy(op, comms_[0]); }, ncclInvalidArgument,
              {"ncclRedOpDestroy", std::to_string(int(op))});
}

// ---- Out-of-range enum values ---------------------------------------------------------------------

// Values outside every enum's range, from just past the end to far away and negative.
const int kBadTypes[] = {int(ncclNumTypes), 99, 1 << 20, -1, INT32_MIN};
const int kBadOps[] = {-1, -1000, INT32_MIN};

TEST_F(HandleValidationTest, OutOfRangeDatatypesFailEveryCall) {
  float* b = buf_.data();
  ncclComm_t c = comms_[0];
  for (int v : kBadTypes) {
    // Cast at each call (a prvalue): a variable of enum type holding v would itself be an invalid
    // enum load in this test.
    const auto t = [v] { return static_cast<ncclDataType_t>(v); };
    const std::string value = std::to_string(v);
    SCOPED_TRACE("datatype " + value);
    expectError("AllReduce", [&] { return ncclAllReduce(b, b, 4, t(), ncclSum, c, nullptr); }, ncclInvalidArgument,
                {"ncclAllReduce", "datatype " + value});
    expectError("Reduce", [&] { return ncclReduce(b, b, 4, t(), ncclSum, 0, c, nullptr); }, ncclInvalidArgument,
                {"ncclReduce", value});
    expectError("Bcast", [&] { return ncclBcast(b, 4, t(), 0, c, nullptr); }, ncclInvalidArgument,
                {"ncclBcast", value});
    expectError("Broadcast", [&] { return ncclBroadcast(b, b, 4, t(), 0, c, nullptr); }, ncclInvalidArgument,
                {"ncclBroadcast", value});
    expectError("ReduceScatter", [&] { return ncclReduceScatter(b, b, 4, t(), ncclSum, c, nullptr); },
                ncclInvalidArgument, {"ncclReduceScatter", value});
    expectError("AllGather", [&] { return ncclAllGather(b, b, 4, t(), c, nullptr); }, ncclInvalidArgument,
                {"ncclAllGather", value});
    expectError("Send", [&] { return ncclSend(b, 4, t(), 1, c, nullptr); }, ncclInvalidArgument, {"ncclSend", value});
    expectError("Recv", [&] { return ncclRecv(b, 4, t(), 1, c, nullptr); }, ncclInvalidArgument, {"ncclRecv", value});
    expectError("AlltoAll", [&] { return ncclAlltoAll(b, b, 1, t(), c, nullptr); }, ncclInvalidArgument,
                {"ncclAlltoAll", value});
    expectError("Gather", [&] { return ncclGather(b, b, 1, t(), 0, c, nullptr); }, ncclInvalidArgument,
                {"ncclGather", value});
    expectError("Scatter", [&] { return ncclScatter(b, b, 1, t(), 0, c, nullptr); }, ncclInvalidArgument,
                {"ncclScatter", value});
    expectError("AllReduceConfig", [&] { return ncclAllReduceConfig(b, b, 4, t(), ncclSum, c, nullptr, nullptr); },
                ncclInvalidArgument, {"ncclAllReduceConfig", value});
    expectError("AllGatherConfig", [&] { return ncclAllGatherConfig(b, b, 4, t(), c, nullptr, nullptr); },
                ncclInvalidArgument, {"ncclAllGatherConfig", value});
    float scalar = 1.0f;
    ncclRedOp_t op;
    expectError("RedOpCreatePreMulSum",
                [&] { return ncclRedOpCreatePreMulSum(&op, &scalar, t(), ncclScalarHostImmediate, c); },
                ncclInvalidArgument, {"ncclRedOpCreatePreMulSum", value});
  }
}

TEST_F(HandleValidationTest, OutOfRangeOpsFailEveryReduction) {
  float* b = buf_.data();
  ncclComm_t c = comms_[0];
  for (int v : kBadOps) {
    const auto op = [v] { return static_cast<ncclRedOp_t>(v); };
    const std::string value = std::to_string(v);
    SCOPED_TRACE("op " + value);
    expectError("AllReduce", [&] { return ncclAllReduce(b, b, 4, ncclFloat, op(), c, nullptr); }, ncclInvalidArgument,
                {"ncclAllReduce", "reduction operation " + value});
    expectError("Reduce", [&] { return ncclReduce(b, b, 4, ncclFloat, op(), 0, c, nullptr); }, ncclInvalidArgument,
                {"ncclReduce", value});
    expectError("ReduceScatter", [&] { return ncclReduceScatter(b, b, 4, ncclFloat, op(), c, nullptr); },
                ncclInvalidArgument, {"ncclReduceScatter", value});
    expectError("ReduceConfig", [&] { return ncclReduceConfig(b, b, 4, ncclFloat, op(), 0, c, nullptr, nullptr); },
                ncclInvalidArgument, {"ncclReduceConfig", value});
  }
  // A non-negative op that is no live user op: in the enum's range, rejected by the registry.
  expectError("unknown user op",
              [&] { return ncclAllReduce(b, b, 4, ncclFloat, static_cast<ncclRedOp_t>(77), c, nullptr); },
              ncclInvalidArgument, {"ncclAllReduce", "77"});
}

TEST_F(HandleValidationTest, OutOfRangeResidenceAndStatAreRejected) {
  float scalar = 1.0f;
  ncclRedOp_t op;
  for (int v : {2, 7, -1}) {
    expectError("residence",
                [&] {
                  return ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, static_cast<ncclScalarResidence_t>(v),
                                                  comms_[0]);
                },
                ncclInvalidArgument, {"ncclRedOpCreatePreMulSum", "residence " + std::to_string(v)});
    uint64_t value = 0;
    expectError("stat", [&] { return ncclCommMemStats(comms_[0], static_cast<ncclCommMemStat_t>(v + 97), &value); },
                ncclInvalidArgument, {"ncclCommMemStats", std::to_string(v + 97)});
  }
}

// Inside a group a bad enum fails the call and the group (nothing of it runs half-way).
TEST_F(HandleValidationTest, OutOfRangeDatatypeInsideAGroupFailsTheGroup) {
  float* b = buf_.data();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(b, b, 4, static_cast<ncclDataType_t>(99), ncclSum, comms_[0], nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  // The comms stay usable: a group with nothing bad in it succeeds.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
}

}  // namespace
}  // namespace accl::test
