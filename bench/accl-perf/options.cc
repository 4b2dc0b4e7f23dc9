// Command-line parsing for accl-perf (flags follow nccl-tests; see options.h for the two differences).
#include "options.h"

#include <getopt.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace accl::bench {
namespace {

// A whole integer (strtol base 0: 0x.. works) in [lo, hi]; on failure *why says what is wrong.
bool parseInt(const char* text, long lo, long hi, long* out, std::string* why) {
  if (text == nullptr || *text == '\0') {
    *why = "an integer is needed";
    return false;
  }
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 0);
  if (end == text || *end != '\0') {
    *why = "not an integer";
    return false;
  }
  if (errno == ERANGE || v < lo || v > hi) {
    *why = lo == hi ? "must be " + std::to_string(lo)
                    : "must be between " + std::to_string(lo) + " and " + std::to_string(hi);
    return false;
  }
  *out = v;
  return true;
}

const char* kSizeReason = "not a size (bytes, with an optional K, M or G suffix, 1024-based)";

std::string baseName(const char* path) {
  std::string_view p(path ? path : "");
  size_t slash = p.rfind('/');
  return std::string(slash == std::string_view::npos ? p : p.substr(slash + 1));
}

// "all_reduce_perf", "all_reduce_perf_mpi", ... -> the collective.
const CollInfo* collFromProgram(const std::string& name) {
  size_t pos = name.find("_perf");
  if (pos == std::string::npos) return nullptr;
  return findColl(std::string_view(name).substr(0, pos));
}

}  // namespace

bool parseSize(const char* text, size_t* out) {
  if (text == nullptr) return false;
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (end == text || !std::isfinite(v) || v < 0) return false;
  while (*end == ' ') ++end;
  double unit = 1;
  if (*end != '\0') {
    switch (*end) {
      case 'K': case 'k': unit = 1024.0; break;
      case 'M': case 'm': unit = 1024.0 * 1024.0; break;
      case 'G': case 'g': unit = 1024.0 * 1024.0 * 1024.0; break;
      default: return false;
    }
    ++end;
    if (*end == 'B' || *end == 'b') ++end;  // "32MB" reads as 32M
    if (*end != '\0') return false;
  }
  *out = (size_t)(v * unit);
  return true;
}

void printUsage(const char* program) {
  std::printf(
      "USAGE: %s [options]\n"
      "  accl's nccl-tests-compatible collective benchmark (public NCCL API only).\n"
      "  -C,--collective <name>     all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv\n"
      "                             gather scatter (default all_reduce, or from the program name, e.g.\n"
      "                             all_reduce_perf); -C 0/1 keeps nccl-tests' meaning (report CPU time)\n"
      "  -b,--minbytes <size>       smallest message (K/M/G suffixes, 1024-based; default 32M)\n"
      "  -e,--maxbytes <size>       largest message (default 32M)\n"
      "  -i,--stepbytes <size>      additive step (default 1M)\n"
      "  -f,--stepfactor <n>        multiplicative step, wins when > 1\n"
      "  -n,--iters <n>             timed iterations per size (default 20)\n"
      "  -w,--warmup_iters <n>      warmup iterations per size (default 1)\n"
      "  -m,--agg_iters <n>         calls aggregated in one ncclGroupStart/End (default 1)\n"
      "  -c,--check <n>             checked iterations per result (default 1; 0: #wrong is N/A)\n"
      "  -o,--op <op>               sum prod min max avg mulsum all (default sum)\n"
      "  -d,--datatype <type>       int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3\n"
      "                             f8e5m2 all (default float)\n"
      "  -r,--root <rank|all>       root of rooted collectives (default 0; all or -1: every rank in turn)\n"
      "  -a,--average <0-3>         time across ranks: 0 rank 0, 1 mean (default), 2 min, 3 max\n"
      "  -z,--blocking <0-3>        CUDA: synchronize after every call (host backend: calls block anyway)\n"
      "  -y,--stream_null <0/1>     CUDA: use the default stream\n"
      "  -G,--cudagraph <n>         CUDA: capture the timed loop in a graph, replay n times\n"
      "  -R,--local_register <0-2>  1: ncclCommRegister the buffers, 2: ncclCommWindowRegister (symmetric)\n"
      "  -x,--cta_policy <0-2>      sets ncclConfig_t.CTAPolicy\n"
      "     --coll-config <sel>     call the nccl*Config variants with algSelection <sel> (NCCL_ALGO syntax,\n"
      "                             e.g. ring, tree, ^tree, allreduce:tree); auto: no selection; null: pass\n"
      "                             a NULL config. sendrecv has no Config variant and stays plain\n"
      "     --coll-min-ctas <n>     ncclCollConfig_t.minCTAs (channel bounds of each call; implies Config)\n"
      "     --coll-max-ctas <n>     ncclCollConfig_t.maxCTAs\n"
      "     --coll-force <0/1>      ncclCollConfig_t.forceAlgSelection (default 1)\n"
      "     --coll-tag <n>          ncclCollConfig_t.userProfilerTag of every call, for profiler plugins\n"
      "  -u,--unalign <n>           misalign the buffers by n elements\n"
      "  -J,--output_file|--json <file.json>  also write the results as JSON\n"
      "  -t,--nthreads <n>          ranks as threads per process (each thread one rank and communicator)\n"
      "  -g,--ngpus <n>             same as -t here (ranks per process = t*g)\n"
      "  -N,--nprocs <n>            run n forked local processes (one rank each, times t*g)\n"
      "     --run_cycles <n>        repeat the sweep n times (nccl-tests' -N)\n"
      "  -T,--timeout <s>           give up when no progress for s seconds (default 600 plus an\n"
      "                             allowance for the message size)\n"
      "     --selftest              check the data-check logic against an in-process reference (no library)\n"
      "  -h,--help\n"
      "  Under mpirun (OMPI_COMM_WORLD_* or PMI_* in the environment) each process runs t*g ranks and the\n"
      "  processes meet through a file in $ACCL_PERF_RDV_DIR (default /tmp) and TCP on 127.0.0.1.\n"
      "  Without a GPU (or with ACCL_BACKEND=host) ranks use the host backend.\n"
      "Exit status (docs/tools.md): 0 ok; 1 the run failed (also a CUDA runtime error); 2 bad usage (a bad\n"
      "  option, value or size, named with the reason; nccl-tests: 6 / 255); and nccl-tests' codes for failed\n"
      "  runs: 3 library error or a rank died, 4 timeout, 5 not implemented, 7 wrong data.\n",
      program);
}

int parseOptions(int argc, char** argv, Options* o, std::string* error) {
  *o = Options{};
  o->types = {findType("float")};
  std::string prog = baseName(argc > 0 ? argv[0] : "accl-perf");
  if (const CollInfo* c = collFromProgram(prog)) {
    o->coll = c->id;
    o->collFromName = true;
  }
  o->programName = std::string(collInfo(o->coll).name) + "_perf";

  enum {
    kOptRunCycles = 1000,
    kOptSelftest,
    kOptJson,
    kOptCollConfig,
    kOptCollMinCtas,
    kOptCollMaxCtas,
    kOptCollForce,
    kOptCollTag
  };
  static const struct option kLong[] = {
      {"nthreads", required_argument, nullptr, 't'},
      {"ngpus", required_argument, nullptr, 'g'},
      {"minbytes", required_argument, nullptr, 'b'},
      {"maxbytes", required_argument, nullptr, 'e'},
      {"stepbytes", required_argument, nullptr, 'i'},
      {"stepfactor", required_argument, nullptr, 'f'},
      {"iters", required_argument, nullptr, 'n'},
      {"agg_iters", required_argument, nullptr, 'm'},
      {"warmup_iters", required_argument, nullptr, 'w'},
      {"nprocs", required_argument, nullptr, 'N'},
      {"run_cycles", required_argument, nullptr, kOptRunCycles},
      {"parallel_init", required_argument, nullptr, 'p'},
      {"check", required_argument, nullptr, 'c'},
      {"op", required_argument, nullptr, 'o'},
      {"datatype", required_argument, nullptr, 'd'},
      {"root", required_argument, nullptr, 'r'},
      {"blocking", required_argument, nullptr, 'z'},
      {"stream_null", required_argument, nullptr, 'y'},
      {"timeout", required_argument, nullptr, 'T'},
      {"cudagraph", required_argument, nullptr, 'G'},
      {"collective", required_argument, nullptr, 'C'},
      {"report_cputime", required_argument, nullptr, 'C'},
      {"report_timestamps", required_argument, nullptr, 'S'},
      {"output_file", required_argument, nullptr, 'J'},
      {"json", required_argument, nullptr, kOptJson},
      {"average", required_argument, nullptr, 'a'},
      {"local_register", required_argument, nullptr, 'R'},
      {"cta_policy", required_argument, nullptr, 'x'},
      {"device_implementation", required_argument, nullptr, 'D'},
      {"device_cta_count", required_argument, nullptr, 'V'},
      {"memory", required_argument, nullptr, 'M'},
      {"unalign", required_argument, nullptr, 'u'},
      {"per_iter_timing", required_argument, nullptr, 'I'},
      {"per_iter_skip", required_argument, nullptr, 'K'},
      {"selftest", no_argument, nullptr, kOptSelftest},
      {"coll-config", required_argument, nullptr, kOptCollConfig},
      {"coll-min-ctas", required_argument, nullptr, kOptCollMinCtas},
      {"coll-max-ctas", required_argument, nullptr, kOptCollMaxCtas},
      {"coll-force", required_argument, nullptr, kOptCollForce},
      {"coll-tag", required_argument, nullptr, kOptCollTag},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  optind = 0;  // restart getopt (GNU: also resets its internal state), so parsing can run more than once
  opterr = 0;
  // "bad value 'VALUE' for OPTION: REASON", as every accl tool words it (tools/common/cli.h).
  auto bad = [&](const char* what, const char* value, const std::string& reason) {
    *error = std::string("bad value '") + (value ? value : "") + "' for " + what + ": " + reason;
    return (int)kExitInvalidUsage;
  };
  long v = 0;
  std::string why;
  for (;;) {
    int c = getopt_long(argc, argv, "t:g:b:e:i:f:n:m:w:N:p:c:o:d:r:z:y:T:G:C:S:J:a:R:x:D:V:M:u:I:K:h", kLong,
                        nullptr);
    if (c == -1) break;
    switch (c) {
      case 't':
        if (!parseInt(optarg, 1, 4096, &v, &why)) return bad("-t (threads)", optarg, why);
        o->threads = (int)v;
        break;
      case 'g':
        if (!parseInt(optarg, 1, 4096, &v, &why)) return bad("-g (ranks per process)", optarg, why);
        o->gpus = (int)v;
        break;
      case 'b':
        if (!parseSize(optarg, &o->minBytes)) return bad("-b (minbytes)", optarg, kSizeReason);
        break;
      case 'e':
        if (!parseSize(optarg, &o->maxBytes)) return bad("-e (maxbytes)", optarg, kSizeReason);
        break;
      case 'i':
        if (!parseSize(optarg, &o->stepBytes)) return bad("-i (stepbytes)", optarg, kSizeReason);
        break;
      case 'f':
        if (!parseInt(optarg, 0, 1 << 30, &v, &why)) return bad("-f (step factor)", optarg, why);
        o->stepFactor = (size_t)v;
        break;
      case 'n':
        if (!parseInt(optarg, 1, 1 << 30, &v, &why)) return bad("-n (iterations)", optarg, why);
        o->iters = (int)v;
        break;
      case 'w':
        if (!parseInt(optarg, 0, 1 << 30, &v, &why)) return bad("-w (warmup iterations)", optarg, why);
        o->warmupIters = (int)v;
        break;
      case 'm':
        if (!parseInt(optarg, 1, 1 << 20, &v, &why)) return bad("-m (aggregated iterations)", optarg, why);
        o->aggIters = (int)v;
        break;
      case 'N':
        if (!parseInt(optarg, 1, 4096, &v, &why)) return bad("-N (processes)", optarg, why);
        o->procs = (int)v;
        break;
      case kOptRunCycles:
        if (!parseInt(optarg, 1, 1 << 30, &v, &why)) return bad("--run_cycles", optarg, why);
        o->runCycles = (int)v;
        break;
      case 'p':
        if (!parseInt(optarg, 0, 1, &v, &why)) return bad("-p (parallel init)", optarg, why);
        if (v) o->notes.push_back("-p 1: every rank thread initializes its own communicator anyway");
        break;
      case 'c':
        if (!parseInt(optarg, 0, 1 << 20, &v, &why)) return bad("-c (check iterations)", optarg, why);
        o->checks = (int)v;
        break;
      case 'o':
        if (!std::strcmp(optarg, "all")) {
          o->ops.clear();
          for (const OpInfo& op : allOps()) o->ops.push_back(op.id);
        } else if (const OpInfo* op = findOp(optarg)) {
          o->ops = {op->id};
        } else {
          return bad("-o (op)", optarg, "not an operator (sum prod min max avg mulsum all)");
        }
        break;
      case 'd':
        if (!std::strcmp(optarg, "all")) {
          o->types.clear();
          for (const TypeInfo& t : allTypes()) o->types.push_back(&t);
        } else if (const TypeInfo* t = findType(optarg)) {
          o->types = {t};
        } else {
          return bad("-d (datatype)", optarg,
                     "not a datatype (int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 "
                     "f8e5m2 all)");
        }
        break;
      case 'r':
        if (!std::strcmp(optarg, "all") || !std::strcmp(optarg, "-1")) {
          o->allRoots = true;
        } else if (parseInt(optarg, 0, 1 << 20, &v, &why)) {
          o->root = (int)v;
          o->allRoots = false;
        } else {
          return bad("-r (root)", optarg, "not a rank (0, 1, ...) nor all / -1");
        }
        break;
      case 'z':
        if (!parseInt(optarg, 0, 3, &v, &why)) return bad("-z (blocking)", optarg, why);
        o->blocking = (int)v;
        break;
      case 'y':
        if (!parseInt(optarg, 0, 1, &v, &why)) return bad("-y (stream null)", optarg, why);
        o->streamNull = (int)v;
        break;
      case 'T': {
        char* end = nullptr;
        double t = std::strtod(optarg, &end);
        if (end == optarg || *end != '\0' || !(t > 0))
          return bad("-T (timeout)", optarg, "must be a number of seconds greater than 0");
        o->timeoutSec = t;
        o->timeoutGiven = true;
        break;
      }
      case 'G':
        if (!parseInt(optarg, 0, 1 << 20, &v, &why)) return bad("-G (graph launches)", optarg, why);
        o->graphLaunches = (int)v;
        break;
      case 'C':
        if (parseInt(optarg, 0, 1, &v, &why)) {
          o->reportCpuTime = (int)v;  // nccl-tests' -C 0/1
        } else if (const CollInfo* coll = findColl(optarg)) {
          o->coll = coll->id;
          o->programName = std::string(coll->name) + "_perf";
        } else {
          return bad("-C (collective)", optarg,
                     "not a collective (all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv "
                     "gather scatter), nor 0/1 (nccl-tests' report_cputime)");
        }
        break;
      case 'S':
        if (!parseInt(optarg, 0, 1, &v, &why)) return bad("-S (timestamps)", optarg, why);
        if (v) o->notes.push_back("-S (timestamps) is not implemented; ignored");
        break;
      case 'J':
      case kOptJson:
        o->jsonPath = optarg;
        break;
      case 'a':
        if (!parseInt(optarg, 0, 3, &v, &why)) return bad("-a (average mode 0-3)", optarg, why);
        o->average = (int)v;
        break;
      case 'R':
        if (!parseInt(optarg, 0, 2, &v, &why)) return bad("-R (register 0-2)", optarg, why);
        o->localRegister = (int)v;
        break;
      case 'x':
        if (!parseInt(optarg, 0, 2, &v, &why)) return bad("-x (CTA policy 0-2)", optarg, why);
        o->ctaPolicy = (int)v;
        break;
      case 'D':
        if (!parseInt(optarg, 0, 16, &v, &why)) return bad("-D (device implementation)", optarg, why);
        if (v) {
          *error = "-D (device-API implementations) is not implemented by accl-perf";
          return kExitNotImplemented;
        }
        break;
      case 'V':
        if (!parseInt(optarg, 1, 128, &v, &why)) return bad("-V (device CTA count)", optarg, why);
        break;
      case 'M':
        if (!parseInt(optarg, 0, 1, &v, &why)) return bad("-M (memory report)", optarg, why);
        if (v) o->notes.push_back("-M (memory report) is not implemented; ignored");
        break;
      case 'u':
        if (!parseInt(optarg, 0, 1 << 20, &v, &why)) return bad("-u (unalign elements)", optarg, why);
        o->unalign = (int)v;
        break;
      case 'I':
        if (!parseInt(optarg, 0, 1, &v, &why)) return bad("-I (per-iteration timing)", optarg, why);
        if (v) o->notes.push_back("-I (per-iteration timing) is not implemented; ignored");
        break;
      case 'K':
        if (!parseInt(optarg, 0, 1 << 30, &v, &why)) return bad("-K (per-iteration skip)", optarg, why);
        break;
      case kOptSelftest:
        o->selftest = true;
        break;
      case kOptCollConfig:
        o->collConfig = true;
        o->collConfigNull = std::string(optarg) == "null";
        o->algSelection = o->collConfigNull || std::string(optarg) == "auto" ? "" : optarg;
        break;
      case kOptCollMinCtas:
      case kOptCollMaxCtas:
        // Range checks are the library's (it names the field); only integers are checked here.
        if (!parseInt(optarg, 1, 1 << 20, &v, &why))
          return bad(c == kOptCollMinCtas ? "--coll-min-ctas" : "--coll-max-ctas", optarg, why);
        (c == kOptCollMinCtas ? o->collMinCtas : o->collMaxCtas) = (int)v;
        o->collConfig = true;
        break;
      case kOptCollForce:
        if (!parseInt(optarg, 0, 1, &v, &why)) return bad("--coll-force (0/1)", optarg, why);
        o->collForce = (int)v;
        o->collConfig = true;
        break;
      case kOptCollTag: {
        // The top bit is NCCL's (reserved): the library says so, as it does for every other field.
        char* end = nullptr;
        errno = 0;
        const unsigned long long tag = std::strtoull(optarg, &end, 0);
        if (errno != 0 || end == optarg || *end != '\0' || optarg[0] == '-')
          return bad("--coll-tag", optarg, "must be an unsigned 64-bit integer");
        o->collTag = tag;
        o->collConfig = true;
        break;
      }
      case 'h':
        o->help = true;
        break;
      default: {
        // optopt: 0 for an unknown long option, the letter (or a long option's value) otherwise;
        // getopt returns '?' for unknown letters and for known ones missing their value.
        const char* given = argv[optind - 1];
        const bool shortKnown = optopt > 0 && optopt < 128 && std::strchr("tgbeifnmwNpcodrzyTGCSJaRxDVMuIK", optopt);
        char opt[3] = {'-', (char)optopt, 0};
        if (optopt >= kOptRunCycles || (optopt > 0 && given[0] == '-' && given[1] == '-'))
          *error = std::string("option ") + given + " needs a value";
        else if (shortKnown)
          *error = std::string("option ") + opt + " needs a value";
        else
          *error = std::string("unknown option '") + (optopt ? opt : given) + "'";
        return kExitInvalidUsage;
      }
    }
  }
  if (optind < argc) {
    *error = std::string("unexpected argument: ") + argv[optind];
    return kExitInvalidUsage;
  }
  if (o->help) {
    printUsage(prog.c_str());
    return kExitOk;
  }
  if (o->collConfig && o->coll == CollId::kSendRecv)
    o->notes.push_back("--coll-*: sendrecv has no Config variant; plain ncclSend/ncclRecv used");
  if (o->minBytes > o->maxBytes) {
    *error = "bad sizes: -b (minbytes) " + std::to_string(o->minBytes) + " is larger than -e (maxbytes) " +
             std::to_string(o->maxBytes);
    return kExitInvalidUsage;
  }
  if (o->stepFactor > 1 && o->minBytes == 0 && o->maxBytes > 0) {
    *error = "bad sizes: a step factor (-f " + std::to_string(o->stepFactor) +
             ") needs -b (minbytes) > 0: 0 times the factor never grows";
    return kExitInvalidUsage;
  }
  if (o->stepFactor <= 1 && o->stepBytes == 0 && o->minBytes != o->maxBytes) {
    *error = "bad sizes: -i (stepbytes) 0 with -b " + std::to_string(o->minBytes) + " != -e " +
             std::to_string(o->maxBytes) + " and no step factor (-f): the sweep would never advance";
    return kExitInvalidUsage;
  }
  return -1;
}

std::vector<size_t> sweepSizes(const Options& o) {
  std::vector<size_t> sizes;
  for (size_t s = o.minBytes; s <= o.maxBytes;) {
    sizes.push_back(s);
    size_t next = o.stepFactor > 1 ? s * o.stepFactor : s + o.stepBytes;
    if (next <= s) break;  // 0 with a factor, or overflow
    s = next;
  }
  return sizes;
}

std::vector<size_t> warmupSizes(const Options& o) {
  std::vector<size_t> sizes;
  for (size_t s = o.minBytes; s <= o.maxBytes;) {
    sizes.push_back(s);
    if (s == 0 || s * 2 <= s) break;
    s *= 2;
  }
  return sizes;
}

}  // namespace accl::bench
