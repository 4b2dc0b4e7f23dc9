// AlgoProtoFilter: which algorithms and protocols the user allows per collective, parsed from
// NCCL_ALGO and NCCL_PROTO with NCCL's syntax (NCCL 2.24+, unchanged through 2.28). Also the
// algorithm / protocol / function indices and names the tuner shares with NCCL.
//
// Syntax of both variables:  [func:]list[;func:list]...
//   * `list` is a comma-separated list of names, matched case-insensitively. A leading '^' turns it
//     into "everything except these"; "^" alone means everything.
//   * `func` is one of Broadcast, Reduce, AllGather, ReduceScatter, AllReduce (case-insensitive).
//     An entry without a prefix applies to all five; only the first entry may omit the prefix
//     (a later one would overwrite everything before it).
//   * Entries are applied left to right; each one first resets its functions' selection, so
//     "^LL128;allreduce:LL128" means: every collective uses anything but LL128, except AllReduce,
//     which may only use LL128.
//   * Names: algorithms Tree Ring CollNetDirect CollNetChain NVLS NVLSTree PAT; protocols LL LL128
//     Simple, plus accl's host-only OneShot (a one-round all-reduce; bit kAlgoOneShot). So
//     NCCL_ALGO=ring rules OneShot out, as it rules out Tree. An unknown name or prefix is an error (ncclInvalidUsage, as in NCCL) naming the
//     variable and the token.
// accl is slightly more forgiving than NCCL about layout and slightly stricter about junk:
// whitespace around names, prefixes and separators is ignored, and empty entries / empty list items
// are skipped (as NCCL does); but an entry with two ':' or an empty prefix (":ring"), or a
// prefix with an empty, non-negated list ("allreduce:"), is an error instead of being misread.
//
// SendRecv (and the other point-to-point functions) are not filtered by these variables in NCCL:
// the SendRecv row of the result always allows everything.
//
// LL128 is special: by default it is enabled only where the topology supports it (the tuner decides),
// but a user who mentions a function in NCCL_PROTO forces the decision: listing LL128 (or negating a
// list that omits it) enables it unconditionally for that function. `protoAuto` carries this.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "device/common/ids.h"
#include "nccl.h"

namespace accl {

inline constexpr uint32_t kAllAlgosMask = (1u << kNumTunerAlgos) - 1;  // NCCL's seven + OneShot
inline constexpr uint32_t kAllProtosMask = (1u << kNumProtos) - 1;

// NCCL's spelling of each name ("Tree", "CollNetDirect", "LL128", "AllReduce", "SendRecv", ...).
const char* algoName(int algo);
const char* protoName(int proto);
const char* funcName(int func);
// The reverse, case-insensitive: the index of an algorithm (OneShot included), protocol or
// collective function (the five NCCL_ALGO prefixes) named `name`, or -1.
int algoIndex(std::string_view name);
int protoIndex(std::string_view name);
int collFuncIndex(std::string_view name);

struct AlgoProtoFilter {
  // Bit a of algos[f]: algorithm a may be used for function f.
  uint32_t algos[kNumFilterFuncs];
  // Bit p of protos[f]: protocol p may be used for function f.
  uint32_t protos[kNumFilterFuncs];
  // Bits of protos[f] that are only allowed where the topology supports them by default (LL128
  // while the user has not mentioned f in NCCL_PROTO). Always a subset of protos[f].
  uint32_t protoAuto[kNumFilterFuncs];
  // Whether NCCL_ALGO / NCCL_PROTO were given (decides, later, whether "nothing is selectable" is the
  // user's fault, ncclInvalidUsage, or ours, ncclInternalError).
  bool algoSet = false;
  bool protoSet = false;

  bool allowsAlgo(int func, int algo) const { return (algos[func] >> algo) & 1u; }
  bool allowsProto(int func, int proto) const { return (protos[func] >> proto) & 1u; }
  bool protoIsAuto(int func, int proto) const { return (protoAuto[func] >> proto) & 1u; }
};

// Everything allowed; LL128 left to the topology for every function.
AlgoProtoFilter defaultAlgoProtoFilter();

// Applies one NCCL_ALGO / NCCL_PROTO value on top of *filter (which is left unchanged on error).
// `varName` only names the variable in messages. An empty value changes nothing. With
// `quietError`, a value that does not parse is reported only there (no WARN, no last error): the
// per-call algSelection of the nccl*Config collectives may fall back instead of failing.
ncclResult_t applyAlgoList(const char* varName, std::string_view value, AlgoProtoFilter* filter,
                           std::string* quietError = nullptr);
ncclResult_t applyProtoList(const char* varName, std::string_view value, AlgoProtoFilter* filter);

// The pure entry point: the default filter with NCCL_ALGO = `algo` and NCCL_PROTO = `proto` applied
// (nullptr = the variable is unset).
ncclResult_t parseAlgoProtoFilter(const char* algo, const char* proto, AlgoProtoFilter* out);

// Reads NCCL_ALGO and NCCL_PROTO through the settings registry (environment / nccl.conf).
ncclResult_t algoProtoFilterFromEnv(AlgoProtoFilter* out);

// A table of the filter, one row per function (for the INFO log and accl-info), e.g.
//          Function |       LL    LL128   Simple |  Tree  Ring  CollNetDirect ...
//         AllReduce |        1     auto        1 |     1     1              1 ...
std::string formatAlgoProtoFilter(const AlgoProtoFilter& filter);

}  // namespace accl
