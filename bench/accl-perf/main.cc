// accl-perf: accl's collective benchmark, nccl-tests-compatible in flags and output, written against the
// public NCCL API only. main() parses the options, picks the backend (host unless a GPU is usable or
// ACCL_BACKEND says otherwise) and hands over to the thread, fork or mpirun launcher.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "launcher.h"
#include "nccl.h"
#include "options.h"
#include "rank_device.h"
#include "selftest.h"

using namespace accl::bench;

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);  // a vanished reader shows up as a write error, not a dead process
  Options opts;
  std::string error;
  int rc = parseOptions(argc, argv, &opts, &error);
  if (rc >= 0) {
    if (!error.empty()) std::fprintf(stderr, "accl-perf: %s (see --help)\n", error.c_str());
    return rc;
  }
  if (opts.selftest) return runSelftest(true);

  MpiJob job;
  const bool underMpi = detectMpiJob(&job);
  if (underMpi && opts.procs > 0) {
    std::fprintf(stderr, "accl-perf: -N (forked processes) cannot be combined with an mpirun launch\n");
    return kExitInvalidUsage;
  }

  LaunchEnv env;
  const char* backend = std::getenv("ACCL_BACKEND");
  if (backend && *backend) {
    env.cuda = std::strcmp(backend, "cuda") == 0;
    if (env.cuda && !benchHasCuda()) {
      std::fprintf(stderr, "accl-perf: ACCL_BACKEND=cuda, but this accl-perf was built without CUDA support\n");
      return kExitNotImplemented;
    }
  } else {
    env.cuda = benchHasCuda() && probeCudaDeviceCount() > 0;
    setenv("ACCL_BACKEND", env.cuda ? "cuda" : "host", 1);
  }
  env.backend = env.cuda ? "cuda" : "host";
  if (ncclGetVersion(&env.libraryVersion) != ncclSuccess) env.libraryVersion = 0;

  if (underMpi) return launchMpi(opts, env, job);
  if (opts.procs > 0) return launchForked(opts, env);
  return launchThreads(opts, env);
}
