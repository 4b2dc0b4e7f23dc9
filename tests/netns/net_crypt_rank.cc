// The encryption mode of net_matrix_rank (issue 21), run by net_matrix.sh -K under multihost.sh with
// ACCL_ENCRYPTION_PSK_FILE set for every rank:
//   crypt wire       all-gathers of a marker pattern (16 bytes "ACCL-WIRE-MARK:" + rank/index), small
//                    (the control socket) and large (the data sockets), checked exactly; the capture of
//                    net_matrix.sh -C counts the marker on the wire. With ACCL_NM_CAPTURE_READY set, the
//                    ranks wait for that file (the capture is running) before the first collective.
//                    With ACCL_NM_RAS_BIN (accl-ras) and NCCL_RAS_ADDR off the loopback, RAS crosses
//                    the wire too: host 0's first rank asks every process of host 1 for its version
//                    (the answer "accl-ras protocol 1 library ..." is a marker the capture counts).
//                    Encrypted (ACCL_ENCRYPTION_PSK_FILE), also: accl-ras without a key is refused
//                    ("encryption required"), with another key fails ("pre-shared key differs"),
//                    and host 1's first rank dials every listening port of its host (bootstrap,
//                    liveness, net, RAS) as a TLS client with another key: each must fail saying
//                    the keys differ, and the job goes on.
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
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "netns/net_matrix_rank.h"
#include "support/spawn_capture.h"

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

// Runs `args` (argv[0] first) with its output in a file of ACCL_NM_DIR (support/spawn_capture.h);
// `env` entries "NAME=value" replace the rank's own, "NAME=" removes it.
int spawnAndRead(const MhRank& me, const std::vector<std::string>& args, const std::vector<std::string>& env,
                 std::string* out) {
  static int serial = 0;
  const char* dir = getenv("ACCL_NM_DIR");  // shared by the hosts, whose pid namespaces differ: name by rank
  const std::string file = std::string(dir && *dir ? dir : "/tmp") + "/spawn.rank" + std::to_string(me.rank) +
                           "." + std::to_string(serial++);
  SpawnResult r = spawnAndCapture(args, env, file);
  *out = r.out;
  return r.status;
}

// The IPv4 TCP ports listening in this namespace on an address other than the loopback.
std::vector<unsigned> listeningPortsOffLoopback() {
  std::vector<unsigned> ports;
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string sl, local, remote, state;
    ls >> sl >> local >> remote >> state;
    const size_t colon = local.find(':');
    if (state != "0A" || colon != 8) continue;
    if (local.compare(6, 2, "7F") == 0) continue;  // 127.x.x.x (the address is little-endian hex)
    ports.push_back(static_cast<unsigned>(std::stoul(local.substr(colon + 1), nullptr, 16)));
  }
  return ports;
}

// A barrier outside the library (a file per rank in ACCL_NM_DIR): a rank busy with checks for
// seconds must not make the others' collectives time out. False after 60 s.
bool waitForEveryRank(const MhRank& me, const char* step) {
  const char* dir = getenv("ACCL_NM_DIR");
  const std::string prefix = std::string(dir && *dir ? dir : "/tmp") + "/" + step + ".rank";
  std::ofstream(prefix + std::to_string(me.rank)) << "done\n";
  const double until = wallMs() + 60000;
  for (int r = 0; r < me.nranks; ++r)
    while (access((prefix + std::to_string(r)).c_str(), F_OK) != 0) {
      if (wallMs() > until) {
        std::fprintf(stderr, "FAIL %s: rank %d never finished '%s'\n", me.tag.c_str(), r, step);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  return true;
}

// The capture runs in the switch namespace, which multihost.sh's teardown SIGKILLs: before the
// ranks go, let it count what is still queued: its result file unchanged for 500 ms, or 2 s (the
// heartbeats keep it changing a little; 2 s is ample for the backlog of the last collective).
void waitForCaptureToSettle() {
  const char* ready = getenv("ACCL_NM_CAPTURE_READY");
  if (!ready || !*ready) return;
  std::string path = ready;
  path = path.substr(0, path.rfind('/') + 1) + "capture.txt";
  std::string last;
  double stableSince = wallMs();
  const double until = wallMs() + 2000;
  while (wallMs() < until && wallMs() - stableSince < 500) {
    std::ifstream in(path);
    std::string now((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (now != last) {
      last = now;
      stableSince = wallMs();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

bool contains(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

// RAS across the hosts (see the file comment); false after printing a FAIL line.
bool checkRasAcrossHosts(const MhRank& me) {
  const char* ras = getenv("ACCL_NM_RAS_BIN");
  if (!ras || !*ras || me.nhosts < 2) return true;
  const char* key = getenv("ACCL_ENCRYPTION_PSK_FILE");
  const bool encrypted = key && *key;
  const std::string otherKey = std::string(getenv("ACCL_NM_DIR") ? getenv("ACCL_NM_DIR") : "/tmp") + "/other.psk";
  if (encrypted) std::ofstream(otherKey) << "another key than the job's, thirty-two bytes or more\n";
  const int perHost = me.nranks / me.nhosts;
  bool ok = true;
  if (me.host == 0 && me.localRank == 0) {
    const std::vector<std::string> ask = {ras, "-a", "10.77.0.2:28028", "--scan", std::to_string(perHost),
                                          "--version", "-t", "5"};
    std::string out;
    int st = spawnAndRead(me, ask, {}, &out);
    int answers = 0;
    for (size_t at = 0; (at = out.find("accl-ras protocol 1 library", at)) != std::string::npos; ++at) ++answers;
    if (st != 0 || answers != perHost) {
      std::fprintf(stderr, "FAIL %s: accl-ras%s across the hosts (exit %d, %d of %d processes answered):\n%s\n",
                   me.tag.c_str(), encrypted ? " with the job's key" : "", st, answers, perHost, out.c_str());
      ok = false;
    } else {
      std::printf("%s: RAS of host 1 answered%s: %d processes\n", me.tag.c_str(),
                  encrypted ? " over TLS" : " in clear", answers);
    }
    if (encrypted) {
      std::vector<std::string> one = {ras, "-a", "10.77.0.2:28028", "--version", "-t", "5"};
      st = spawnAndRead(me, one, {"ACCL_ENCRYPTION_PSK_FILE="}, &out);
      if (st != 1 || !contains(out, "encryption required") || contains(out, "accl-ras protocol")) {
        std::fprintf(stderr, "FAIL %s: accl-ras without a key was not refused (exit %d): %s\n", me.tag.c_str(), st,
                     out.c_str());
        ok = false;
      }
      st = spawnAndRead(me, one, {"ACCL_ENCRYPTION_PSK_FILE=" + otherKey}, &out);
      if (st != 1 || !contains(out, "pre-shared key differs")) {
        std::fprintf(stderr, "FAIL %s: accl-ras with another key did not fail saying so (exit %d): %s\n",
                     me.tag.c_str(), st, out.c_str());
        ok = false;
      }
      if (ok) std::printf("%s: RAS refused accl-ras without a key and with another key\n", me.tag.c_str());
    }
  }
  if (encrypted && me.host == 1 && me.localRank == 0) {
    // Every listener of this host (both processes' bootstrap, liveness, net and RAS ports). One that
    // accepts only while an operation expects a connection (a bootstrap peer listener) leaves the
    // client in its backlog: no answer within -t is fine there. The liveness listeners' refusals
    // are logged ("liveness: dropped a connection before its HELLO: ... key differs"), which
    // net_matrix.sh -g counts.
    int refused = 0, silent = 0, total = 0;
    for (unsigned port : listeningPortsOffLoopback()) {
      ++total;
      const std::vector<std::string> probe = {ras, "-a", "10.77.0.2:" + std::to_string(port), "--version",
                                              "-t", "3"};
      std::string out;
      double t0 = 0;
      int st = -1;
      for (int attempt = 0; attempt < 2; ++attempt) {  // a second look at anything unexpected
        t0 = wallMs();
        st = spawnAndRead(me, probe, {"ACCL_ENCRYPTION_PSK_FILE=" + otherKey}, &out);
        if (st == 1 && (contains(out, "pre-shared key differs") || contains(out, "timed out waiting"))) break;
      }
      if (st == 1 && contains(out, "pre-shared key differs")) {  // within accl-ras's -t 3
        ++refused;
      } else if (st == 1 && contains(out, "timed out waiting for the answer")) {
        ++silent;
        std::printf("%s: port %u did not answer a TLS client with another key within 3 s\n", me.tag.c_str(), port);
      } else {
        std::fprintf(stderr, "FAIL %s: a TLS client with another key at port %u (exit %d, %.0f ms, %zu bytes "
                     "of output): %s\n", me.tag.c_str(), port, st, wallMs() - t0, out.size(), out.c_str());
        ok = false;
      }
    }
    std::printf("%s: %d of %d listening ports of this host refused a TLS client with another key, saying so "
                "(%d did not accept it now)\n", me.tag.c_str(), refused, total, silent);
    if (refused < 2 * perHost) {  // at least each process's RAS and liveness listeners
      std::fprintf(stderr, "FAIL %s: only %d listening ports refused the client\n", me.tag.c_str(), refused);
      ok = false;
    }
  }
  return ok;
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
  if (!bad && !checkRasAcrossHosts(me)) bad = 1;
  if (me.rank == 0) waitForCaptureToSettle();
  if (!bad && !waitForEveryRank(me, "ras-checked")) bad = 1;  // their servers and listeners stay up till then
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
