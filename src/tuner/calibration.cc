// Calibration file reading, writing, fitting and prediction (format in calibration.h).
#include "tuner/calibration.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tuner/algo_proto_filter.h"
#include "util/check.h"
#include "util/params.h"

namespace accl {
namespace {

// "key=value" -> value, or false when the token has another key.
bool keyValue(const std::string& token, const char* key, std::string* value) {
  size_t n = std::strlen(key);
  if (token.size() <= n || token.compare(0, n, key) != 0 || token[n] != '=') return false;
  *value = token.substr(n + 1);
  return true;
}

bool parseNumber(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(s.c_str(), &end);
  return errno == 0 && *end == '\0' && std::isfinite(*out);
}

}  // namespace

double CalibrationCurve::predictUs(size_t bytes) const {
  if (points.empty()) return latUs + (gbps > 0 ? bytes / (gbps * 1e3) : 0);
  if (bytes <= points.front().bytes) return points.front().us;
  for (size_t i = 1; i < points.size(); ++i) {
    const CalibrationPoint& a = points[i - 1];
    const CalibrationPoint& b = points[i];
    if (bytes <= b.bytes) {
      double f = double(bytes - a.bytes) / double(b.bytes - a.bytes);
      return a.us + f * (b.us - a.us);
    }
  }
  const CalibrationPoint& last = points.back();
  // Beyond the range: the last segment's slope, or the whole-curve bandwidth if that is steeper
  // (a flat last segment is noise, not infinite bandwidth).
  double perByte = gbps > 0 ? 1.0 / (gbps * 1e3) : 0;
  if (points.size() >= 2) {
    const CalibrationPoint& prev = points[points.size() - 2];
    double seg = (last.us - prev.us) / double(last.bytes - prev.bytes);
    if (seg > perByte) perByte = seg;
  }
  return last.us + double(bytes - last.bytes) * perByte;
}

void CalibrationCurve::fit() {
  // Least squares of t = a + c * bytes, weighted by 1/t^2 so small and large sizes count alike
  // (relative error), then clamped so that neither term is negative.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const CalibrationPoint& p : points) {
    if (p.us <= 0) continue;
    double w = 1.0 / (p.us * p.us);
    double x = double(p.bytes);
    sw += w;
    sx += w * x;
    sy += w * p.us;
    sxx += w * x * x;
    sxy += w * x * p.us;
  }
  latUs = 0;
  gbps = 0;
  if (sw == 0) return;
  double det = sw * sxx - sx * sx;
  double c = det > 0 ? (sw * sxy - sx * sy) / det : 0;
  if (c < 0) c = 0;
  double a = (sy - c * sx) / sw;
  if (a < 0) a = 0;
  latUs = a;
  gbps = c > 0 ? 1.0 / (c * 1e3) : 0;
}

void CalibrationCurve::makeMonotone() {
  // Pool adjacent violators: blocks of (sum of times, count), merged while a block's mean is
  // below its predecessor's; each point then takes its block's mean.
  std::vector<std::pair<double, int>> blocks;
  for (const CalibrationPoint& p : points) {
    blocks.push_back({p.us, 1});
    while (blocks.size() > 1) {
      auto& last = blocks.back();
      auto& prev = blocks[blocks.size() - 2];
      if (prev.first / prev.second <= last.first / last.second) break;
      prev.first += last.first;
      prev.second += last.second;
      blocks.pop_back();
    }
  }
  size_t i = 0;
  for (const auto& b : blocks)
    for (int k = 0; k < b.second; ++k) points[i++].us = b.first / b.second;
}

const CalibrationCurve* Calibration::find(int func, int algo, int proto, int nRanks, int nNodes) const {
  const CalibrationCurve* best = nullptr;
  for (const CalibrationCurve& c : curves) {
    if (c.func != func || c.algo != algo || c.proto != proto || c.nNodes != nNodes) continue;
    if (best == nullptr || std::abs(c.nRanks - nRanks) < std::abs(best->nRanks - nRanks)) best = &c;
  }
  return best;
}

bool Calibration::covers(int func, int nNodes) const {
  for (const CalibrationCurve& c : curves)
    if (c.func == func && c.nNodes == nNodes) return true;
  return false;
}

std::string Calibration::toText() const {
  std::ostringstream out;
  out << "# accl tuner calibration (accl-tune calibrate); format in src/tuner/calibration.h\n";
  out << "version 1\n";
  out << "machine " << (machine.empty() ? "unknown" : machine) << "\n";
  char line[256];
  for (const CalibrationCurve& c : curves) {
    std::snprintf(line, sizeof(line), "curve %s %s %s ranks=%d nodes=%d lat_us=%.4g gbps=%.4g\n", funcName(c.func),
                  algoName(c.algo), protoName(c.proto), c.nRanks, c.nNodes, c.latUs, c.gbps);
    out << line;
    for (const CalibrationPoint& p : c.points) {
      std::snprintf(line, sizeof(line), "point %zu %.4f\n", p.bytes, p.us);
      out << line;
    }
  }
  return out.str();
}

ncclResult_t Calibration::parse(const std::string& text, const char* source, Calibration* out) {
  Calibration cal;
  std::istringstream in(text);
  std::string line;
  int lineNo = 0;
  bool sawVersion = false;
  auto bad = [&](const char* what, const std::string& token) {
    return fail(ncclInvalidUsage, "tuner calibration %s:%d: %s \"%s\"", source, lineNo, what, token.c_str());
  };
  while (std::getline(in, line)) {
    ++lineNo;
    size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string kind;
    if (!(words >> kind)) continue;
    if (kind == "version") {
      std::string v;
      words >> v;
      if (v != "1") return bad("unsupported version", v);
      sawVersion = true;
    } else if (kind == "machine") {
      std::getline(words >> std::ws, cal.machine);
    } else if (kind == "curve") {
      std::string f, a, p;
      if (!(words >> f >> a >> p)) return bad("curve needs <Function> <Algo> <Proto>", line);
      CalibrationCurve c;
      c.func = collFuncIndex(f);
      c.algo = algoIndex(a);
      c.proto = protoIndex(p);
      if (c.func < 0) return bad("unknown function", f);
      if (c.algo < 0) return bad("unknown algorithm", a);
      if (c.proto < 0) return bad("unknown protocol", p);
      std::string token, value;
      while (words >> token) {
        double num;
        if (keyValue(token, "ranks", &value) && parseNumber(value, &num) && num >= 1) c.nRanks = int(num);
        else if (keyValue(token, "nodes", &value) && parseNumber(value, &num) && num >= 1) c.nNodes = int(num);
        else if (keyValue(token, "lat_us", &value) && parseNumber(value, &num) && num >= 0) c.latUs = num;
        else if (keyValue(token, "gbps", &value) && parseNumber(value, &num) && num >= 0) c.gbps = num;
        else return bad("bad curve attribute", token);
      }
      if (c.nRanks < 1) return bad("curve lacks ranks=", line);
      cal.curves.push_back(std::move(c));
    } else if (kind == "point") {
      std::string b, t;
      double bytes, us;
      if (cal.curves.empty()) return bad("point before any curve", line);
      if (!(words >> b >> t) || !parseNumber(b, &bytes) || !parseNumber(t, &us) || bytes < 0 || us < 0)
        return bad("point needs <bytes> <microseconds>", line);
      auto& pts = cal.curves.back().points;
      if (!pts.empty() && size_t(bytes) <= pts.back().bytes) return bad("point sizes must increase", b);
      pts.push_back({size_t(bytes), us});
    } else {
      return bad("unknown record", kind);
    }
  }
  if (!sawVersion) return fail(ncclInvalidUsage, "tuner calibration %s: no \"version 1\" line", source);
  *out = std::move(cal);
  return ncclSuccess;
}

ncclResult_t Calibration::load(const char* path, Calibration* out) {
  std::ifstream f(path);
  if (!f) return fail(ncclInvalidUsage, "tuner calibration: cannot read %s: %s", path, std::strerror(errno));
  std::stringstream ss;
  ss << f.rdbuf();
  return parse(ss.str(), path, out);
}

ncclResult_t Calibration::save(const char* path) const {
  std::ofstream f(path, std::ios::trunc);
  if (!f) return fail(ncclSystemError, "tuner calibration: cannot write %s: %s", path, std::strerror(errno));
  f << toText();
  f.close();
  if (!f) return fail(ncclSystemError, "tuner calibration: writing %s failed", path);
  return ncclSuccess;
}

std::string calibrationPath() {
  std::string explicitPath = paramStr("ACCL_TUNER_FILE");
  if (!explicitPath.empty()) return explicitPath;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/accl/tuner-host.conf";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/accl/tuner-host.conf";
  return "";
}

}  // namespace accl
