// Checks the dynamic symbol table of our libnccl.so against NCCL's:
// - its nccl*/pnccl* names EQUAL NCCL 2.32.3's (data/nccl-2.32.3-exports.txt, taken from
//   NVIDIA's nvidia-nccl-cu13 2.32.3 wheel), and nothing else is exported;
// - every NCCL function torch 2.15.0's libtorch_cuda.so imports (data/torch-2.15.0-nccl-imports.txt)
//   is exported, since Python loads it with RTLD_NOW;
// - each nccl* entry point is a weak alias at the same address as its strong pncclX twin;
// - when NVIDIA's libraries are on this machine: 2.32.3's exports still equal the recorded list
//   (with the same binding as ours), and the installed 2.28.9 library exports a subset of ours.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace {

struct Symbol {
  std::string address;
  char type = '?';
};
using SymbolMap = std::map<std::string, Symbol>;
using NameSet = std::set<std::string>;

const char kNoProfilingTwin[] = "ncclResetDebugInitInternal";

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

// A name list from tests/abi/data: one name per line, '#' lines are comments.
NameSet readList(const std::string& file) {
  std::string path = std::string(ACCL_ABI_DATA_DIR) + "/" + file;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  NameSet names;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_TRUE(names.insert(line).second) << path << ": " << line << " is listed twice";
  }
  return names;
}

NameSet nccl2323Exports() { return readList("nccl-2.32.3-exports.txt"); }
NameSet torch2150Imports() { return readList("torch-2.15.0-nccl-imports.txt"); }

bool isNcclName(const std::string& s) { return s.rfind("nccl", 0) == 0 || s.rfind("pnccl", 0) == 0; }

NameSet ncclNamesOf(const SymbolMap& syms) {
  NameSet names;
  for (const auto& [name, sym] : syms)
    if (isNcclName(name)) names.insert(name);
  return names;
}

// Names of `wanted` that `have` lacks, space-separated ("" when none).
std::string missingFrom(const NameSet& have, const NameSet& wanted) {
  std::string missing;
  for (const std::string& n : wanted)
    if (!have.count(n)) missing += n + " ";
  return missing;
}

TEST(Exports, RecordedListsAreWellFormed) {
  NameSet nccl = nccl2323Exports();
  // 97 nccl* names; each has its pnccl* twin except ncclResetDebugInitInternal.
  EXPECT_EQ(nccl.size(), 193u);
  size_t plain = 0;
  for (const std::string& n : nccl) {
    EXPECT_TRUE(isNcclName(n)) << n;
    if (n[0] == 'p') {
      EXPECT_TRUE(nccl.count(n.substr(1))) << n << " without " << n.substr(1);
      continue;
    }
    ++plain;
    if (n != kNoProfilingTwin) EXPECT_TRUE(nccl.count("p" + n)) << n << " without p" << n;
  }
  EXPECT_EQ(plain, 97u);
  NameSet torch = torch2150Imports();
  EXPECT_EQ(torch.size(), 51u);
  for (const std::string& n : torch) EXPECT_TRUE(isNcclName(n)) << n;
  // torch only needs what NCCL 2.32.3 itself exports.
  EXPECT_EQ(missingFrom(nccl, torch), "");
}

TEST(Exports, OursEqualNccl2323) {
  SymbolMap ours;
  ASSERT_TRUE(readExports(ACCL_LIB_PATH, ours));
  NameSet have = ncclNamesOf(ours), want = nccl2323Exports();
  EXPECT_EQ(missingFrom(have, want), "") << "exported by NCCL 2.32.3 but not by " << ACCL_LIB_PATH;
  EXPECT_EQ(missingFrom(want, have), "") << "exported by " << ACCL_LIB_PATH << " but not by NCCL 2.32.3";
}

TEST(Exports, OursExportsOnlyNcclNames) {
  SymbolMap ours;
  ASSERT_TRUE(readExports(ACCL_LIB_PATH, ours));
  ASSERT_FALSE(ours.empty());
  std::string stray;
  for (const auto& [name, sym] : ours)
    if (!isNcclName(name)) stray += name + "(" + sym.type + ") ";
  EXPECT_EQ(stray, "") << "exported symbols outside nccl*/pnccl*";
}

// Python loads libtorch_cuda.so with RTLD_NOW: one missing name and `import torch` fails.
TEST(Exports, OursCoverTorch2150Imports) {
  SymbolMap ours;
  ASSERT_TRUE(readExports(ACCL_LIB_PATH, ours));
  EXPECT_EQ(missingFrom(ncclNamesOf(ours), torch2150Imports()), "")
      << "imported by torch 2.15.0's libtorch_cuda.so but not exported by " << ACCL_LIB_PATH;
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
  for (const auto& [name, sym] : ours)
    if (name.rfind("nccl", 0) == 0 && name != kNoProfilingTwin && !ours.count("p" + name))
      ADD_FAILURE() << name << " is exported without p" << name;
  EXPECT_EQ(pairs, 96);
}

// NVIDIA's 2.32.3 library, when fetched (scripts/fetch-nccl-reference.sh): the recorded list is
// still its export list, and each name has the same binding as ours (weak nccl*, strong pnccl*).
TEST(Exports, Nvidia2323LibraryMatchesTheRecordedListAndOurBindings) {
  std::string nvLib = ACCL_NCCL_REFERENCE_LIB;
  if (nvLib.empty())
    GTEST_SKIP() << "NVIDIA's NCCL 2.32.3 library is not in ACCL_NCCL_REFERENCE_DIR (run "
                    "scripts/fetch-nccl-reference.sh); OursEqualNccl2323 uses the recorded list";
  SymbolMap nv, ours;
  ASSERT_TRUE(readExports(nvLib, nv));
  ASSERT_TRUE(readExports(ACCL_LIB_PATH, ours));
  NameSet nvNames = ncclNamesOf(nv), recorded = nccl2323Exports();
  EXPECT_EQ(missingFrom(nvNames, recorded), "") << "recorded but not exported by " << nvLib;
  EXPECT_EQ(missingFrom(recorded, nvNames), "") << "exported by " << nvLib << " but not recorded";
  for (const std::string& n : nvNames) {
    auto it = ours.find(n);
    if (it == ours.end()) continue;  // OursEqualNccl2323 reports it
    EXPECT_EQ(it->second.type, nv[n].type)
        << n << ": nm type differs (NVIDIA " << nv[n].type << ", ours " << it->second.type << ")";
  }
}

// Clients linked against the NCCL that comes with CUDA (2.28.9) keep loading.
TEST(Exports, OursCoverInstalledNccl2289) {
  std::string nvLib = ACCL_NCCL_2289_LIB_PATH;
  if (nvLib.empty()) GTEST_SKIP() << "NVIDIA's libnccl.so.2 2.28.9 was not found at configure time";
  SymbolMap nv, ours;
  ASSERT_TRUE(readExports(nvLib, nv));
  ASSERT_TRUE(readExports(ACCL_LIB_PATH, ours));
  NameSet wanted = ncclNamesOf(nv);
  EXPECT_GE(wanted.size(), 105u);
  EXPECT_EQ(missingFrom(ncclNamesOf(ours), wanted), "") << "exported by " << nvLib << " but not by ours";
  // ... and so does the recorded 2.32.3 list: NCCL removed nothing between the two.
  EXPECT_EQ(missingFrom(nccl2323Exports(), wanted), "") << "exported by " << nvLib << " but not by NCCL 2.32.3";
}

}  // namespace
