// Calibration: measured collective times that replace the host cost model's built-in constants.
// `accl-tune calibrate` measures every algorithm x protocol over a range of sizes and writes a
// file; the host model reads it from ACCL_TUNER_FILE, else from the default location
// ($XDG_CACHE_HOME or ~/.cache)/accl/tuner-host.conf.
//
// File format (text, one record per line, '#' starts a comment):
//   version 1
//   machine <free text: host name, CPUs, date>
//   curve <Function> <Algo> <Proto> ranks=<n> nodes=<m> lat_us=<a> gbps=<b>
//   point <bytes> <microseconds>        (repeated, increasing bytes, for the curve above)
// accl-tune writes the median measured times made non-decreasing in size (makeMonotone).
// `lat_us` / `gbps` are the least-squares fit t = a + bytes / (b * 1e3) over the whole curve
// (reported by accl-tune, used beyond the measured range); between two measured sizes the model
// uses the segment through those two points, i.e. its own latency and bandwidth per size range.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "device/common/ids.h"
#include "nccl.h"

namespace accl {

struct CalibrationPoint {
  size_t bytes;
  double us;
};

struct CalibrationCurve {
  int func = kFuncAllReduce;
  int algo = kAlgoRing;
  int proto = kProtoSimple;
  int nRanks = 0;
  int nNodes = 1;
  double latUs = 0;   // whole-curve fit
  double gbps = 0;    // whole-curve fit (0: time does not grow with size)
  std::vector<CalibrationPoint> points;  // increasing bytes

  // Predicted time of `bytes`: piecewise linear through the points; the first point's time below
  // the range; beyond it the last point plus the extra bytes at the fitted bandwidth.
  double predictUs(size_t bytes) const;
  // Recomputes latUs / gbps from the points (least squares, clamped to non-negative).
  void fit();
  // Makes the times non-decreasing in size by pooling adjacent violators (a larger message never
  // takes less time; a dip is measurement noise, and following it would rank candidates by noise).
  void makeMonotone();
};

struct Calibration {
  std::string machine;
  std::vector<CalibrationCurve> curves;

  // The curve for this combination: the exact rank count if measured, else the nearest measured
  // rank count with the same function, algorithm, protocol and node count; nullptr when none.
  const CalibrationCurve* find(int func, int algo, int proto, int nRanks, int nNodes) const;
  // Whether any curve exists for this function and node count (then the calibration, not the
  // built-in constants, decides among that function's candidates).
  bool covers(int func, int nNodes) const;

  std::string toText() const;
  static ncclResult_t parse(const std::string& text, const char* source, Calibration* out);
  static ncclResult_t load(const char* path, Calibration* out);
  ncclResult_t save(const char* path) const;
};

// ACCL_TUNER_FILE when set, else the default location described above.
std::string calibrationPath();

}  // namespace accl
