// Checks the dynamic symbol table of our libnccl.so against NVIDIA's: every nccl*/pnccl* symbol
// NVIDIA exports must be exported by ours (against the installed library when present, and always
// against the list recorded from NCCL 2.28.9), nothing else may be exported, and each nccl* entry
// point must be a weak alias sitting at the same address as its pncclX twin.
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace {

struct Symbol {
  std::string address;
  char type = '?';
};
using SymbolMap = std::map<std::string, Symbol>;

// Defined dynamic symbols of `lib` as listed by `nm -D --defined-only`; false when nm failed.
bool readExports(const std::string& lib, SymbolMap& out) {
  std::string cmd = std::string(ACCL_NM) + " -D --defined-only '" + lib + "' 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return false;
  char line[1024];
  std::string all;
  while (fgets(line, sizeof(line), pipe) != nullptr) {
    all += line;
    std::istringstream fields(line);
    std::string address, type, name;
    if (!(fields >> address >> type >> name)) continue;
    if (type.size() != 1) continue;
    // "A" entries are absolute symbols such as a version node (e.g. NCCL_2): not functions.
    if (type == "A") continue;
    out[name] = Symbol{address, type[0]};
  }
  int status = pclose(pipe);
  if (status != 0) ADD_FAILURE() << cmd << " failed:\n" << all;
  return status == 0;
}

// The nccl* symbols NCCL 2.28.9's libnccl.so.2 exports. Each also exists as pnccl*, except
// ncclResetDebugInitInternal.
const char* const kNccl2289Exports[] = {
    "ncclAllGather", "ncclAllReduce", "ncclAlltoAll", "ncclBcast", "ncclBroadcast", "ncclCommAbort",
    "ncclCommCount", "ncclCommCuDevice", "ncclCommDeregister", "ncclCommDestroy", "ncclCommFinalize",
    "ncclCommGetAsyncError", "ncclCommInitAll", "ncclCommInitRank", "ncclCommInitRankConfig",
    "ncclCommInitRankScalable", "ncclCommRegister", "ncclCommRevoke", "ncclCommShrink", "ncclCommSplit",
    "ncclCommUserRank", "ncclCommWindowDeregister", "ncclCommWindowRegister", "ncclDevCommCreate",
    "ncclDevCommDestroy", "ncclGather", "ncclGetErrorString", "ncclGetLastError", "ncclGetUniqueId",
    "ncclGetVersion", "ncclGinBarrierCreateRequirement", "ncclGroupEnd", "ncclGroupSimulateEnd",
    "ncclGroupStart", "ncclLLA2ACalcSlots", "ncclLLA2ACreateRequirement", "ncclLsaBarrierCreateRequirement",
    "ncclMemAlloc", "ncclMemFree", "ncclRecv", "ncclRedOpCreatePreMulSum", "ncclRedOpDestroy", "ncclReduce",
    "ncclReduceScatter", "ncclResetDebugInit", "ncclResetDebugInitInternal", "ncclScatter", "ncclSend",
    "ncclTeamLsa", "ncclTeamRail", "ncclTeamRankToLsa", "ncclTeamRankToWorld", "ncclTeamWorld",
};
const char kNoProfilingTwin[] = "ncclResetDebugInitInternal";

std::set<std::string> recordedExports() {
  std::set<std::string> names;
  for (const char* n : kNccl2289Exports) {
    names.insert(n);
    if (std::string(n) != kNoProfilingTwin) names.insert(std::string("p") + n);
  }
  return names;
}

bool isNcclName(const std::string& s) { return s.rfind("nccl", 0) == 0 || s.rfind("pnccl", 0) == 0; }

std::string missingFrom(const SymbolMap& ours, const std::set<std::string>& wanted) {
  std::string missing;
  for (const std::string& n : wanted)
    if (!ours.count(n)) missing += n + " ";
  return missing;
}

TEST(Exports, RecordedListIsComplete) {
  // 53 nccl* names and 52 pnccl* twins, as NVIDIA's 2.28.9 library has.
  EXPECT_EQ(sizeof(kNccl2289Exports) / sizeof(kNccl2289Exports[0]), 53u);
  EXPECT_EQ(recordedExports().size(), 105u);
}

TEST(Exports, OursCoversTheRecordedNccl2289List) {
  SymbolMap ours;
  ASSERT_TRUE(readExports(ACCL_LIB_PATH, ours));
  std::string missing = missingFrom(ours, recordedExports());
  EXPECT_TRUE(missing.empty()) << "missing from " << ACCL_LIB_PATH << ": " << missing;
}

TEST(Exports, OursCoversNvidiaLibrary) {
  std::string nvLib = ACCL_NVIDIA_LIB_PATH;
  if (nvLib.empty()) GTEST_SKIP() << "NVIDIA's libnccl.so.2 was not found at configure time; "
                                     "OursCoversTheRecordedNccl2289List checks the recorded 2.28.9 list instead";
  SymbolMap nv, ours;
  ASSERT_TRUE(readExports(nvLib, nv));
  ASSERT_TRUE(readExports(ACCL_LIB_PATH, ours));
  std::set<std::string> wanted;
  for (const auto& [name, sym] : nv)
    if (isNcclName(name)) wanted.insert(name);
  EXPECT_GE(wanted.size(), 105u);
  std::string missing = missingFrom(ours, wanted);
  EXPECT_TRUE(missing.empty()) << "exported by " << nvLib << " but not by ours: " << missing;
  // Same binding as NVIDIA: weak nccl*, strong pnccl*.
  for (const std::string& n : wanted) {
    auto it = ours.find(n);
    if (it == ours.end()) continue;
    EXPECT_EQ(it->second.type, nv[n].type) << n << ": nm type differs (NVIDIA " << nv[n].type << ", ours "
                                            << it->second.type << ")";
  }
}

TEST(Exports, OursExportsOnlyNcclNames) {
  SymbolMap ours;
  ASSERT_TRUE(readExports(ACCL_LIB_PATH, ours));
  ASSERT_FALSE(ours.empty());
  std::string stray;
  for (const auto& [name, sym] : ours)
    if (!isNcclName(name)) stray += name + "(" + sym.type + ") ";
  EXPECT_TRUE(stray.empty()) << "exported symbols outside nccl*/pnccl*: " << stray;
}

// ncclX is a weak alias of pncclX: same address, weak binding, so a profiler can interpose ncclX.
TEST(Exports, EachNcclIsAWeakAliasOfItsProfilingTwin) {
  SymbolMap ours;
  ASSERT_TRUE(readExports(ACCL_LIB_PATH, ours));
  int pairs = 0;
  for (const auto& [name, sym] : ours) {
    if (name.rfind("pnccl", 0) != 0) continue;
    std::string plain = name.substr(1);
    auto it = ours.find(plain);
    if (it == ours.end()) {
      ADD_FAILURE() << name << " is exported without " << plain;
      continue;
    }
    ++pairs;
    EXPECT_EQ(sym.type, 'T') << name << " should be a strong text symbol";
    EXPECT_EQ(it->second.type, 'W') << plain << " should be a weak symbol";
    EXPECT_EQ(it->second.address, sym.address) << plain << " and " << name << " are at different addresses";
  }
  EXPECT_GE(pairs, 52);
}

}  // namespace
