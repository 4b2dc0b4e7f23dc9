// A stand-in for libFuzzer's main where the compiler has none (gcc): replays every file given (or
// every file of a given folder), then, with -runs=N or -max_total_time=S, feeds mutations of those
// inputs (byte flips, insertions, deletions, splices, truncations; seeded by -seed=N). A failing
// property aborts in the target, as under libFuzzer. No coverage feedback: it finds shallow bugs
// only, and keeps the targets building and their seed corpora passing under every compiler.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "fuzz_target.h"

extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

using Bytes = std::vector<uint8_t>;

void collect(const std::string& path, std::vector<std::string>* files) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    std::fprintf(stderr, "fuzz driver: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  if (!S_ISDIR(st.st_mode)) {
    files->push_back(path);
    return;
  }
  DIR* dir = opendir(path.c_str());
  while (dirent* e = dir ? readdir(dir) : nullptr)
    if (e->d_name[0] != '.') collect(path + "/" + e->d_name, files);
  if (dir) closedir(dir);
}

Bytes readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void run(const Bytes& input) {
  // A copy of exactly the input's size, so out-of-bounds reads land outside the allocation.
  auto* copy = static_cast<uint8_t*>(std::malloc(input.size() + 1));
  if (!input.empty()) std::memcpy(copy, input.data(), input.size());
  LLVMFuzzerTestOneInput(copy, input.size());
  std::free(copy);
}

Bytes mutate(const std::vector<Bytes>& corpus, std::mt19937_64& rng, size_t maxLen) {
  Bytes b = corpus.empty() ? Bytes{} : corpus[rng() % corpus.size()];
  int edits = 1 + static_cast<int>(rng() % 8);
  for (int i = 0; i < edits; ++i) {
    size_t pos = b.empty() ? 0 : rng() % (b.size() + 1);
    switch (rng() % 6) {
      case 0:  // flip a bit
        if (!b.empty()) b[pos % b.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      case 1:  // random byte
        if (!b.empty()) b[pos % b.size()] = static_cast<uint8_t>(rng());
        break;
      case 2:  // insert random bytes
        for (size_t n = 1 + rng() % 8; n > 0; --n) b.insert(b.begin() + pos, static_cast<uint8_t>(rng()));
        break;
      case 3:  // delete a run
        if (!b.empty()) b.erase(b.begin() + pos % b.size(), b.begin() + std::min(b.size(), pos % b.size() + 1 + rng() % 16));
        break;
      case 4: {  // splice in a piece of another input
        const Bytes& o = corpus.empty() ? b : corpus[rng() % corpus.size()];
        if (o.empty()) break;
        size_t from = rng() % o.size(), len = 1 + rng() % std::min<size_t>(64, o.size() - from);
        b.insert(b.begin() + pos, o.begin() + from, o.begin() + from + len);
        break;
      }
      default:  // truncate
        b.resize(pos);
    }
  }
  if (b.size() > maxLen) b.resize(maxLen);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  long runs = 0, maxTime = 0;
  uint64_t seed = 1;
  size_t maxLen = 4096;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("-runs=", 0) == 0) runs = std::atol(a.c_str() + 6);
    else if (a.rfind("-max_total_time=", 0) == 0) maxTime = std::atol(a.c_str() + 16);
    else if (a.rfind("-seed=", 0) == 0) seed = std::strtoull(a.c_str() + 6, nullptr, 0);
    else if (a.rfind("-max_len=", 0) == 0) maxLen = std::strtoull(a.c_str() + 9, nullptr, 0);
    else if (a[0] == '-') continue;  // other libFuzzer flags: ignored
    else collect(a, &files);
  }
  std::vector<Bytes> corpus;
  for (const std::string& f : files) {
    corpus.push_back(readFile(f));
    run(corpus.back());
  }
  std::printf("fuzz driver: replayed %zu inputs\n", corpus.size());
  if (runs == 0 && maxTime == 0) return 0;
  std::mt19937_64 rng(seed);
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(maxTime);
  long done = 0;
  for (; runs == 0 || done < runs; ++done) {
    if (maxTime > 0 && (done & 63) == 0 && std::chrono::steady_clock::now() >= end) break;
    run(mutate(corpus, rng, maxLen));
  }
  std::printf("fuzz driver: %ld random inputs (seed %llu), no failure\n", done,
              static_cast<unsigned long long>(seed));
  return 0;
}
