// main() of net_matrix_rank and what its modes share: the rank's place from multihost.sh's
// variables, the printing RankContext, the shared unique id (see net_matrix_rank.h).
//
//   net_matrix_rank matrix [all|allreduce]      the covering collective matrix (net_matrix_cases.cc)
//   net_matrix_rank fault linkdown|qperror|kill  a fault during large all-reduces (net_fault_rank.cc)
//   net_matrix_rank attack                       init + all-reduces while a local process sends junk
//                                                to every listening port (net_wire_attacker.cc)
//   net_matrix_rank zerocopy                     collectives whose large steps go from the user's
//                                                buffers to the network (net_zero_copy_rank.cc)
//   net_matrix_rank steps                        step sizes across hosts: small, in-between and whole
//                                                512 KiB slots (net_steps_rank.cc)
//   net_matrix_rank crypt wire|key|missing|plaintext  encrypted runs (net_crypt_rank.cc)
// Exit status: 0 when every check passed, 1 when one failed (a line per failure), 2 on bad usage.
#include "netns/net_matrix_rank.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

namespace accl::test {

double wallMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double envDouble(const char* name, double fallback) {
  const char* v = getenv(name);
  return (v && *v) ? std::atof(v) : fallback;
}

bool readMhRank(MhRank* out) {
  auto get = [](const char* name, int* v) {
    const char* s = getenv(name);
    if (!s || !*s) return false;
    *v = std::atoi(s);
    return true;
  };
  MhRank me;
  if (!get("ACCL_MH_RANK", &me.rank) || !get("ACCL_MH_NRANKS", &me.nranks)) {
    std::fprintf(stderr, "net_matrix_rank: ACCL_MH_RANK / ACCL_MH_NRANKS are not set: run it under "
                         "tests/netns/multihost.sh\n");
    return false;
  }
  get("ACCL_MH_LOCAL_RANK", &me.localRank);
  get("ACCL_MH_HOST", &me.host);
  get("ACCL_MH_NHOSTS", &me.nhosts);
  if (const char* p = getenv("ACCL_MH_NETNS")) me.netnsPrefix = p;
  if (me.nranks < 1 || me.rank < 0 || me.rank >= me.nranks || me.nhosts < 1 || me.host < 0 ||
      me.host >= me.nhosts) {
    std::fprintf(stderr, "net_matrix_rank: inconsistent ACCL_MH_* (rank %d of %d, host %d of %d)\n", me.rank,
                 me.nranks, me.host, me.nhosts);
    return false;
  }
  me.tag = "rank " + std::to_string(me.rank) + " (host " + std::to_string(me.host) + ")";
  *out = me;
  return true;
}

PrintingContext::PrintingContext(const MhRank& me) {
  if (pipe2(pipe_, O_CLOEXEC) != 0) std::perror("net_matrix_rank: pipe");
  ctx_ = std::make_unique<RankContext>(me.rank, me.nranks, &ids_, pipe_[1]);
  const std::string tag = me.tag;
  const int fd = pipe_[0];
  reader_ = std::thread([fd, tag] {
    for (;;) {
      char header[5];
      uint32_t len = 0;
      if (read(fd, header, sizeof(header)) != (ssize_t)sizeof(header)) return;  // the writer closed
      std::memcpy(&len, header + 1, sizeof(len));
      std::string text(len, '\0');
      size_t got = 0;
      while (got < len) {
        ssize_t n = read(fd, text.data() + got, len - got);
        if (n <= 0) return;
        got += (size_t)n;
      }
      if (header[0] == 'F') std::fprintf(stderr, "FAIL %s: %s\n", tag.c_str(), text.c_str());
      else std::printf("%s: %s\n", tag.c_str(), text.c_str());
      std::fflush(header[0] == 'F' ? stderr : stdout);
    }
  });
}

PrintingContext::~PrintingContext() {
  close(pipe_[1]);
  if (reader_.joinable()) reader_.join();
  close(pipe_[0]);
}

bool sharedUniqueId(const MhRank& me, ncclUniqueId* id) {
  const char* commId = getenv("NCCL_COMM_ID");
  if (commId && *commId) {
    ncclResult_t res = ncclGetUniqueId(id);
    if (res != ncclSuccess)
      std::fprintf(stderr, "FAIL %s: ncclGetUniqueId with NCCL_COMM_ID=%s returned %d: %s\n", me.tag.c_str(), commId,
                   res, ncclGetLastError(nullptr));
    return res == ncclSuccess;
  }
  const char* file = getenv("ACCL_NM_ID_FILE");
  if (!file || !*file) {
    std::fprintf(stderr, "FAIL %s: neither NCCL_COMM_ID nor ACCL_NM_ID_FILE is set\n", me.tag.c_str());
    return false;
  }
  const std::string path = file;
  if (me.rank == 0) {
    if (ncclGetUniqueId(id) != ncclSuccess) return false;
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary);
      out.write(id->internal, sizeof(id->internal));
      if (!out) return false;
    }
    return std::rename(tmp.c_str(), path.c_str()) == 0;
  }
  const double until = wallMs() + 60000;
  while (wallMs() < until) {
    std::ifstream in(path, std::ios::binary);
    if (in.read(id->internal, sizeof(id->internal))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fprintf(stderr, "FAIL %s: no unique id in %s after 60 s\n", me.tag.c_str(), path.c_str());
  return false;
}

ncclComm_t initJobComm(const MhRank& me, RankContext& ctx) {
  ncclUniqueId id;
  if (!sharedUniqueId(me, &id)) {
    ctx.fail("no shared unique id");
    return nullptr;
  }
  ncclComm_t comm = nullptr;
  ncclResult_t res = ncclCommInitRank(&comm, me.nranks, id, me.rank);
  if (res != ncclSuccess) {
    ctx.fail("ncclCommInitRank returned %d (%s): %s", res, ncclGetErrorString(res), ncclGetLastError(nullptr));
    return nullptr;
  }
  return comm;
}

std::string jobShape(const MhRank& me) {
  return std::to_string(me.nranks) + " ranks / " + std::to_string(me.nhosts) + " hosts";
}

}  // namespace accl::test

int main(int argc, char** argv) {
  using namespace accl::test;
  setenv("ACCL_BACKEND", "host", 0);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string mode = argc > 1 ? argv[1] : "matrix";
  const std::string arg = argc > 2 ? argv[2] : "";
  MhRank me;
  if (!readMhRank(&me)) return 2;
  if (mode == "matrix") return runMatrixMode(me, arg.empty() ? "all" : arg);
  if (mode == "fault" && (arg == "linkdown" || arg == "qperror" || arg == "kill")) return runFaultMode(me, arg);
  if (mode == "attack") return runAttackMode(me);
  if (mode == "zerocopy") return runZeroCopyMode(me);
  if (mode == "steps") return runStepsMode(me);
  if (mode == "crypt") return runCryptMode(me, arg);
  std::fprintf(stderr, "usage: %s matrix [all|allreduce] | fault linkdown|qperror|kill | attack | zerocopy | steps | crypt KIND\n",
               argv[0]);
  return 2;
}
