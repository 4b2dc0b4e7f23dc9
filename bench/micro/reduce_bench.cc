// Micro benchmark: the host backend's reduction loops (device/common/reduce_buffers.h) per
// datatype and operator, against memcpy over the same buffers — memcpy is the physical limit
// of the host path (one read stream and one write stream; a reduction reads two).
//
// Throughput counts output bytes (count x element size) per second, for the reduction and for
// memcpy alike, so "reduce / memcpy" is the fraction of copy speed a reduction step reaches.
//   accl-micro-reduce --benchmark_filter='float/sum' --benchmark_format=json
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "device/common/dev_red_op.h"
#include "device/common/dtypes.h"
#include "device/common/reduce_buffers.h"

namespace accl {
namespace {

struct TypeCase {
  const char* name;
  ncclDataType_t type;
};
constexpr TypeCase kTypes[] = {
    {"int8", ncclInt8},       {"uint8", ncclUint8},     {"int32", ncclInt32},      {"uint32", ncclUint32},
    {"int64", ncclInt64},     {"uint64", ncclUint64},   {"half", ncclFloat16},     {"float", ncclFloat32},
    {"double", ncclFloat64},  {"bfloat16", ncclBfloat16}, {"f8e4m3", ncclFloat8e4m3}, {"f8e5m2", ncclFloat8e5m2},
};

struct OpCase {
  const char* name;
  ncclRedOp_t op;
};
constexpr OpCase kOps[] = {{"sum", ncclSum}, {"prod", ncclProd}, {"max", ncclMax}, {"min", ncclMin}, {"avg", ncclAvg}};

// Three buffers of `bytes`, touched once so that page faults stay out of the timing. Zeros are
// valid values of every type (no NaN or denormal slow paths).
struct Buffers {
  explicit Buffers(size_t bytes) : a(bytes, 0), b(bytes, 0), dst(bytes, 0) {}
  std::vector<char> a, b, dst;
};

void reportBytes(benchmark::State& state, size_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

void BM_Memcpy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  Buffers buf(bytes);
  for (auto _ : state) {
    std::memcpy(buf.dst.data(), buf.a.data(), bytes);
    benchmark::DoNotOptimize(buf.dst.data());
    benchmark::ClobberMemory();
  }
  reportBytes(state, bytes);
}

// dst = a op b, the step every rank of a ring all-reduce runs on each chunk it receives (avg:
// with the preOp of the local input, kPreOpB, as the first rank applies it).
void BM_Reduce(benchmark::State& state, ncclDataType_t type, ncclRedOp_t redOp) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t count = bytes / dtypeSize(type);
  Buffers buf(bytes);
  DevRedOp op;
  if (makeDevRedOp(redOp, type, /*nRanks=*/4, &op) != ncclSuccess) {
    state.SkipWithError("makeDevRedOp failed");
    return;
  }
  const unsigned steps = redOp == ncclAvg ? kPreOpB : kReducePlain;
  for (auto _ : state) {
    if (reduceBuffers(buf.dst.data(), buf.a.data(), buf.b.data(), count, type, op, steps) != ncclSuccess) {
      state.SkipWithError("reduceBuffers failed");
      return;
    }
    benchmark::DoNotOptimize(buf.dst.data());
    benchmark::ClobberMemory();
  }
  reportBytes(state, count * dtypeSize(type));
}

// 256 KiB: the chunk a ring step moves, in cache. 32 MiB: past the last-level cache of most hosts.
// ACCL_MICRO_SMOKE=1 (the ctest smoke run) keeps the small size only: every loop still runs.
void sizes(benchmark::internal::Benchmark* b) {
  b->Arg(256 << 10);
  const char* smoke = std::getenv("ACCL_MICRO_SMOKE");
  if (!smoke || std::strcmp(smoke, "1") != 0) b->Arg(32 << 20);
}

void registerAll() {
  benchmark::RegisterBenchmark("memcpy", BM_Memcpy)->Apply(sizes);
  for (const TypeCase& t : kTypes)
    for (const OpCase& o : kOps) {
      std::string name = std::string("reduce/") + t.name + "/" + o.name;
      benchmark::RegisterBenchmark(name.c_str(), BM_Reduce, t.type, o.op)->Apply(sizes);
    }
}

}  // namespace
}  // namespace accl

int main(int argc, char** argv) {
  accl::registerAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
