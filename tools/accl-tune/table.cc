// `accl-tune table` (see table.h): loads the topology (a file, or this machine's), builds the
// tuner the way a communicator of that shape would (GPU model, or the host model with --host or
// when the topology has no GPU; NCCL_ALGO / NCCL_PROTO / NCCL_TUNER_PLUGIN from the environment),
// and prints its choice per collective and size.
#include "table.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/cli.h"
#include "measure.h"
#include "nccl.h"
#include "topo/discover.h"
#include "topo/search.h"
#include "topo/system.h"
#include "topo/xml.h"
#include "tuner/gpu_model.h"
#include "tuner/host_model.h"
#include "tuner/tuner.h"
#include "tuner/tuner_net.h"
#include "util/params.h"

namespace accl::tune {
namespace {

const char* kUsage =
    "usage: accl-tune table [--topo-file F] [--ranks N] [--nodes M] [--coll C] [-b MIN] [-e MAX] [-f FACTOR]\n"
    "                       [--host] [--channels K] [--cpus K]\n"
    "  --topo-file F  NCCL topology XML of one node (default: NCCL_TOPO_FILE, else this machine)\n"
    "  --ranks N      ranks in the communicator (default: the node's GPUs x nodes, at least 2)\n"
    "  --nodes M      nodes (default 1); N must be a multiple of M: every node runs N / M ranks\n"
    "  --coll C       all_reduce (default), all_gather, reduce_scatter, broadcast, reduce, a comma list, or all\n"
    "  -b/-e/-f       sizes MIN, MIN*FACTOR, ... up to MAX (default 8 .. 1G, factor 2; K/M/G suffixes)\n"
    "  --host         the host backend's model (implied when the topology has no GPU)\n"
    "  --channels K   host model: channels (worker threads) per rank (default 1)\n"
    "  --cpus K       host model: cores available to the node's ranks (default: this process's affinity)\n"
    "NCCL_ALGO, NCCL_PROTO, NCCL_TUNER_PLUGIN, NCCL_MIN/MAX_NCHANNELS and ACCL_TUNER_FILE apply as in a job.\n"
    "Exit status: 0 ok, 1 the topology or tuner failed, 2 bad usage (the message names the value and why).\n";

struct Options {
  std::string topoFile;
  int ranks = 0;
  int nodes = 1;
  std::vector<FuncId> funcs = {kFuncAllReduce};
  size_t minBytes = 8;
  size_t maxBytes = size_t(1) << 30;
  double factor = 2;
  bool host = false;
  int channels = 1;
  int cpus = 0;
};

constexpr const char* kTool = "accl-tune table";

// Why `ranks` ranks cannot be spread over `nodes` nodes, or "" when they can. Every node runs the
// same number of ranks: the cost models (like NCCL's) describe a communicator by its node count
// and its ranks per node.
std::string shapeProblem(int ranks, int nodes) {
  char buf[200];
  if (nodes > ranks) {
    std::snprintf(buf, sizeof(buf), "--nodes %d with --ranks %d: more nodes than ranks", nodes, ranks);
    return buf;
  }
  if (ranks % nodes != 0) {
    std::snprintf(buf, sizeof(buf),
                  "--ranks %d is not a multiple of --nodes %d: every node must run the same number of ranks "
                  "(e.g. --ranks %d or %d)", ranks, nodes, ranks / nodes * nodes, (ranks / nodes + 1) * nodes);
    return buf;
  }
  return "";
}

// Reads argv[1..]; returns -1 to go on, or the exit status (0 after --help, 2 after a bad value,
// named with the reason).
int parseOptions(int argc, char** argv, Options* o) {
  using cli::badValue;
  bool ranksGiven = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return cli::kExitOk;
    }
    if (a == "--host") {
      o->host = true;
      continue;
    }
    static const char* const kWithValue[] = {"--topo-file", "--ranks", "-n", "--nodes", "--coll", "-C", "-b",
                                             "--minbytes", "-e", "--maxbytes", "-f", "--stepfactor", "--channels",
                                             "--cpus"};
    bool takesValue = false;
    for (const char* name : kWithValue) takesValue = takesValue || a == name;
    if (!takesValue) return cli::usageError(kTool, "unknown option '%s'", a.c_str());
    if (i + 1 >= argc) return cli::usageError(kTool, "%s needs a value", a.c_str());
    const char* v = argv[++i];
    long n = 0;
    std::string why;
    if (a == "--topo-file") {
      o->topoFile = v;
    } else if (a == "--ranks" || a == "-n") {
      if (!cli::parseInt(v, 1, 1 << 20, &n, &why)) return badValue(kTool, a, v, why + " (ranks in the communicator)");
      o->ranks = static_cast<int>(n);
      ranksGiven = true;
    } else if (a == "--nodes") {
      if (!cli::parseInt(v, 1, 1 << 16, &n, &why)) return badValue(kTool, a, v, why + " (nodes)");
      o->nodes = static_cast<int>(n);
    } else if (a == "--coll" || a == "-C") {
      o->funcs.clear();
      if (std::string(v) == "all") {
        for (int f = 0; f < kNumCollFuncs; ++f) o->funcs.push_back(static_cast<FuncId>(f));
        continue;
      }
      std::string list = v;
      for (size_t start = 0; start <= list.size();) {
        size_t comma = list.find(',', start);
        std::string name = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        FuncId f;
        if (!parseFunc(name, &f))
          return badValue(kTool, a, v, "'" + name + "' is not a collective (all_reduce, all_gather, reduce_scatter, "
                                       "broadcast, reduce, or all)");
        o->funcs.push_back(f);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (a == "-b" || a == "--minbytes" || a == "-e" || a == "--maxbytes") {
      size_t* out = (a == "-b" || a == "--minbytes") ? &o->minBytes : &o->maxBytes;
      if (!parseSize(v, out)) return badValue(kTool, a, v, "not a size (bytes, with an optional K, M or G suffix)");
    } else if (a == "-f" || a == "--stepfactor") {
      if (!cli::parsePositive(v, 1.0, &o->factor, &why)) return badValue(kTool, a, v, why + " (the size step factor)");
    } else if (a == "--channels") {
      if (!cli::parseInt(v, 1, 1024, &n, &why)) return badValue(kTool, a, v, why + " (channels per rank)");
      o->channels = static_cast<int>(n);
    } else if (a == "--cpus") {
      if (!cli::parseInt(v, 1, 1 << 16, &n, &why)) return badValue(kTool, a, v, why + " (cores)");
      o->cpus = static_cast<int>(n);
    }
  }
  if (o->minBytes > o->maxBytes)
    return cli::usageError(kTool, "-b %zu is larger than -e %zu", o->minBytes, o->maxBytes);
  if (ranksGiven) {
    std::string why = shapeProblem(o->ranks, o->nodes);
    if (!why.empty()) return cli::usageError(kTool, "%s", why.c_str());
  }
  return -1;
}

int cpusAvailable() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return 1;
}

ncclResult_t loadSystem(const Options& o, std::unique_ptr<TopoSystem>* out) {
  if (o.topoFile.empty()) return topoGetSystem(-1, out);
  std::unique_ptr<XmlNode> root;
  ncclResult_t res = xmlLoadFile(o.topoFile.c_str(), &root);
  if (res != ncclSuccess) return res;
  TopoPolicy policy;
  res = TopoPolicy::fromEnv(&policy);
  if (res != ncclSuccess) return res;
  return TopoSystem::fromXml(*root, policy, out);
}

const char* tunerAlgoName(int algo) { return algo == kAlgoOneShot ? "OneShot" : algoName(algo); }

std::string sizeText(size_t bytes) {
  char buf[32];
  if (bytes >= (size_t(1) << 30) && bytes % (size_t(1) << 30) == 0)
    std::snprintf(buf, sizeof(buf), "%zuG", bytes >> 30);
  else if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
    std::snprintf(buf, sizeof(buf), "%zuM", bytes >> 20);
  else if (bytes >= 1024 && bytes % 1024 == 0)
    std::snprintf(buf, sizeof(buf), "%zuK", bytes >> 10);
  else
    std::snprintf(buf, sizeof(buf), "%zu", bytes);
  return buf;
}

void printGraph(const char* label, const TopoGraph& g) {
  std::printf("# %s graph: %d channels, %.1f GB/s intra, %.1f GB/s inter, paths %s/%s, pattern %s\n", label,
              g.nChannels, g.bwIntra, g.bwInter, topoPathTypeName(g.typeIntra), topoPathTypeName(g.typeInter),
              graphPatternName(g.pattern));
}

void printFunc(const Tuner& tuner, FuncId func, const std::vector<size_t>& sizes) {
  std::printf("\n# %s\n", funcName(func));
  std::printf("# %9s  %-8s %-6s %4s %5s %11s %11s   %-16s %11s\n", "bytes", "algo", "proto", "ch", "thr",
              "time(us)", "algbw(GB/s)", "runner-up", "time(us)");
  for (size_t bytes : sizes) {
    TunerChoice c;
    if (tuner.choose(func, bytes, &c) != ncclSuccess) {
      std::printf("  %9s  error: %s\n", sizeText(bytes).c_str(), ncclGetLastError(nullptr));
      continue;
    }
    CostTable t;
    tuner.table(func, bytes, &t);
    int ra = -1, rp = -1;
    for (int a = 0; a < kNumTunerAlgos; ++a)
      for (int p = 0; p < kNumProtos; ++p) {
        if (t.us[a][p] < 0 || (a == c.algo && p == c.proto)) continue;
        if (ra < 0 || t.us[a][p] < t.us[ra][rp]) ra = a, rp = p;
      }
    double algbw = c.predictedUs > 0 ? double(bytes) / (c.predictedUs * 1e3) : 0;
    std::string runner = ra < 0 ? "-" : std::string(tunerAlgoName(ra)) + "/" + protoName(rp);
    char runnerTime[32] = "-";
    if (ra >= 0) std::snprintf(runnerTime, sizeof(runnerTime), "%.2f", t.us[ra][rp]);
    std::printf("  %9s  %-8s %-6s %4d %5d %11.2f %11.2f   %-16s %11s\n", sizeText(bytes).c_str(),
                tunerAlgoName(c.algo), protoName(c.proto), c.nChannels, c.nThreads, c.predictedUs, algbw,
                runner.c_str(), runnerTime);
  }
}

}  // namespace

int runTable(int argc, char** argv) {
  Options o;
  if (int rc = parseOptions(argc, argv, &o); rc >= 0) return rc;
  std::unique_ptr<TopoSystem> system;
  if (loadSystem(o, &system) != ncclSuccess) {
    std::fprintf(stderr, "accl-tune table: cannot load the topology: %s\n", ncclGetLastError(nullptr));
    return cli::kExitRunFailed;
  }
  const int gpus = system->count(TopoNodeType::Gpu);
  if (o.ranks == 0) o.ranks = std::max(2, std::max(1, gpus) * o.nodes);
  if (std::string why = shapeProblem(o.ranks, o.nodes); !why.empty())
    return cli::usageError(kTool, "%s", why.c_str());
  const bool host = o.host || gpus == 0;
  TunerTopo topo;
  if (tunerTopoFromSystem(*system, o.ranks, o.nodes, host, &topo) != ncclSuccess) {
    std::fprintf(stderr, "accl-tune table: %s\n", ncclGetLastError(nullptr));
    return cli::kExitRunFailed;
  }
  const std::string netName = tunerTopoSetNetFromSystem(*system, &topo);
  std::unique_ptr<CostModel> model;
  if (topo.host) {
    // As a host communicator builds it: channels are worker threads.
    topo.ring.nChannels = topo.tree.nChannels = o.channels;
    model = std::make_unique<HostCostModel>(topo, o.channels, o.cpus > 0 ? o.cpus : cpusAvailable(),
                                            loadHostCalibration());
  } else {
    model = std::make_unique<GpuCostModel>(topo);
  }
  AlgoProtoFilter filter;
  if (algoProtoFilterFromEnv(&filter) != ncclSuccess) {
    std::fprintf(stderr, "accl-tune table: %s\n", ncclGetLastError(nullptr));
    return cli::kExitUsage;  // NCCL_ALGO / NCCL_PROTO: a bad setting, named by the message
  }
  std::unique_ptr<Tuner> tuner;
  if (Tuner::create(topo, std::move(model), filter, /*commId=*/0, &tuner) != ncclSuccess) {
    std::fprintf(stderr, "accl-tune table: %s\n", ncclGetLastError(nullptr));
    return cli::kExitRunFailed;
  }

  std::printf("# accl-tune table: %s, %d ranks on %d node(s), %d per node\n",
              o.topoFile.empty() ? "this machine" : o.topoFile.c_str(), topo.nRanks, topo.nNodes, topo.ppn);
  std::printf("# backend %s, model %s, plugin %s", topo.host ? "host" : "CUDA", tuner->model().name(),
              tuner->pluginName() ? tuner->pluginName() : "none");
  if (!topo.host) std::printf(", sm %d, CPU %s, LL128 %s", topo.sm, topo.cpuVendor.c_str(),
                              topo.ll128Supported ? "supported" : "off unless NCCL_PROTO names it");
  std::printf("\n");
  std::string algoVar = paramStr("NCCL_ALGO"), protoVar = paramStr("NCCL_PROTO");
  if (!algoVar.empty() || !protoVar.empty())
    std::printf("# NCCL_ALGO=\"%s\" NCCL_PROTO=\"%s\"\n", algoVar.c_str(), protoVar.c_str());
  if (!netName.empty())
    std::printf("# network: %s, %.0f Mb/s (%.2f GB/s per node), latency %.1f us (the NIC nearest GPU 0 / CPU 0)\n",
                netName.c_str(), topo.netGBps * 8000.0, topo.netGBps, topo.netLatencyUs);
  printGraph("ring", topo.ring);
  printGraph("tree", topo.tree);
  std::vector<size_t> sizes = sizeRange(o.minBytes, o.maxBytes, o.factor);
  for (FuncId f : o.funcs) printFunc(*tuner, f, sizes);
  return 0;
}

}  // namespace accl::tune
