// GpuCostModel: NCCL's bandwidth and latency model over the searched ring and tree graphs, with
// NCCL 2.28's default constants (see gpu_model.h for what is and is not modelled).
#include "tuner/gpu_model.h"

#include <algorithm>
#include <cmath>

#include "util/params.h"

namespace accl {
namespace {

constexpr int kWarp = 32;
constexpr int kMaxRunChannels = 64;   // NCCL's MAXCHANNELS
constexpr int kSimpleMaxThreads = 512;
constexpr int kLLMaxThreads = 512;
constexpr int kLL128MaxThreads = 640;
constexpr int kTreeThreads = 640;     // tree and PAT kernels always run full blocks
constexpr double kPciBw = 12.0;       // GB/s, Gen3 x16: rings at or below this use 256 Simple threads
// Bytes per thread below which shape() gives up channels, then threads.
constexpr size_t kLLThreadThreshold = 8;
constexpr size_t kLL128ThreadThreshold = 8;
constexpr size_t kSimpleThreadThreshold = 64;

int log2Floor(size_t v) {
  int l = -1;
  while (v) {
    v >>= 1;
    ++l;
  }
  return l;  // -1 for 0
}

// NCCL's tree correction: the double binary tree reaches less of its modelled bandwidth in the
// middle sizes. Approximated here by a piecewise-linear curve per protocol through the points
// (bucket, factor), bucket = log2(bytes / 64) in 0..22; NCCL's own table dips to ~0.4 (LL),
// ~0.6 (LL128) and ~0.5 (Simple) between 64 KiB and 1 MiB and recovers towards 1.0 (0.9 for
// Simple) at the ends.
struct CurvePoint {
  int bucket;
  double factor;
};
constexpr CurvePoint kTreeCurveLL[] = {{0, 1.0}, {3, 1.0}, {7, 0.7}, {9, 0.7}, {12, 0.4}, {13, 0.4}, {19, 1.0}, {22, 1.0}};
constexpr CurvePoint kTreeCurveLL128[] = {{0, 1.0}, {4, 1.0}, {6, 0.8}, {8, 0.8},  {10, 0.6},
                                          {15, 0.6}, {17, 0.9}, {20, 0.9}, {21, 1.0}, {22, 1.0}};
constexpr CurvePoint kTreeCurveSimple[] = {{0, 0.9},  {6, 0.9},  {9, 0.6},  {11, 0.5}, {14, 0.5},
                                           {17, 0.8}, {18, 0.7}, {19, 0.7}, {21, 0.9}, {22, 0.9}};
constexpr int kTreeBuckets = 23;

template <size_t N>
double interpolate(const CurvePoint (&curve)[N], int bucket) {
  for (size_t i = 1; i < N; ++i) {
    if (bucket <= curve[i].bucket) {
      const CurvePoint& a = curve[i - 1];
      const CurvePoint& b = curve[i];
      return a.factor + (b.factor - a.factor) * double(bucket - a.bucket) / double(b.bucket - a.bucket);
    }
  }
  return curve[N - 1].factor;
}

double treeCorrection(int proto, int bucket) {
  switch (proto) {
    case kProtoLL: return interpolate(kTreeCurveLL, bucket);
    case kProtoLL128: return interpolate(kTreeCurveLL128, bucket);
    default: return interpolate(kTreeCurveSimple, bucket);
  }
}

// Fills one {LL, LL128, Simple} row.
void setRow(double (&row)[kPluginProtos], double ll, double ll128, double simple) {
  row[kProtoLL] = ll;
  row[kProtoLL128] = ll128;
  row[kProtoSimple] = simple;
}
// Fills one {1 node, 2 nodes, 4+ nodes} row.
void setScales(double (&row)[kPluginScales], double n1, double n2, double n4) {
  row[0] = n1;
  row[1] = n2;
  row[2] = n4;
}

// NCCL_NTHREADS-style override: a positive multiple of 32, clamped to [64, max]; else `def`.
int threadsFrom(int env, int max, int def) {
  if (env <= 0 || env % kWarp != 0) return def;
  return std::clamp(env, 2 * kWarp, max);
}

bool isAmd(const std::string& vendor) { return vendor == "AuthenticAMD" || vendor == "HygonGenuine"; }

}  // namespace

GpuModelConstants defaultGpuModelConstants() {
  GpuModelConstants c{};  // every entry not set below is 0
  // Base latency of a launch, per algorithm (µs).
  setRow(c.baseLatencies[kAlgoTree], 6.8, 14.0, 8.4);
  setRow(c.baseLatencies[kAlgoRing], 6.6, 14.0, 8.4);
  setRow(c.baseLatencies[kAlgoPat], 8.0, 8.0, 8.0);
  // Per-hop latency over NVLink.
  setRow(c.hwLatencies[kHwNvlink][kAlgoTree], 0.6, 1.25, 4.0);
  setRow(c.hwLatencies[kHwNvlink][kAlgoRing], 0.6, 1.9, 3.4);
  setRow(c.hwLatencies[kHwNvlink][kAlgoCollNetDirect], 0, 0, 3.7);
  setRow(c.hwLatencies[kHwNvlink][kAlgoCollNetChain], 0, 0, 2.8);
  setRow(c.hwLatencies[kHwNvlink][kAlgoNvls], 0, 0, 25.0);
  setRow(c.hwLatencies[kHwNvlink][kAlgoNvlsTree], 0, 0, 25.0);
  setRow(c.hwLatencies[kHwNvlink][kAlgoPat], 0, 0, 4.0);
  // Per-hop latency over PCIe.
  setRow(c.hwLatencies[kHwPci][kAlgoTree], 1.0, 1.9, 4.0);
  setRow(c.hwLatencies[kHwPci][kAlgoRing], 1.0, 2.5, 5.7);
  setRow(c.hwLatencies[kHwPci][kAlgoCollNetDirect], 0, 0, 3.7);
  setRow(c.hwLatencies[kHwPci][kAlgoCollNetChain], 0, 0, 2.8);
  setRow(c.hwLatencies[kHwPci][kAlgoPat], 0, 0, 4.0);
  // Per-hop latency over the network.
  setRow(c.hwLatencies[kHwNet][kAlgoTree], 5.0, 8.5, 14.0);
  setRow(c.hwLatencies[kHwNet][kAlgoRing], 2.7, 4.0, 14.0);
  setRow(c.hwLatencies[kHwNet][kAlgoCollNetDirect], 0, 0, 31.0);
  setRow(c.hwLatencies[kHwNet][kAlgoCollNetChain], 0, 0, 30.0);
  setRow(c.hwLatencies[kHwNet][kAlgoNvls], 0, 0, 18.0);
  setRow(c.hwLatencies[kHwNet][kAlgoNvlsTree], 0, 0, 20.9);
  setRow(c.hwLatencies[kHwNet][kAlgoPat], 0, 0, 14.0);
  // LL bandwidth ceiling (GB/s). Rows are compute capabilities on one node; across nodes NCCL
  // reads row 0 on Intel hosts and row 1 on AMD hosts.
  setScales(c.llMaxBws[kCcVolta], 39.0, 39.0, 20.4);
  setScales(c.llMaxBws[kCcAmpere], 87.7, 22.5, 19.0);
  setScales(c.llMaxBws[kCcHopper], 141.0, 45.0, 35.0);
  setScales(c.llMaxBws[kCcBlackwell], 282.0, 90.0, 70.0);
  // Per-channel ceilings (GB/s).
  setScales(c.perChMaxRingLL128Bws[kCcVolta], 20.0, 20.0, 20.0);
  setScales(c.perChMaxRingLL128Bws[kCcAmpere], 20.0, 20.0, 20.0);
  setScales(c.perChMaxRingLL128Bws[kCcHopper], 36.7, 36.7, 36.7);
  setScales(c.perChMaxRingLL128Bws[kCcBlackwell], 73.4, 34.6, 73.4);
  setScales(c.perChMaxTreeLL128Bws[kCcVolta], 20.0, 20.0, 20.0);
  setScales(c.perChMaxTreeLL128Bws[kCcAmpere], 20.0, 20.0, 20.0);
  setScales(c.perChMaxTreeLL128Bws[kCcHopper], 36.7, 36.7, 29.0);
  setScales(c.perChMaxTreeLL128Bws[kCcBlackwell], 55.6, 31.67, 20.0);
  setScales(c.perChMaxTreeBws[kCcVolta], 26.5, 18.5, 10.0);
  setScales(c.perChMaxTreeBws[kCcAmpere], 24.0, 23.6, 17.8);
  setScales(c.perChMaxTreeBws[kCcHopper], 38.7, 41.4, 36.0);
  setScales(c.perChMaxTreeBws[kCcBlackwell], 70.0, 42.8, 24.0);
  setScales(c.perChMaxNVLSTreeBws[kCcHopper], 0.0, 57.7, 45.5);
  setScales(c.perChMaxNVLSTreeBws[kCcBlackwell], 0.0, 96.0, 43.8);
  return c;
}

GpuCostModel::GpuCostModel(const TunerTopo& topo) : GpuCostModel(topo, defaultGpuModelConstants()) {}

GpuCostModel::GpuCostModel(const TunerTopo& topo, const GpuModelConstants& constants) : topo_(topo), c_(constants) {
  minChannels_ = static_cast<int>(paramInt("NCCL_MIN_NCHANNELS"));
  maxChannels_ = static_cast<int>(paramInt("NCCL_MAX_NCHANNELS"));
  nThreadsEnv_ = static_cast<int>(paramInt("NCCL_NTHREADS"));
  ll128ThreadsEnv_ = static_cast<int>(paramInt("NCCL_LL128_NTHREADS"));
  netOverheadNs_ = static_cast<int>(paramInt("NCCL_NET_OVERHEAD"));
}

int GpuCostModel::compCapIndex() const {
  if (topo_.sm >= 100) return kCcBlackwell;
  if (topo_.sm >= 90) return kCcHopper;
  if (topo_.sm >= 80) return kCcAmpere;
  return kCcVolta;
}

int GpuCostModel::scaleIndex() const { return topo_.nNodes <= 2 ? std::max(0, topo_.nNodes - 1) : 2; }

const TopoGraph& GpuCostModel::graphFor(int algo) const { return algo == kAlgoRing ? topo_.ring : topo_.tree; }

double GpuCostModel::netOverheadUs() const {
  if (netOverheadNs_ != -2) return std::max(0, netOverheadNs_) * 1e-3;
  return isAmd(topo_.cpuVendor) ? 2.0 : 1.0;
}

int GpuCostModel::runChannels(int /*algo*/) const {
  // Rings and trees share the communicator's channels: the smaller search result, doubled.
  int n = topo_.ring.nChannels;
  if (topo_.tree.nChannels > 0) n = std::min(n, topo_.tree.nChannels);
  n *= 2;
  if (topo_.sm >= 90 && topo_.nNodes > 1 && topo_.ring.bwIntra > 45.0 && n < 16) n *= 2;
  if (maxChannels_ > 0) n = std::min(n, maxChannels_);
  if (minChannels_ > 0) n = std::max(n, minChannels_);
  return std::clamp(n, 1, kMaxRunChannels);
}

int GpuCostModel::maxThreads(int algo, int proto) const {
  if (proto == kProtoLL128) return threadsFrom(ll128ThreadsEnv_, kLL128MaxThreads, kLL128MaxThreads);
  if (proto == kProtoLL) return threadsFrom(nThreadsEnv_, kLLMaxThreads, kLLMaxThreads);
  int simpleDefault = kSimpleMaxThreads;
  if (algo == kAlgoRing && topo_.ring.bwIntra * topo_.ring.nChannels <= kPciBw) simpleDefault = 256;
  return threadsFrom(nThreadsEnv_, kSimpleMaxThreads, simpleDefault);
}

bool GpuCostModel::bandwidthAndLatency(FuncId func, int algo, int proto, double* algBw, double* latUs) const {
  const bool allReduce = func == kFuncAllReduce;
  const bool agRs = func == kFuncAllGather || func == kFuncReduceScatter;
  switch (algo) {
    case kAlgoRing: break;
    case kAlgoTree:
      if (!allReduce) return false;
      break;
    case kAlgoPat:
      // Logarithmic AllGather / ReduceScatter between single-GPU nodes, Simple only.
      if (!agRs || proto != kProtoSimple || topo_.ppn != 1 || topo_.nNodes < 2 || topo_.sm < 60) return false;
      break;
    default: return false;  // NVLS / NVLSTree / CollNet: see gpu_model.h
  }
  const TopoGraph& g = graphFor(algo);
  if (g.nChannels <= 0) return false;

  const int n = topo_.nRanks;
  const int nNodes = topo_.nNodes;
  const int cc = compCapIndex();
  const int sc = scaleIndex();
  const int llRow = nNodes == 1 ? cc : (isAmd(topo_.cpuVendor) ? 1 : 0);
  const double llMaxBw = c_.llMaxBws[llRow][sc];
  const double nCh = g.nChannels;
  // Across nodes, a channel is no faster than the NIC it crosses (TunerTopo::netGBps, when known).
  double chBw = nNodes <= 2 ? g.bwIntra : g.bwInter;
  if (nNodes > 1 && topo_.netGBps > 0) chBw = std::min(chBw, topo_.netGBps);
  const double nicLatUs = nNodes > 1 ? std::max(g.latencyInter, topo_.netLatencyUs) : g.latencyInter;

  if (func == kFuncSendRecv) {
    // Point-to-point is not ranked by NCCL's table; a nominal Ring/Simple entry (one hop at the
    // ring's full bandwidth) keeps the tuner total for it.
    if (algo != kAlgoRing || proto != kProtoSimple) return false;
    *algBw = nCh * chBw;
    *latUs = c_.baseLatencies[kAlgoRing][kProtoSimple];
    return *algBw > 0;
  }

  // Bus bandwidth: channels x per-channel bandwidth (inside the node up to 2 nodes, else the
  // network's), then the protocol and algorithm ceilings.
  double busBw = nCh * chBw;
  if (algo == kAlgoRing && proto == kProtoLL) busBw = std::min(llMaxBw, 0.5 * busBw);
  if (algo == kAlgoRing && proto == kProtoLL128) busBw = std::min(0.92 * busBw, nCh * c_.perChMaxRingLL128Bws[cc][sc]);
  if (algo == kAlgoTree) {
    busBw = std::min(0.92 * busBw, nCh * c_.perChMaxTreeBws[cc][sc]);
    if (proto == kProtoLL) busBw = std::min(busBw / 3.8, llMaxBw);
    if (proto == kProtoLL128)
      busBw = std::min(busBw * (nNodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), nCh * c_.perChMaxTreeLL128Bws[cc][sc]);
    if (g.pattern == GraphPattern::Tree) busBw *= 0.85;
  }
  if (algo == kAlgoPat) busBw *= 0.75;

  // Algorithm bandwidth: a ring moves nsteps/n of the data per rank; a tree sends everything up
  // and down; PAT's bus bandwidth already is its algorithm bandwidth.
  const int nsteps = allReduce ? 2 * (n - 1) : agRs ? n - 1 : n;
  const int nInter = allReduce ? 2 * (nNodes - 1) : nNodes - 1;
  double bw = busBw;
  if (algo == kAlgoRing) bw = nsteps > 0 ? busBw * n / nsteps : busBw;
  if (algo == kAlgoTree) bw = busBw * 0.5;
  if (bw <= 0) return false;

  // Latency: launch base + the hops, NVLink or PCI inside the node and the network between.
  const int intraHw = g.typeIntra == kPathNvl ? kHwNvlink : kHwPci;
  double intraLat = c_.hwLatencies[intraHw][algo][proto];
  double interLat = (topo_.ppn == 1 ? c_.hwLatencies[kHwNet][kAlgoTree][proto] : c_.hwLatencies[kHwNet][algo][proto]) +
                    nicLatUs;
  if (proto == kProtoSimple) interLat += nicLatUs;  // the receive flush
  double lat = c_.baseLatencies[algo][proto];
  const int log2Nodes = log2Floor(static_cast<size_t>(nNodes));
  if (algo == kAlgoRing) {
    if (func == kFuncBroadcast || func == kFuncReduce) {
      lat += g.sameChannels ? intraLat : nsteps * intraLat;
    } else {
      // Every step of a ring that leaves the node also pays the network proxy's overhead.
      if (nNodes > 1) intraLat = std::max(intraLat, netOverheadUs() * (proto == kProtoSimple ? 3.0 : 1.0));
      lat += (nsteps - nInter) * intraLat + nInter * interLat;
    }
  } else if (algo == kAlgoTree) {
    lat += 2.0 * ((topo_.ppn - 1) * intraLat + log2Nodes * interLat);
  } else if (algo == kAlgoPat) {
    lat += log2Nodes * interLat / 3.5 + 2.8 * n;
  }
  *algBw = bw;
  *latUs = lat;
  return true;
}

void GpuCostModel::predict(FuncId func, size_t bytes, CostTable* table) const {
  table->clear();
  if (topo_.nRanks <= 1) {
    // One rank: a local copy, whatever the protocol.
    for (int p = 0; p < kNumProtos; ++p) table->us[kAlgoRing][p] = 0.0f;
    return;
  }
  const int bucket = log2Floor(bytes >> 6);
  for (int a = 0; a < kNumAlgos; ++a) {
    for (int p = 0; p < kNumProtos; ++p) {
      double bw, lat;
      if (!bandwidthAndLatency(func, a, p, &bw, &lat)) continue;
      if (a == kAlgoTree && func == kFuncAllReduce && bucket >= 0 && bucket < kTreeBuckets) bw *= treeCorrection(p, bucket);
      if (a == kAlgoRing && p == kProtoSimple && func == kFuncAllReduce && topo_.nNodes > 1 &&
          bytes / (static_cast<size_t>(runChannels(a)) * topo_.nRanks) >= 64)
        lat *= topo_.sm < 80 ? 1.9 : 1.4;
      table->us[a][p] = static_cast<float>(lat + double(bytes) / (1000.0 * bw));
    }
  }
}

void GpuCostModel::shape(FuncId /*func*/, int algo, int proto, size_t bytes, int* nChannels, int* nThreads) const {
  int nc = runChannels(algo);
  int nt = maxThreads(algo, proto);
  size_t threshold = proto == kProtoLL ? kLLThreadThreshold : proto == kProtoLL128 ? kLL128ThreadThreshold
                                                                                   : kSimpleThreadThreshold;
  if (algo == kAlgoRing && proto == kProtoLL) threshold *= static_cast<size_t>(std::max(1, topo_.nRanks));
  while (bytes < static_cast<size_t>(nc) * nt * threshold) {
    if (nc >= 2) {
      --nc;
    } else if (nt % 128 == 0) {
      nt /= 2;
    } else {
      break;
    }
  }
  if (proto == kProtoSimple) {
    if (algo == kAlgoRing) nt += kWarp;      // the synchronisation warp
    if (algo == kAlgoTree) nt += 4 * kWarp;
  }
  nt = std::max(nt, 3 * kWarp);
  if (algo == kAlgoTree || algo == kAlgoPat) nt = kTreeThreads;
  *nChannels = nc;
  *nThreads = nt;
}

}  // namespace accl
