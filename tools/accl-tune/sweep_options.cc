// Parsing of the calibrate / regret options (see sweep_options.h).
#include "sweep_options.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "common/cli.h"

namespace accl::tune {
namespace {

std::vector<std::string> splitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int parseSweepOptions(int argc, char** argv, const char* usage, SweepOptions* o) {
  const std::string tool = std::string("accl-tune ") + argv[0];
  const char* t = tool.c_str();
  using cli::badValue;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(usage, stdout);
      return cli::kExitOk;
    }
    if (a == "--no-pin") {
      o->pin = false;
      continue;
    }
    static const char* const kWithValue[] = {"-n", "--ranks", "-C", "--coll", "-b", "--minbytes", "-e", "--maxbytes",
                                             "-f", "--stepfactor", "--rounds", "--launches", "--target-us",
                                             "--timeout", "-o", "--file", "--max-regret"};
    bool takesValue = false;
    for (const char* name : kWithValue) takesValue = takesValue || a == name;
    if (!takesValue) return cli::usageError(t, "unknown option '%s'", a.c_str());
    if (i + 1 >= argc) return cli::usageError(t, "%s needs a value", a.c_str());
    const char* v = argv[++i];
    long n = 0;
    std::string why;
    if (a == "-n" || a == "--ranks") {
      o->ranks.clear();
      for (const std::string& r : splitCommas(v)) {
        if (!cli::parseInt(r.c_str(), 1, 64, &n, &why))
          return badValue(t, a, v, "rank count '" + r + "' " + (why == "not an integer" ? "is " : "") + why);
        o->ranks.push_back(static_cast<int>(n));
      }
      if (o->ranks.empty()) return badValue(t, a, v, "a comma list of rank counts is needed");
    } else if (a == "-C" || a == "--coll") {
      o->funcs.clear();
      if (std::string(v) == "all") {
        for (int f = 0; f < kNumCollFuncs; ++f) o->funcs.push_back(static_cast<FuncId>(f));
        continue;
      }
      for (const std::string& c : splitCommas(v)) {
        FuncId f;
        if (!parseFunc(c, &f))
          return badValue(t, a, v, "'" + c + "' is not a collective (all_reduce, all_gather, reduce_scatter, "
                                   "broadcast, reduce, or all)");
        o->funcs.push_back(f);
      }
      if (o->funcs.empty()) return badValue(t, a, v, "a comma list of collectives is needed");
    } else if (a == "-b" || a == "--minbytes") {
      if (!parseSize(v, &o->minBytes)) return badValue(t, a, v, "not a size (bytes, optional K, M or G suffix)");
      if (o->minBytes < 4) return badValue(t, a, v, "must be at least 4 bytes");
    } else if (a == "-e" || a == "--maxbytes") {
      if (!parseSize(v, &o->maxBytes)) return badValue(t, a, v, "not a size (bytes, optional K, M or G suffix)");
    } else if (a == "-f" || a == "--stepfactor") {
      if (!cli::parsePositive(v, 1.0, &o->factor, &why)) return badValue(t, a, v, why);
    } else if (a == "--rounds" || a == "--launches" || a == "--timeout") {
      if (!cli::parseInt(v, 1, 1 << 30, &n, &why)) return badValue(t, a, v, why);
      (a == "--rounds" ? o->rounds : a == "--launches" ? o->launches : o->timeoutSec) = static_cast<int>(n);
    } else if (a == "--target-us") {
      if (!cli::parsePositive(v, 0.0, &o->targetUs, &why)) return badValue(t, a, v, why);
    } else if (a == "-o" || a == "--file") {
      o->file = v;
    } else if (a == "--max-regret") {
      if (!cli::parsePositive(v, 0.0, &o->maxRegret, &why)) return badValue(t, a, v, why);
      if (o->maxRegret < 1.0) return badValue(t, a, v, "must be at least 1 (a pick can at best equal the best)");
    }
  }
  if (o->maxBytes < o->minBytes)
    return cli::usageError(t, "-e %zu is smaller than -b %zu", o->maxBytes, o->minBytes);
  return -1;
}

}  // namespace accl::tune
