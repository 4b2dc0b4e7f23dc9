// Issue 18 fault 7: a CUDA communicator is priced by the GPU model over its searched topology.
// Eight ranks of a CUDA communicator on the DGX-H100 fixture (NCCL_TOPO_FILE) must choose, for
// every collective and size, what `accl-tune table` prints for that topology and shape.
//
// Runs where the CUDA backend can start eight ranks: the virtual GPU (ctest vgpu.fault7.*, with
// ACCL_VGPU_COUNT=8) or a machine with eight GPUs; elsewhere (the unit run) it skips.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/comm/comm.h"
#include "core/engine/engine.h"
#include "nccl.h"
#include "tuner/algo_proto_filter.h"
#include "tuner/tuner.h"

#if ACCL_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace accl {
namespace {

struct Row {
  std::string algo, proto;
  int channels = 0, threads = 0;
};

// "8", "32K", "4M", "1G" (accl-tune's sizeText) -> bytes.
size_t parseSizeText(const std::string& s) {
  size_t v = std::stoull(s);
  switch (s.back()) {
    case 'K': return v << 10;
    case 'M': return v << 20;
    case 'G': return v << 30;
    default: return v;
  }
}

// accl-tune's table: per function ("# AllReduce"), rows "size algo proto ch thr ...".
std::map<std::pair<int, size_t>, Row> acclTuneTable(const std::string& cmd) {
  std::map<std::pair<int, size_t>, Row> rows;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return rows;
  char line[512];
  int func = -1;
  while (fgets(line, sizeof(line), p)) {
    std::string l = line;
    if (l.rfind("# ", 0) == 0) {
      const std::string name = l.substr(2, l.find_first_of(" \n", 2) - 2);
      for (int f = 0; f < kNumCollFuncs; ++f)
        if (name == funcName(f)) func = f;
      continue;
    }
    std::istringstream in(l);
    std::string size;
    Row r;
    if (func < 0 || !(in >> size >> r.algo >> r.proto >> r.channels >> r.threads)) continue;
    rows[{func, parseSizeText(size)}] = r;
  }
  pclose(p);
  return rows;
}

TEST(CudaTunerWiring, DgxH100CommunicatorChoosesWhatAcclTunePrints) {
  const char* backend = std::getenv("ACCL_BACKEND");
  if (!backend || std::string(backend) != "cuda") GTEST_SKIP() << "needs ACCL_BACKEND=cuda (ctest vgpu.fault7.*)";
  constexpr int kRanks = 8;
#if ACCL_HAVE_CUDA
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < kRanks)
    GTEST_SKIP() << "needs " << kRanks << " CUDA devices (ACCL_VGPU_COUNT=8 on the virtual GPU)";
#else
  GTEST_SKIP() << "a build without CUDA";
#endif
  const std::string topo = std::string(ACCL_TEST_DATA_DIR_DEFAULT) + "/dgx_h100.xml";
  ASSERT_EQ(setenv("NCCL_TOPO_FILE", topo.c_str(), 1), 0);
  setenv("NCCL_TUNER_PLUGIN", "none", 1);
  for (const char* v : {"NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_NTHREADS"})
    unsetenv(v);

  const auto table = acclTuneTable(std::string(ACCL_TEST_ACCL_TUNE) + " table --topo-file " + topo +
                                   " --ranks 8 --coll all -b 8 -e 4G -f 4 2>&1");
  ASSERT_EQ(table.size(), size_t(5 * 15)) << "accl-tune's table: 5 collectives x 15 sizes (8 B .. 4 GiB)";

  std::vector<ncclComm_t> comms(kRanks);
  ASSERT_EQ(ncclCommInitAll(comms.data(), kRanks, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  CommEngine& e = *comms[0]->engine;
  EXPECT_STREQ(e.tuner->model().name(), "nccl-gpu");
  int llAndLL128 = 0;
  for (const auto& [key, want] : table) {
    TunerChoice c;
    ASSERT_EQ(e.tuner->choose(static_cast<FuncId>(key.first), key.second, &c), ncclSuccess);
    const std::string where = std::string(funcName(key.first)) + " " + std::to_string(key.second) + " B";
    EXPECT_EQ(algoName(c.algo), want.algo) << where;
    EXPECT_EQ(protoName(c.proto), want.proto) << where;
    EXPECT_EQ(c.nChannels, want.channels) << where;
    EXPECT_EQ(c.nThreads, want.threads) << where;
    llAndLL128 += c.proto != kProtoSimple;
  }
  // The GPU model's shape, not the host's: LL or LL128 below the large sizes.
  EXPECT_GT(llAndLL128, 0);
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  unsetenv("NCCL_TOPO_FILE");
}

}  // namespace
}  // namespace accl
