// Parsing of the calibrate / regret options (see sweep_options.h).
#include "sweep_options.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

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

bool parseSweepOptions(int argc, char** argv, const char* usage, SweepOptions* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= argc) return false;
      *v = argv[++i];
      return true;
    };
    std::string v;
    bool ok = true;
    if (a == "-h" || a == "--help") {
      std::fputs(usage, stdout);
      std::exit(0);
    } else if ((a == "-n" || a == "--ranks") && value(&v)) {
      o->ranks.clear();
      for (const std::string& r : splitCommas(v)) {
        int n = std::atoi(r.c_str());
        ok = ok && n >= 1 && n <= 64;
        o->ranks.push_back(n);
      }
      ok = ok && !o->ranks.empty();
    } else if ((a == "-C" || a == "--coll") && value(&v)) {
      o->funcs.clear();
      if (v == "all") {
        for (int f = 0; f < kNumCollFuncs; ++f) o->funcs.push_back(static_cast<FuncId>(f));
      } else {
        for (const std::string& c : splitCommas(v)) {
          FuncId f;
          ok = ok && parseFunc(c, &f);
          if (ok) o->funcs.push_back(f);
        }
      }
    } else if ((a == "-b" || a == "--minbytes") && value(&v)) {
      ok = parseSize(v, &o->minBytes) && o->minBytes >= 4;
    } else if ((a == "-e" || a == "--maxbytes") && value(&v)) {
      ok = parseSize(v, &o->maxBytes);
    } else if ((a == "-f" || a == "--stepfactor") && value(&v)) {
      o->factor = std::atof(v.c_str());
      ok = o->factor > 1.0;
    } else if (a == "--rounds" && value(&v)) {
      o->rounds = std::atoi(v.c_str());
      ok = o->rounds >= 1;
    } else if (a == "--no-pin") {
      o->pin = false;
    } else if (a == "--launches" && value(&v)) {
      o->launches = std::atoi(v.c_str());
      ok = o->launches >= 1;
    } else if (a == "--target-us" && value(&v)) {
      o->targetUs = std::atof(v.c_str());
      ok = o->targetUs > 0;
    } else if (a == "--timeout" && value(&v)) {
      o->timeoutSec = std::atoi(v.c_str());
      ok = o->timeoutSec > 0;
    } else if ((a == "-o" || a == "--file") && value(&v)) {
      o->file = v;
    } else if (a == "--max-regret" && value(&v)) {
      o->maxRegret = std::atof(v.c_str());
      ok = o->maxRegret >= 1.0;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "accl-tune %s: bad option or value near \"%s\"\n%s", argv[0], a.c_str(), usage);
      return false;
    }
  }
  if (o->maxBytes < o->minBytes) {
    std::fprintf(stderr, "accl-tune %s: -e is smaller than -b\n", argv[0]);
    return false;
  }
  return true;
}

}  // namespace accl::tune
