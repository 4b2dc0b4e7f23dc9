// Fuzz target: the NCCL_ALGO / NCCL_PROTO parser (tuner/algo_proto_filter.h).
// Input: "ALGO\nPROTO" (text before the first newline is NCCL_ALGO, after it NCCL_PROTO; without a
// newline only NCCL_ALGO is set). Besides memory safety it checks that a parse that succeeds stays
// within the masks, keeps protoAuto within protos and SendRecv unfiltered; that the quiet and the
// logging entry points agree; that a failed apply leaves the filter unchanged; and that the parse
// is case-insensitive (upper-casing the input changes nothing).
#include <cctype>
#include <cstring>
#include <string>

#include "fuzz_target.h"
#include "tuner/algo_proto_filter.h"

using namespace accl;

namespace {

bool sameFilter(const AlgoProtoFilter& a, const AlgoProtoFilter& b) {
  return std::memcmp(a.algos, b.algos, sizeof(a.algos)) == 0 && std::memcmp(a.protos, b.protos, sizeof(a.protos)) == 0 &&
         std::memcmp(a.protoAuto, b.protoAuto, sizeof(a.protoAuto)) == 0 && a.algoSet == b.algoSet &&
         a.protoSet == b.protoSet;
}

void checkWellFormed(const AlgoProtoFilter& f) {
  for (int fn = 0; fn < kNumFilterFuncs; ++fn) {
    FUZZ_CHECK((f.algos[fn] & ~kAllAlgosMask) == 0);
    FUZZ_CHECK((f.protos[fn] & ~kAllProtosMask) == 0);
    FUZZ_CHECK((f.protoAuto[fn] & ~f.protos[fn]) == 0);
  }
  FUZZ_CHECK(f.algos[kFuncSendRecv] == kAllAlgosMask);
  FUZZ_CHECK(f.protos[kFuncSendRecv] == kAllProtosMask);
  FUZZ_CHECK(!formatAlgoProtoFilter(f).empty());
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  // The variables are C strings: everything after an embedded NUL is invisible to the parser.
  text.resize(std::strlen(text.c_str()));
  size_t nl = text.find('\n');
  std::string algo = text.substr(0, nl);
  bool haveProto = nl != std::string::npos;
  std::string proto = haveProto ? text.substr(nl + 1) : "";

  AlgoProtoFilter parsed{};
  ncclResult_t res = parseAlgoProtoFilter(algo.c_str(), haveProto ? proto.c_str() : nullptr, &parsed);
  if (res == ncclSuccess) checkWellFormed(parsed);

  AlgoProtoFilter upperParsed{};
  ncclResult_t upperRes =
      parseAlgoProtoFilter(upper(algo).c_str(), haveProto ? upper(proto).c_str() : nullptr, &upperParsed);
  FUZZ_CHECK(upperRes == res);
  if (res == ncclSuccess) FUZZ_CHECK(sameFilter(parsed, upperParsed));

  // The quiet variant (per-call algSelection) agrees with the logging one, and a failure leaves
  // the filter as it was.
  AlgoProtoFilter loud = defaultAlgoProtoFilter(), quiet = defaultAlgoProtoFilter();
  const AlgoProtoFilter before = loud;
  std::string why;
  ncclResult_t loudRes = applyAlgoList("NCCL_ALGO", algo, &loud);
  ncclResult_t quietRes = applyAlgoList("NCCL_ALGO", algo, &quiet, &why);
  FUZZ_CHECK(loudRes == quietRes);
  FUZZ_CHECK(sameFilter(loud, quiet));
  if (quietRes != ncclSuccess) {
    FUZZ_CHECK(!why.empty());
    FUZZ_CHECK(sameFilter(quiet, before));
  }
  AlgoProtoFilter protoOnly = defaultAlgoProtoFilter();
  if (applyProtoList("NCCL_PROTO", proto, &protoOnly) != ncclSuccess) FUZZ_CHECK(sameFilter(protoOnly, before));
  return 0;
}
