// Compares the ABI tables of NVIDIA's nccl.h (2.32.3) and ours (with and without the CUDA headers) row by
// row, checks a few facts in closed form so the test can fail even without NVIDIA's header, and
// compares the sets of functions, macros, enumerators and type names the two header texts declare.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "abi_table.h"

namespace accl::abi {
namespace {

void expectSameTable(const Table& expected, const Table& actual, const char* expectedName, const char* actualName) {
  ASSERT_FALSE(expected.empty());
  ASSERT_EQ(expected.size(), actual.size()) << expectedName << " vs " << actualName << ": row counts differ";
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(expected[i].name, actual[i].name) << "row " << i << " names differ";
    EXPECT_EQ(expected[i].value, actual[i].value)
        << expected[i].name << ": " << expectedName << " has " << expected[i].value << ", " << actualName << " has "
        << actual[i].value;
  }
}

constexpr const char* kNoReferenceHeader =
    "NVIDIA's nccl.h 2.32.3 was not found in ACCL_NCCL_REFERENCE_DIR (run scripts/fetch-nccl-reference.sh)";

std::string lookup(const Table& t, const std::string& name) {
  for (const Entry& e : t)
    if (e.name == name) return e.value;
  ADD_FAILURE() << "no row named " << name;
  return "";
}

TEST(AbiTable, NamesAreUnique) {
  Table t = acclAbiTableNoCuda();
  std::set<std::string> names;
  for (const Entry& e : t) EXPECT_TRUE(names.insert(e.name).second) << "duplicate row " << e.name;
  EXPECT_GT(t.size(), 600u);
}

TEST(AbiTable, OursMatchesNvidiaWithCudaHeaders) {
  Table nv = nvidiaAbiTable();
  if (nv.empty()) GTEST_SKIP() << kNoReferenceHeader;
  expectSameTable(nv, acclAbiTableWithCuda(), "NVIDIA nccl.h", "accl nccl.h (CUDA headers)");
}

TEST(AbiTable, OursMatchesNvidiaWithoutCudaHeaders) {
  Table nv = nvidiaAbiTable();
  if (nv.empty()) GTEST_SKIP() << kNoReferenceHeader;
  expectSameTable(nv, acclAbiTableNoCuda(), "NVIDIA nccl.h", "accl nccl.h (ACCL_NO_CUDA_HEADERS)");
}

// Our two modes must agree with each other, including the self-declared cudaStream_t.
TEST(AbiTable, OursIsTheSameWithAndWithoutCudaHeaders) {
  if (!acclWithCudaSawCudaHeaders()) {
    std::printf("note: CUDA headers not found at configure time; both tables use the fallback\n");
  }
  expectSameTable(acclAbiTableWithCuda(), acclAbiTableNoCuda(), "accl (CUDA headers)", "accl (no CUDA)");
}

// Independent of NVIDIA's header: facts of the 2.32.3 ABI written out by hand.
TEST(AbiTable, KnownFactsOfNccl2323) {
  Table t = acclAbiTableNoCuda();
  EXPECT_EQ(lookup(t, "NCCL_VERSION_CODE"), "23203");
  EXPECT_EQ(lookup(t, "NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)"), "23203");
  EXPECT_EQ(lookup(t, "NCCL_VERSION(2, 8, 9)"), "2809");
  EXPECT_EQ(lookup(t, "NCCL_VERSION(2, 9, 0)"), "20900");
  EXPECT_EQ(lookup(t, "NCCL_VERSION(3, 8, 1)"), "30801");
  EXPECT_EQ(lookup(t, "NCCL_SUFFIX"), "\"\"");
  EXPECT_EQ(lookup(t, "NCCL_API_MAGIC"), std::to_string(0xcafebeefu));
  EXPECT_EQ(lookup(t, "NCCL_SUSPEND_MEM"), "1");
  EXPECT_EQ(lookup(t, "NCCL_WIN_CFT_COUNTED"), "8");
  EXPECT_EQ(lookup(t, "sizeof(ncclUniqueId)"), "128");
  EXPECT_EQ(lookup(t, "ncclTimeout"), "8");
  EXPECT_EQ(lookup(t, "ncclNumResults"), "9");
  EXPECT_EQ(lookup(t, "ncclHostCftDefault"), "-2147483648");
  EXPECT_EQ(lookup(t, "ncclNvlsHostModeDisable"), "2147483647");
  EXPECT_EQ(lookup(t, "ncclStatGpuMemTotal"), "3");
  EXPECT_EQ(lookup(t, "NCCL_ENCRYPTION_MODE_PSK"), "1");
  EXPECT_EQ(lookup(t, "ncclMaxRedOp"), "2147483647");
  EXPECT_EQ(lookup(t, "ncclNumTypes"), "12");
  // ncclConfig_t: the 2.28 fields, then nine ints (graphUsageMode .. nvlsHostMode), padded to 8.
  EXPECT_EQ(lookup(t, "sizeof(ncclConfig_t)"), "120");
  EXPECT_EQ(lookup(t, "offsetof(ncclConfig_t, nvlsHostMode)"), "112");
  EXPECT_EQ(lookup(t, "typeid(ncclConfig_t)"), "17ncclConfig_v23100");
  EXPECT_EQ(lookup(t, "initializer config.magic"), std::to_string(0xcafebeefu));
  EXPECT_EQ(lookup(t, "initializer config.version"), "23203");
  EXPECT_EQ(lookup(t, "initializer config.blocking"), "-2147483648");
  EXPECT_EQ(lookup(t, "initializer config.nvlsHostMode"), "-2147483648");
  EXPECT_EQ(lookup(t, "initializer config.netName"), "null");
  // ncclCollConfig_t and its initializer.
  EXPECT_EQ(lookup(t, "sizeof(ncclCollConfig_t)"), "72");
  EXPECT_EQ(lookup(t, "offsetof(ncclCollConfig_t, ext)"), "16");
  EXPECT_EQ(lookup(t, "offsetof(ncclCollConfig_t, algSelection)"), "40");
  EXPECT_EQ(lookup(t, "offsetof(ncclCollConfig_t, userProfilerTag)"), "56");
  EXPECT_EQ(lookup(t, "offsetof(ncclCollConfig_t, launchCompletionEvent)"), "64");
  EXPECT_EQ(lookup(t, "typeid(ncclCollConfig_t)"), "21ncclCollConfig_v23200");
  EXPECT_EQ(lookup(t, "initializer collConfig.size"), "72");
  EXPECT_EQ(lookup(t, "initializer collConfig.version"), "23203");
  EXPECT_EQ(lookup(t, "initializer collConfig.forceAlgSelection"), "1");
  EXPECT_EQ(lookup(t, "initializer collConfig.CTAPolicy"), "-2147483648");
  EXPECT_EQ(lookup(t, "initializer collConfig.userProfilerTag"), "0");
  EXPECT_EQ(lookup(t, "initializer collConfig.algSelection"), "null");
  EXPECT_EQ(lookup(t, "sizeof(ncclConfigExt_t)"), "24");
  EXPECT_EQ(lookup(t, "offsetof(ncclConfigExt_t, val)"), "16");
  // Signals and encryption.
  EXPECT_EQ(lookup(t, "sizeof(ncclWaitSignalDesc_t)"), "16");
  EXPECT_EQ(lookup(t, "offsetof(ncclWaitSignalDesc_t, ctx)"), "12");
  EXPECT_EQ(lookup(t, "sizeof(ncclEncryptionConfig_t)"), "32");
  EXPECT_EQ(lookup(t, "offsetof(ncclEncryptionConfig_t, psk)"), "24");
  EXPECT_EQ(lookup(t, "initializer encryption.mode"), "0");
  EXPECT_EQ(lookup(t, "initializer encryption.psk"), "null");
  EXPECT_EQ(lookup(t, "typeid(cudaStream_t)"), "P11CUstream_st");
  EXPECT_EQ(lookup(t, "typeid(cudaEvent_t)"), "P10CUevent_st");
}

// Clients compiled against 2.28.9 pass an 80-byte ncclConfig_t with version 22809: every field
// they know must sit where 2.28.9 put it, and the grown struct only appends.
TEST(AbiTable, Nccl2289LayoutIsAPrefixOfOurs) {
  Table t = acclAbiTableNoCuda();
  EXPECT_EQ(lookup(t, "offsetof(ncclConfig_t, size)"), "0");
  EXPECT_EQ(lookup(t, "offsetof(ncclConfig_t, magic)"), "8");
  EXPECT_EQ(lookup(t, "offsetof(ncclConfig_t, version)"), "12");
  EXPECT_EQ(lookup(t, "offsetof(ncclConfig_t, blocking)"), "16");
  EXPECT_EQ(lookup(t, "offsetof(ncclConfig_t, netName)"), "32");
  EXPECT_EQ(lookup(t, "offsetof(ncclConfig_t, splitShare)"), "40");
  EXPECT_EQ(lookup(t, "offsetof(ncclConfig_t, commName)"), "48");
  EXPECT_EQ(lookup(t, "offsetof(ncclConfig_t, collnetEnable)"), "56");
  EXPECT_EQ(lookup(t, "offsetof(ncclConfig_t, nvlinkCentricSched)"), "76");
  EXPECT_EQ(lookup(t, "offsetof(ncclConfig_t, graphUsageMode)"), "80");  // first field after 2.28.9's 80 bytes
  EXPECT_EQ(lookup(t, "NCCL_VERSION(2, 28, 9)"), "22809");
  EXPECT_EQ(lookup(t, "sizeof(ncclSimInfo_t)"), "24");
  EXPECT_EQ(lookup(t, "offsetof(ncclSimInfo_t, estimatedTime)"), "16");
  EXPECT_EQ(lookup(t, "initializer sim.magic"), std::to_string(0x74685283u));
  EXPECT_EQ(lookup(t, "initializer sim.estimatedTime"), "-0x1p+0");
  EXPECT_EQ(lookup(t, "ncclInProgress"), "7");
}

// ---- Header text: what each header declares -------------------------------------------------

struct Declared {
  std::set<std::string> functions, macros, enumerators, typeNames;
};

std::string readFile(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Declared scanHeader(const char* path) {
  std::string text = readFile(path);
  EXPECT_FALSE(text.empty()) << "cannot read " << path;
  text = std::regex_replace(text, std::regex(R"(\\\n)"), " ");            // join macro lines
  text = std::regex_replace(text, std::regex(R"(/\*[\s\S]*?\*/)"), " ");  // block comments
  text = std::regex_replace(text, std::regex(R"(//[^\n]*)"), " ");        // line comments
  Declared d;
  auto collect = [&](const char* pattern, std::set<std::string>& into) {
    std::regex re(pattern);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
      into.insert((*it)[1].str());
    }
  };
  collect(R"(\b(p?nccl[A-Z]\w*)\s*\()", d.functions);
  collect(R"(#\s*define\s+(\w+))", d.macros);
  collect(R"(\b(nccl\w+)\s*=[^=])", d.enumerators);
  collect(R"(\}\s*(\w+)\s*;)", d.typeNames);
  collect(R"(typedef[^;{}]*\b(\w+)\s*;)", d.typeNames);
  // cudaStream_t and cudaEvent_t are declared by our header only when the CUDA headers are not used.
  d.typeNames.erase("cudaStream_t");
  d.typeNames.erase("cudaEvent_t");
  // Our private helper macros are not part of the NCCL surface.
  for (auto it = d.macros.begin(); it != d.macros.end();) it = it->rfind("ACCL_", 0) == 0 ? d.macros.erase(it) : ++it;
  return d;
}

std::string join(const std::set<std::string>& s) {
  std::string out;
  for (const std::string& x : s) out += x + " ";
  return out;
}

void expectSameSet(const std::set<std::string>& nv, const std::set<std::string>& ours, const char* what) {
  std::set<std::string> missing, extra;
  for (const std::string& x : nv)
    if (!ours.count(x)) missing.insert(x);
  for (const std::string& x : ours)
    if (!nv.count(x)) extra.insert(x);
  EXPECT_TRUE(missing.empty()) << what << " missing from ours: " << join(missing);
  EXPECT_TRUE(extra.empty()) << what << " only in ours: " << join(extra);
}

TEST(AbiHeaderText, DeclaresTheSameNames) {
#ifndef ACCL_NVIDIA_NCCL_H
  GTEST_SKIP() << kNoReferenceHeader;
#else
  Declared nv = scanHeader(ACCL_NVIDIA_NCCL_H);
  // NVIDIA's header declares ncclResetDebugInit on Linux and makes it an empty macro elsewhere;
  // ours always declares it (the scan does not evaluate #ifdef).
  nv.macros.erase("ncclResetDebugInit");
  nv.macros.erase("pncclResetDebugInit");
  Declared ours = scanHeader(ACCL_OUR_NCCL_H);
  EXPECT_GT(nv.functions.size(), 80u);
  expectSameSet(nv.functions, ours.functions, "functions");
  expectSameSet(nv.macros, ours.macros, "macros");
  expectSameSet(nv.enumerators, ours.enumerators, "enumerators");
  expectSameSet(nv.typeNames, ours.typeNames, "type names");
#endif
}

// Every function declared in our header has its profiling twin, and the count is NCCL 2.32.3's.
TEST(AbiHeaderText, EveryFunctionHasAProfilingTwin) {
  Declared ours = scanHeader(ACCL_OUR_NCCL_H);
  size_t plain = 0;
  for (const std::string& f : ours.functions) {
    if (f[0] == 'p') continue;
    ++plain;
    EXPECT_TRUE(ours.functions.count("p" + f)) << f << " has no p" << f;
  }
  EXPECT_EQ(plain * 2, ours.functions.size());
  EXPECT_EQ(plain, 73u);
}

}  // namespace
}  // namespace accl::abi
