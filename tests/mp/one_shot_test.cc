// The host one-shot all-reduce (backend/host/host_one_shot.h) through the public API, label mp:
// NCCL_ALGO=OneShot pins it, so every call exchanges whole vectors — as LL steps up to 64 B,
// Simple ones beyond — and reduces them in rank order, straight into the output (a rank's own
// vector is read from the send buffer unless a preOp or an overlapping output needs a copy).
// Calls outside a group take the lone-collective path (core/engine/lone_coll.h) once connected;
// the same calls inside a group take the general one, and both must give the same exact sums. Sizes straddle the LL limit for every
// element size and end on partial LL words (1- and 2-byte types, odd counts); the smallest
// NCCL_LL_BUFFSIZE (32 B of payload per LL slot) makes a vector at the limit fill every slot of
// the FIFO, and each call after the first reuses them. Results are exact integers compared in
// closed form, in place and out of place, and the bytes after each vector must stay untouched.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

// Sets environment variables for the test's lifetime (read at communicator init).
class EnvScope {
 public:
  EnvScope(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      if (value)
        setenv(name, value, 1);
      else
        unsetenv(name);
    }
  }
  ~EnvScope() {
    for (const auto& [name, old] : saved_) old ? (void)setenv(name.c_str(), old->c_str(), 1) : (void)unsetenv(name.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// Element counts: LL words are 4 bytes, the LL limit is 64 bytes per rank: 7-9 (double), 15-17
// (float), 31-33 (half) and 63-65 (int8) straddle it; the larger ones straddle the old limit of
// 256 bytes and cross several Simple slots.
const std::vector<size_t> kCounts = {1,   3,   7,   8,   9,   15,  16,   17,   31,  32,
                                     33,  63,  64,  65,  127, 128, 129, 255, 256, 257, 1025, 4097, 9001};

// Rank r's element i: a small integer, so every sum is exact in every type used.
int inputValue(int rank, size_t i) { return static_cast<int>((rank * 7 + i * 3) % 5); }

// IEEE half bits of a whole number in [0, 2048] (exact): 2-byte elements, half an LL word.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(int k) {
    if (k == 0) return;
    int e = 0;
    while ((2 << e) <= k) ++e;
    bits = static_cast<uint16_t>(((e + 15) << 10) | ((k << (10 - e)) & 0x3FF));
  }
  bool operator!=(const Half& o) const { return bits != o.bits; }
  bool operator==(const Half& o) const { return bits == o.bits; }
};

// One all-reduce, alone or as the only call of a group.
ncclResult_t allReduce(const void* in, void* out, size_t count, ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                       bool grouped) {
  if (!grouped) return ncclAllReduce(in, out, count, type, op, comm, nullptr);
  ncclResult_t res = ncclGroupStart();
  if (res == ncclSuccess) res = ncclAllReduce(in, out, count, type, op, comm, nullptr);
  ncclResult_t end = ncclGroupEnd();
  return res != ncclSuccess ? res : end;
}

template <class T>
void runSums(RankContext& ctx, ncclComm_t comm, ncclDataType_t type, bool inPlace) {
  const T kGuard = static_cast<T>(99);
  for (size_t count : kCounts) {
    std::vector<T> send(count + 1, kGuard), recv(count + 1, kGuard);
    for (size_t i = 0; i < count; ++i) send[i] = static_cast<T>(inputValue(ctx.rank, i));
    T* out = inPlace ? send.data() : recv.data();
    const bool grouped = count % 2 == 0;  // even counts through a group, odd ones alone
    if (!RANK_NCCL_OK(ctx, allReduce(send.data(), out, count, type, ncclSum, comm, grouped))) return;
    size_t wrong = 0, first = count;
    for (size_t i = 0; i < count; ++i) {
      int want = 0;
      for (int r = 0; r < ctx.nranks; ++r) want += inputValue(r, i);
      if (out[i] != static_cast<T>(want) && wrong++ == 0) first = i;
    }
    ctx.check(wrong == 0, "type %d count %zu %s: %zu wrong elements, the first at %zu", static_cast<int>(type),
              count, inPlace ? "in place" : "out of place", wrong, first);
    ctx.check(out[count] == kGuard, "type %d count %zu: the element after the vector was written",
              static_cast<int>(type), count);
  }
}

// A PreMulSum whose scalar differs per rank (rank r multiplies its own vector by r + 1 before
// it is sent: the one case where a rank's contribution is a copy) and an average, in place and
// out of place, alone and in a group. Floats holding small whole numbers: every result is exact.
void runScaledSums(RankContext& ctx, ncclComm_t comm, bool inPlace) {
  const float scalar = static_cast<float>(ctx.rank + 1);
  ncclRedOp_t preMul;
  if (!RANK_NCCL_OK(ctx, ncclRedOpCreatePreMulSum(&preMul, const_cast<float*>(&scalar), ncclFloat,
                                                  ncclScalarHostImmediate, comm)))
    return;
  for (size_t count : {size_t{1}, size_t{16}, size_t{17}, size_t{300}}) {
    for (ncclRedOp_t op : {preMul, ncclAvg}) {
      for (bool grouped : {false, true}) {
        std::vector<float> send(count + 1, 99.0f), recv(count + 1, 99.0f);
        for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>(inputValue(ctx.rank, i) * ctx.nranks);
        float* out = inPlace ? send.data() : recv.data();
        if (!RANK_NCCL_OK(ctx, allReduce(send.data(), out, count, ncclFloat, op, comm, grouped))) return;
        size_t wrong = 0;
        for (size_t i = 0; i < count; ++i) {
          float want = 0;
          for (int r = 0; r < ctx.nranks; ++r)
            want += static_cast<float>(inputValue(r, i) * ctx.nranks) * (op == ncclAvg ? 1.0f : r + 1.0f);
          if (op == ncclAvg) want /= static_cast<float>(ctx.nranks);
          wrong += out[i] != want;
        }
        ctx.check(wrong == 0 && out[count] == 99.0f, "%s count %zu %s %s: %zu wrong elements",
                  op == ncclAvg ? "avg" : "premulsum", count, inPlace ? "in place" : "out of place",
                  grouped ? "in a group" : "alone", wrong);
      }
    }
  }
  RANK_NCCL_OK(ctx, ncclRedOpDestroy(preMul, comm));
}

class OneShotTest : public testing::TestWithParam<std::tuple<LaunchMode, int, bool>> {};

TEST_P(OneShotTest, SumsAcrossTheLLLimit) {
  const auto [mode, nranks, smallLLSlots] = GetParam();
  EnvScope env({{"NCCL_ALGO", "OneShot"}, {"NCCL_PROTO", nullptr},
                {"NCCL_LL_BUFFSIZE", smallLLSlots ? "512" : nullptr}});
  LaunchOptions opts;
  opts.mode = mode;
  opts.nranks = nranks;
  opts.ids = makeUniqueIds(1);
  opts.deadline = mpDeadline(nranks);
  LaunchResult res = launchRanks(opts, [](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    if (!initComm(ctx, &comm)) return;
    for (bool inPlace : {false, true}) {
      runSums<int8_t>(ctx, comm, ncclInt8, inPlace);
      runSums<Half>(ctx, comm, ncclFloat16, inPlace);  // 2-byte elements: half an LL word
      runSums<float>(ctx, comm, ncclFloat, inPlace);
      runSums<double>(ctx, comm, ncclFloat64, inPlace);
      runScaledSums(ctx, comm, inPlace);
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

// Two ranks, one of them late to every call: the other's exchange (host_one_shot.cc) publishes
// its vector, spins, and hands the receive to the general loop, which yields and sleeps until the
// late rank's vector lands. LL (16 B) and one-step Simple (4 KiB) sizes, in place and out of place;
// exact sums.
class OneShotLatePeerTest : public testing::TestWithParam<LaunchMode> {};

TEST_P(OneShotLatePeerTest, TheWaitingRankGetsTheLateRanksVector) {
  LaunchOptions opts;
  opts.mode = GetParam();
  opts.nranks = 2;
  opts.ids = makeUniqueIds(1);
  opts.deadline = mpDeadline(2);
  LaunchResult res = launchRanks(opts, [](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    if (!initComm(ctx, &comm)) return;
    for (int round = 0; round < 6 && !ctx.failed(); ++round) {
      const size_t count = round % 2 == 0 ? 4 : 1024;
      const bool inPlace = round % 4 >= 2;
      std::vector<int32_t> send(count), recv(count, -1);
      for (size_t i = 0; i < count; ++i) send[i] = inputValue(ctx.rank, i) + round;
      if (ctx.rank == round % 2) std::this_thread::sleep_for(std::chrono::milliseconds(30));  // late
      int32_t* out = inPlace ? send.data() : recv.data();
      if (!RANK_NCCL_OK(ctx, ncclAllReduce(send.data(), out, count, ncclInt32, ncclSum, comm, nullptr))) return;
      size_t wrong = 0;
      for (size_t i = 0; i < count; ++i) wrong += out[i] != inputValue(0, i) + inputValue(1, i) + 2 * round;
      ctx.check(wrong == 0, "round %d (count %zu, %s, rank %d late): %zu wrong elements", round, count,
                inPlace ? "in place" : "out of place", round % 2, wrong);
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

INSTANTIATE_TEST_SUITE_P(, OneShotLatePeerTest, testing::Values(LaunchMode::kThreads, LaunchMode::kFork),
                         [](const testing::TestParamInfo<LaunchMode>& info) {
                           return std::string(info.param == LaunchMode::kFork ? "Fork" : "Thread");
                         });

INSTANTIATE_TEST_SUITE_P(, OneShotTest,
                         testing::Combine(testing::Values(LaunchMode::kThreads, LaunchMode::kFork),
                                          testing::Values(2, 3, 5), testing::Bool()),
                         [](const testing::TestParamInfo<std::tuple<LaunchMode, int, bool>>& info) {
                           return std::string(std::get<0>(info.param) == LaunchMode::kFork ? "Fork_" : "Thread_") +
                                  std::to_string(std::get<1>(info.param)) +
                                  (std::get<2>(info.param) ? "_SmallLLSlots" : "");
                         });

}  // namespace
}  // namespace accl::test
