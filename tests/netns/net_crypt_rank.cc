// The encryption mode of net_matrix_rank (issue 21), run by net_matrix.sh -K under multihost.sh with
// ACCL_ENCRYPTION_PSK_FILE set for every rank:
//   crypt wire       all-gathers of a marker pattern (16 bytes "ACCL-WIRE-MARK:" + rank/index), small
//                    (the control socket) and large (the data sockets), checked exactly; the capture of
//                    net_matrix.sh -C counts the marker on the wire. With ACCL_NM_CAPTURE_READY set, the
//                    ranks wait for that file (the capture is running) before the first collective.
//   crypt key        the last rank uses another key (ncclSetEncryption PSK)
//   crypt missing    the last rank's ACCL_ENCRYPTION_PSK_FILE names no file
//   crypt plaintext  the last rank calls ncclSetEncryption(NONE)
// The three faults: every rank's init must fail (no hang) within 3 bootstrap timeouts, each with a
// message; the script greps the faulty rank's message.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "netns/net_matrix_rank.h"

namespace accl::test {
namespace {

constexpr char kMarker[] = "ACCL-WIRE-MARK:";  // 15 bytes + the rank byte = one 16-byte unit head
constexpr size_t kUnit = 32;                   // marker (16) + rank/index words (16)

void fill(std::vector<char>* buf, int rank) {
  for (size_t u = 0; u < buf->size() / kUnit; ++u) {
    char* p = buf->data() + u * kUnit;
    std::memcpy(p, kMarker, 15);
    p[15] = static_cast<char>('A' + rank % 26);
    uint64_t words[2] = {static_cast<uint64_t>(rank), u};
    std::memcpy(p + 16, words, sizeof(words));
  }
}

bool waitForCapture(const MhRank& me) {
  const char* ready = getenv("ACCL_NM_CAPTURE_READY");
  if (!ready || !*ready) return true;
  const double until = wallMs() + 20000;
  while (wallMs() < until) {
    if (access(ready, F_OK) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fprintf(stderr, "FAIL %s: the capture never became ready (%s)\n", me.tag.c_str(), ready);
  return false;
}

int runWire(const MhRank& me) {
  ncclUniqueId id;
  if (!sharedUniqueId(me, &id)) return 1;
  ncclComm_t comm = nullptr;
  ncclResult_t res = ncclCommInitRank(&comm, me.nranks, id, me.rank);
  if (res != ncclSuccess) {
    std::fprintf(stderr, "FAIL %s: ncclCommInitRank: %d %s\n", me.tag.c_str(), res, ncclGetLastError(nullptr));
    return 1;
  }
  if (!waitForCapture(me)) return 1;
  int bad = 0;
  // 4 KiB + 32: the control socket's inline path; 6 MiB + 32: the data sockets.
  for (size_t bytes : {size_t{4096 + kUnit}, size_t{6 * 1024 * 1024 + kUnit}}) {
    std::vector<char> mine(bytes), all(bytes * me.nranks, 0), want(bytes);
    fill(&mine, me.rank);
    res = ncclAllGather(mine.data(), all.data(), bytes, ncclInt8, comm, nullptr);
    if (res != ncclSuccess) {
      std::fprintf(stderr, "FAIL %s: allgather of %zu bytes: %d %s\n", me.tag.c_str(), bytes, res,
                   ncclGetLastError(nullptr));
      bad = 1;
      break;
    }
    for (int r = 0; r < me.nranks; ++r) {
      fill(&want, r);
      if (std::memcmp(all.data() + r * bytes, want.data(), bytes) != 0) {
        std::fprintf(stderr, "FAIL %s: allgather of %zu bytes: rank %d's block differs\n", me.tag.c_str(), bytes, r);
        bad = 1;
      }
    }
    if (!bad) std::printf("%s: allgather of %zu bytes per rank: correct\n", me.tag.c_str(), bytes);
  }
  ncclCommDestroy(comm);
  return bad;
}

int runFault(const MhRank& me, const std::string& kind) {
  const bool faulty = me.rank == me.nranks - 1;
  if (faulty) {
    if (kind == "missing") {
      setenv("ACCL_ENCRYPTION_PSK_FILE", "/nonexistent/accl-psk", 1);
    } else {
      ncclEncryptionConfig_t config = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
      config.mode = kind == "key" ? NCCL_ENCRYPTION_MODE_PSK : NCCL_ENCRYPTION_MODE_NONE;
      config.psk = "another key, thirty-two bytes or more long";
      if (ncclSetEncryption(&config) != ncclSuccess) {
        std::fprintf(stderr, "FAIL %s: ncclSetEncryption: %s\n", me.tag.c_str(), ncclGetLastError(nullptr));
        return 1;
      }
    }
  }
  const double boundMs = 3 * envDouble("ACCL_BOOTSTRAP_TIMEOUT_MS", 120000) + 5000;
  ncclUniqueId id;
  if (!sharedUniqueId(me, &id)) return 1;
  const double start = wallMs();
  ncclComm_t comm = nullptr;
  ncclResult_t res = ncclCommInitRank(&comm, me.nranks, id, me.rank);
  const double took = wallMs() - start;
  if (res == ncclSuccess) {
    std::fprintf(stderr, "FAIL %s: ncclCommInitRank succeeded with a %s rank in the job\n", me.tag.c_str(),
                 kind.c_str());
    ncclCommDestroy(comm);
    return 1;
  }
  std::printf("%s: %s init failed after %.0f ms with %d: %s\n", me.tag.c_str(), faulty ? "faulty" : "healthy", took,
              res, ncclGetLastError(nullptr));
  if (took > boundMs) {
    std::fprintf(stderr, "FAIL %s: the error took %.0f ms (bound %.0f)\n", me.tag.c_str(), took, boundMs);
    return 1;
  }
  return 0;
}

}  // namespace

int runCryptMode(const MhRank& me, const std::string& kind) {
  if (kind == "wire") return runWire(me);
  if (kind == "key" || kind == "missing" || kind == "plaintext") return runFault(me, kind);
  std::fprintf(stderr, "net_matrix_rank crypt: unknown kind '%s'\n", kind.c_str());
  return 2;
}

}  // namespace accl::test
