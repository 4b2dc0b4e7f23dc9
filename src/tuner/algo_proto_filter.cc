// NCCL_ALGO / NCCL_PROTO parsing into an AlgoProtoFilter (syntax and semantics in the header).
#include "tuner/algo_proto_filter.h"

#include <strings.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <vector>

#include "util/check.h"
#include "util/params.h"

namespace accl {
namespace {

constexpr const char* kAlgoNames[kNumTunerAlgos] = {"Tree", "Ring",     "CollNetDirect", "CollNetChain",
                                                    "NVLS", "NVLSTree", "PAT",           "OneShot"};
constexpr const char* kProtoNames[kNumProtos] = {"LL", "LL128", "Simple"};
constexpr const char* kFuncNames[kNumFilterFuncs] = {"Broadcast",     "Reduce",    "AllGather",
                                                     "ReduceScatter", "AllReduce", "SendRecv"};

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

bool equalsNoCase(std::string_view a, const char* b) {
  size_t n = std::strlen(b);
  return a.size() == n && strncasecmp(a.data(), b, n) == 0;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

// Messages quote at most this much of a token or value, so a huge value cannot swamp the log.
constexpr int kMaxQuoted = 200;
int quotedLen(std::string_view s) { return s.size() > (size_t)kMaxQuoted ? kMaxQuoted : (int)s.size(); }

// Reports a parse error: as a failure (WARN + ncclGetLastError) or, when `quiet` is given, only
// as text stored there (a caller that may fall back on its own decides whether it is an error).
ncclResult_t complain(std::string* quiet, ncclResult_t code, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
ncclResult_t complain(std::string* quiet, ncclResult_t code, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (quiet) {
    *quiet = msg;
    return code;
  }
  return fail(code, "%s", msg);
}

// What one variable selects among: the element names and where its bits live in the filter.
struct ListKind {
  const char* const* names;
  int count;
  const char* what;  // "algorithm" / "protocol"
};

// Parses `value` and applies it to bits[0..kNumCollFuncs); `touched` gets bit f for every function
// an entry assigned. Works on copies; the caller commits on success.
ncclResult_t applyList(const char* varName, std::string_view value, const ListKind& kind,
                       uint32_t bits[kNumFilterFuncs], uint32_t* touched, std::string* quiet) {
  bool firstEntry = true;
  for (std::string_view rawEntry : split(value, ';')) {
    std::string_view entry = trim(rawEntry);
    if (entry.empty()) continue;  // "ring;" and ";;" are fine, as in NCCL

    // Which functions this entry assigns.
    uint32_t funcs = 0;
    std::string_view list = entry;
    size_t colon = entry.find(':');
    if (colon == std::string_view::npos) {
      if (!firstEntry) {
        return complain(quiet, ncclInvalidUsage,
                        "%s=\"%.*s\": only the first entry may omit the function prefix, \"%.*s\" has none", varName,
                        quotedLen(value), value.data(), quotedLen(entry), entry.data());
      }
      funcs = (1u << kNumCollFuncs) - 1;
    } else {
      std::string_view prefix = trim(entry.substr(0, colon));
      list = entry.substr(colon + 1);
      if (list.find(':') != std::string_view::npos) {
        return complain(quiet, ncclInvalidUsage, "%s=\"%.*s\": entry \"%.*s\" has more than one ':'", varName,
                        quotedLen(value), value.data(), quotedLen(entry), entry.data());
      }
      if (prefix.empty()) {
        return complain(quiet, ncclInvalidUsage, "%s=\"%.*s\": entry \"%.*s\" has an empty function name before ':'",
                        varName, quotedLen(value), value.data(), quotedLen(entry), entry.data());
      }
      for (int f = 0; f < kNumCollFuncs; ++f)
        if (equalsNoCase(prefix, kFuncNames[f])) funcs = 1u << f;
      if (funcs == 0) {
        return complain(quiet, ncclInvalidUsage,
                        "%s: unknown function prefix \"%.*s\" (expected Broadcast, Reduce, AllGather, ReduceScatter or "
                        "AllReduce)",
                        varName, quotedLen(prefix), prefix.data());
      }
    }
    firstEntry = false;

    list = trim(list);
    bool negate = !list.empty() && list[0] == '^';
    if (negate) list = trim(list.substr(1));
    uint32_t named = 0;
    for (std::string_view rawItem : split(list, ',')) {
      std::string_view item = trim(rawItem);
      if (item.empty()) continue;
      int found = -1;
      for (int e = 0; e < kind.count; ++e)
        if (equalsNoCase(item, kind.names[e])) found = e;
      if (found < 0) {
        std::string expected;
        for (int e = 0; e < kind.count; ++e) expected += (e ? ", " : "") + std::string(kind.names[e]);
        return complain(quiet, ncclInvalidUsage, "%s: unknown %s \"%.*s\" (expected one of %s)", varName, kind.what,
                        quotedLen(item), item.data(), expected.c_str());
      }
      named |= 1u << found;
    }
    if (!negate && named == 0) {
      return complain(quiet, ncclInvalidUsage, "%s=\"%.*s\": entry \"%.*s\" lists no %s", varName, quotedLen(value),
                      value.data(), quotedLen(entry), entry.data(), kind.what);
    }

    uint32_t all = (1u << kind.count) - 1;
    uint32_t selected = negate ? (all & ~named) : named;
    for (int f = 0; f < kNumCollFuncs; ++f)
      if (funcs & (1u << f)) bits[f] = selected;
    *touched |= funcs;
  }
  return ncclSuccess;
}

}  // namespace

namespace {
int indexOf(std::string_view name, const char* const* names, int count) {
  for (int i = 0; i < count; ++i)
    if (equalsNoCase(name, names[i])) return i;
  return -1;
}
}  // namespace

int algoIndex(std::string_view name) { return indexOf(name, kAlgoNames, kNumTunerAlgos); }
int protoIndex(std::string_view name) { return indexOf(name, kProtoNames, kNumProtos); }
int collFuncIndex(std::string_view name) { return indexOf(name, kFuncNames, kNumCollFuncs); }

const char* algoName(int algo) { return algo >= 0 && algo < kNumTunerAlgos ? kAlgoNames[algo] : "Unknown"; }
const char* protoName(int proto) { return proto >= 0 && proto < kNumProtos ? kProtoNames[proto] : "Unknown"; }
const char* funcName(int func) { return func >= 0 && func < kNumFilterFuncs ? kFuncNames[func] : "Unknown"; }

AlgoProtoFilter defaultAlgoProtoFilter() {
  AlgoProtoFilter f;
  for (int i = 0; i < kNumFilterFuncs; ++i) {
    f.algos[i] = kAllAlgosMask;
    f.protos[i] = kAllProtosMask;
    // Point-to-point is outside NCCL_PROTO's reach, so nothing there is left to the LL128 default.
    f.protoAuto[i] = i < kNumCollFuncs ? (1u << kProtoLL128) : 0;
  }
  return f;
}

ncclResult_t applyAlgoList(const char* varName, std::string_view value, AlgoProtoFilter* filter,
                           std::string* quietError) {
  static const ListKind kind{kAlgoNames, kNumTunerAlgos, "algorithm"};
  uint32_t bits[kNumFilterFuncs];
  std::memcpy(bits, filter->algos, sizeof(bits));
  uint32_t touched = 0;
  if (quietError) {
    ncclResult_t res = applyList(varName, value, kind, bits, &touched, quietError);
    if (res != ncclSuccess) return res;
  } else {
    ACCL_CHECK(applyList(varName, value, kind, bits, &touched, nullptr));
  }
  std::memcpy(filter->algos, bits, sizeof(bits));
  return ncclSuccess;
}

ncclResult_t applyProtoList(const char* varName, std::string_view value, AlgoProtoFilter* filter) {
  static const ListKind kind{kProtoNames, kNumProtos, "protocol"};
  uint32_t bits[kNumFilterFuncs];
  std::memcpy(bits, filter->protos, sizeof(bits));
  uint32_t touched = 0;
  ACCL_CHECK(applyList(varName, value, kind, bits, &touched, nullptr));
  std::memcpy(filter->protos, bits, sizeof(bits));
  // A function the user assigned is no longer left to the topology's LL128 default.
  for (int f = 0; f < kNumCollFuncs; ++f)
    if (touched & (1u << f)) filter->protoAuto[f] = 0;
  return ncclSuccess;
}

ncclResult_t parseAlgoProtoFilter(const char* algo, const char* proto, AlgoProtoFilter* out) {
  AlgoProtoFilter f = defaultAlgoProtoFilter();
  if (proto) {
    ACCL_CHECK(applyProtoList("NCCL_PROTO", proto, &f));
    f.protoSet = true;
  }
  if (algo) {
    ACCL_CHECK(applyAlgoList("NCCL_ALGO", algo, &f));
    f.algoSet = true;
  }
  *out = f;
  return ncclSuccess;
}

ncclResult_t algoProtoFilterFromEnv(AlgoProtoFilter* out) {
  bool algoSet = std::strcmp(paramSource("NCCL_ALGO"), "default") != 0;
  bool protoSet = std::strcmp(paramSource("NCCL_PROTO"), "default") != 0;
  std::string algo = paramStr("NCCL_ALGO");
  std::string proto = paramStr("NCCL_PROTO");
  if (protoSet) ACCL_INFO(ACCL_LOG_ENV, "NCCL_PROTO set by environment to %s", proto.c_str());
  if (algoSet) ACCL_INFO(ACCL_LOG_ENV, "NCCL_ALGO set by environment to %s", algo.c_str());
  ACCL_CHECK(parseAlgoProtoFilter(algoSet ? algo.c_str() : nullptr, protoSet ? proto.c_str() : nullptr, out));
  return ncclSuccess;
}

std::string formatAlgoProtoFilter(const AlgoProtoFilter& filter) {
  std::string out;
  char cell[64];
  std::snprintf(cell, sizeof(cell), "%13s |", "Function");
  out += cell;
  for (int p = 0; p < kNumProtos; ++p) {
    std::snprintf(cell, sizeof(cell), " %7s", kProtoNames[p]);
    out += cell;
  }
  out += " |";
  for (int a = 0; a < kNumTunerAlgos; ++a) {
    std::snprintf(cell, sizeof(cell), " %13s", kAlgoNames[a]);
    out += cell;
  }
  out += "\n";
  for (int f = 0; f < kNumFilterFuncs; ++f) {
    std::snprintf(cell, sizeof(cell), "%13s |", kFuncNames[f]);
    out += cell;
    for (int p = 0; p < kNumProtos; ++p) {
      const char* v = !filter.allowsProto(f, p) ? "0" : filter.protoIsAuto(f, p) ? "auto" : "1";
      std::snprintf(cell, sizeof(cell), " %7s", v);
      out += cell;
    }
    out += " |";
    for (int a = 0; a < kNumTunerAlgos; ++a) {
      std::snprintf(cell, sizeof(cell), " %13d", filter.allowsAlgo(f, a) ? 1 : 0);
      out += cell;
    }
    out += "\n";
  }
  return out;
}

}  // namespace accl
