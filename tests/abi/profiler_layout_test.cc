// The profiler plugin ABI (issue 19): accl's declarations in src/profiler/profiler_abi.h against
// the facts recorded from NVIDIA's headers of the example profiler plugin (NCCL 2.30's
// plugins/profiler/example/nccl/, which 2.32 keeps): the size and every member offset of each
// descriptor of ncclProfiler_v1 ... _v6, the state arguments, the function tables, and the event
// type and state values (data/profiler-layout-lp64.txt, 338 facts); and the same for v7 with the
// state values NCCL added after v5, worked out by hand from NCCL 2.31's public profiler_v7.h
// (data/profiler-layout-v7-lp64.txt, 97 facts). With
// -DACCL_NVIDIA_PROFILER_INCLUDE_DIR=<folder holding NVIDIA's err.h and profiler.h> the headers
// themselves are compiled and compared too; without it that comparison skips.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "profiler_layout.h"

namespace accl::abi {
namespace {

void readFacts(const char* file, Table* t) {
  std::ifstream in(std::string(ACCL_ABI_DATA_DIR) + "/" + file);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.rfind(" = ");
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    t->push_back({line.substr(0, eq), line.substr(eq + 3)});
  }
}

Table recordedFacts() {
  Table t;
  readFacts("profiler-layout-lp64.txt", &t);
  readFacts("profiler-layout-v7-lp64.txt", &t);
  return t;
}

void expectSame(const Table& ours, const Table& theirs, const char* what) {
  ASSERT_EQ(ours.size(), theirs.size()) << what;
  int differ = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    EXPECT_EQ(ours[i].name, theirs[i].name) << what << " row " << i;
    if (ours[i].value != theirs[i].value) {
      ++differ;
      ADD_FAILURE() << ours[i].name << ": accl " << ours[i].value << ", " << what << " " << theirs[i].value;
    }
  }
  EXPECT_EQ(differ, 0);
}

TEST(ProfilerAbi, DeclarationsMatchTheRecordedLayout) {
#if !defined(__LP64__)
  GTEST_SKIP() << "the facts are recorded for LP64";
#endif
  Table facts = recordedFacts();
  ASSERT_EQ(facts.size(), 338u + 97u) << "data/profiler-layout-lp64.txt or -v7-lp64.txt is missing or cut short";
  expectSame(acclProfilerLayout(), facts, "recorded");
}

TEST(ProfilerAbi, DeclarationsMatchNvidiaHeaders) {
  Table nvidia = nvidiaProfilerLayout();
  if (nvidia.empty()) GTEST_SKIP() << "no NVIDIA profiler headers (set ACCL_NVIDIA_PROFILER_INCLUDE_DIR)";
  Table ours = acclProfilerLayout();
  // Headers older than v7 (NCCL 2.30's) give the rows up to v6: compare those.
  if (nvidia.size() == 338u) ours.resize(338u);
  expectSame(ours, nvidia, "NVIDIA");
}

}  // namespace
}  // namespace accl::abi
