// How the ranks come to life: threads of this process (-t/-g), forked local processes (-N), or the
// processes of an mpirun job (detected from OMPI_COMM_WORLD_* / PMI_* variables; no MPI library is
// linked: the unique id travels over TCP on 127.0.0.1, found through a rendezvous file). In every mode
// each rank reports over its own channel to one reporter, which prints the table.
#pragma once

#include <string>

#include "options.h"

namespace accl::bench {

struct LaunchEnv {
  bool cuda = false;        // ranks use the CUDA backend
  std::string backend;      // "host" or "cuda", for the header
  int libraryVersion = 0;
};

// An mpirun (or PMI) job this process is part of.
struct MpiJob {
  int size = 1;
  int rank = 0;
  int localRank = 0;
  std::string key;          // identifies the job, names the rendezvous file
};

// True when the environment says this process is one of several launched together.
bool detectMpiJob(MpiJob* job);

int launchThreads(const Options& opts, const LaunchEnv& env);
int launchForked(const Options& opts, const LaunchEnv& env);
int launchMpi(const Options& opts, const LaunchEnv& env, const MpiJob& job);

}  // namespace accl::bench
