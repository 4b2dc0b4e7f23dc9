// HostCostModel: calibrated curves when available, else the step model (see host_model.h).
#include "tuner/host_model.h"

#include <sys/stat.h>

#include <algorithm>

#include "util/log.h"
#include "util/params.h"

namespace accl {
namespace {

constexpr double kStepUs = 0.35;            // one dependent FIFO step, ranks <= cores
constexpr double kOversubStepUs = 2.0;      // per unit of oversubscription (threads / cores)
constexpr double kCoreGBps = 3.3;           // copy + reduce bandwidth of one core
constexpr double kLLBandwidthFactor = 0.25; // LL payload bandwidth relative to Simple
constexpr double kLLStepFactor = 1.2;
constexpr size_t kMinBytesPerChannel = 64 << 10;

int ceilLog2(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}

}  // namespace

HostCostModel::HostCostModel(const TunerTopo& topo, int maxChannels, int cpus,
                             std::shared_ptr<const Calibration> calibration)
    : topo_(topo), maxChannels_(std::max(1, maxChannels)), cpus_(std::max(1, cpus)), cal_(std::move(calibration)) {}

const char* HostCostModel::name() const { return cal_ ? "host-calibrated" : "host-default"; }

double HostCostModel::stepModelUs(FuncId func, int algo, int proto, size_t bytes) const {
  const int n = topo_.nRanks;
  const double threads = double(topo_.ppn) * maxChannels_;
  const double oversub = threads / cpus_;
  double step = oversub > 1.0 ? kOversubStepUs * oversub : kStepUs;
  double bytesPerUs = kCoreGBps * 1e3 / std::max(1.0, oversub);
  if (proto == kProtoLL) {
    step *= kLLStepFactor;
    bytesPerUs *= kLLBandwidthFactor;
  }
  const double b = double(bytes);
  // Across hosts (TunerTopo::netGBps known, more than one node): the bytes one host's NIC moves
  // each way take bytes / netGBps, overlapped with the copies (the slower of the two counts), and
  // every step that crosses hosts adds the NIC's latency.
  const int nNodes = topo_.nNodes;
  const bool net = nNodes > 1 && topo_.netGBps > 0;
  auto cost = [&](double steps, double copyBytes, double nicBytes, double nicSteps) {
    double bwUs = copyBytes / bytesPerUs;
    if (net) bwUs = std::max(bwUs, nicBytes / (topo_.netGBps * 1e3));
    return steps * step + bwUs + (net ? nicSteps * topo_.netLatencyUs : 0.0);
  };
  if (func == kFuncSendRecv) return cost(1, b, b, 1);  // one transfer, for simulation only
  switch (algo) {
    case kAlgoRing:
      // Each host's NIC carries one ring hop each way: the bytes every rank sends.
      switch (func) {
        case kFuncAllReduce: {
          double moved = 2.0 * (n - 1) / n * b;
          return cost(2.0 * (n - 1), moved, moved, 2.0 * (nNodes - 1));
        }
        case kFuncAllGather:
        case kFuncReduceScatter: {
          double moved = double(n - 1) / n * b;
          return cost(n - 1, moved, moved, nNodes - 1);
        }
        default: return cost(n - 1, b, b, nNodes - 1);  // Broadcast / Reduce: pipelined chain
      }
    case kAlgoTree: {
      // Reduce up a chain inside each node and a binary tree across nodes, then broadcast down:
      // each rank receives from up to two children and forwards once each way. A host's NIC
      // moves b each way between two hosts, up to 3b (two children and a parent) beyond.
      int depth = (topo_.ppn - 1) + ceilLog2(nNodes);
      return cost(2.0 * depth, 2.5 * b, (nNodes > 2 ? 3.0 : 1.0) * b, 2.0 * ceilLog2(nNodes));
    }
    case kAlgoOneShot:
      // One step, but every rank sends its vector to n-1 peers and takes in theirs (the
      // reduction reads them where they landed); a host's NIC brings in the vectors of every
      // rank on other hosts for each of its ranks. Measured per byte it costs what the ring's
      // 2(n-1)/n vectors cost at 2 ranks and twice that at 4 (2 cores; docs/latency.md), which
      // (n-1) vectors reproduce; 2n-1 had made the ring win from 640 B at 2 ranks and 8 KiB at
      // 4, where OneShot was still 0.4 and 7 us faster.
      return cost(1, double(n - 1) * b, double(n - topo_.ppn) * topo_.ppn * b, 1);
    default: return -1;
  }
}

void HostCostModel::predict(FuncId func, size_t bytes, CostTable* table) const {
  table->clear();
  if (func == kFuncSendRecv) {
    table->us[kAlgoRing][kProtoSimple] = static_cast<float>(stepModelUs(func, kAlgoRing, kProtoSimple, bytes));
    return;
  }
  const bool calibrated = cal_ && cal_->covers(func, topo_.nNodes);
  for (int algo : {int(kAlgoRing), int(kAlgoTree), kAlgoOneShot}) {
    if (algo != kAlgoRing && func != kFuncAllReduce) continue;
    if (algo == kAlgoOneShot &&
        (bytes > (calibrated ? kHostOneShotMaxBytes : kHostOneShotDefaultMaxBytes) || topo_.nRanks < 2))
      continue;
    for (int proto : {int(kProtoLL), int(kProtoSimple)}) {
      if (algo == kAlgoOneShot && proto != kProtoSimple) continue;  // its exchange is one Simple step
      double us;
      if (calibrated) {
        const CalibrationCurve* c = cal_->find(func, algo, proto, topo_.nRanks, topo_.nNodes);
        us = c ? c->predictUs(bytes) : -1;
      } else {
        us = topo_.nRanks == 1 ? 0.1 : stepModelUs(func, algo, proto, bytes);
      }
      table->us[algo][proto] = static_cast<float>(us);
    }
  }
}

void HostCostModel::shape(FuncId func, int algo, int proto, size_t bytes, int* nChannels, int* nThreads) const {
  size_t want = bytes / kMinBytesPerChannel;
  *nChannels = algo == kAlgoOneShot ? 1 : static_cast<int>(std::clamp<size_t>(want, 1, maxChannels_));
  *nThreads = 0;
}

std::unique_ptr<CostModel> hostCostModelFor(TunerTopo* topo, int maxChannels, int cpus) {
  topo->host = true;
  return std::make_unique<HostCostModel>(*topo, maxChannels, cpus, loadHostCalibration());
}

std::shared_ptr<const Calibration> loadHostCalibration() {
  std::string path = calibrationPath();
  if (path.empty() || path == "none") return nullptr;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (!paramStr("ACCL_TUNER_FILE").empty())
      ACCL_WARN("ACCL_TUNER_FILE=%s does not exist; the host tuner uses its built-in model", path.c_str());
    return nullptr;
  }
  auto cal = std::make_shared<Calibration>();
  ncclResult_t res = Calibration::load(path.c_str(), cal.get());
  if (res != ncclSuccess) {
    ACCL_WARN("ignoring tuner calibration %s (it does not parse; see the previous message)", path.c_str());
    return nullptr;
  }
  ACCL_INFO(ACCL_LOG_TUNING, "host tuner: calibration %s (%zu curves, machine %s)", path.c_str(), cal->curves.size(),
            cal->machine.c_str());
  return cal;
}

}  // namespace accl
