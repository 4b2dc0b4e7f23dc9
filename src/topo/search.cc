// searchGraph: which configurations to try and which result wins, NCCL-style.
//
// Pass 1 starts at the fastest per-channel speed the topology can carry (NCCL's speed tables; the
// intra-node table on one node, the inter-node one across nodes) and the tightest path types, then
// relaxes in NCCL's order: same GPU order on every channel -> per-channel orders; BALANCED_TREE
// -> TREE (sm90+); looser intra-node path types (across nodes: never looser than the GPU-NET type);
// looser GPU-NET types; crossing NICs (NCCL_CROSS_NIC=2); and finally a lower speed. A result beats
// another when channels x bandwidth is strictly higher; once one is found, looser types are not
// tried, and speeds stop going down at half the best one. Reaching maxChannels ends pass 1.
// Fast results are then duplicated (x2 channels at half the bandwidth) as NCCL does, and pass 2
// tries to raise the per-channel speed at that channel count. Budgets: 2^19 search steps in all,
// 2^14 per configuration, which keeps every fixture well under 50 ms.
//
// A system without GPUs gets one channel over the CPU: bwIntra = kCpuChannelBw (what one core
// copying through shared memory sustains on a current server, ~20 GB/s), type PHB; across nodes
// bwInter is the fastest NET's bandwidth.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include "topo/search_internal.h"
#include "topo/topo_internal.h"
#include "util/check.h"

namespace accl {
namespace {

constexpr double kCpuChannelBw = 20.0;
constexpr long kGlobalBudget = 1L << 19;
constexpr long kTryBudget = 1L << 14;

const std::vector<double>& speeds(int sm, bool inter) {
  static const std::vector<double> intra100 = {90, 80, 70, 60, 50, 40, 30, 24, 20, 19, 18};
  static const std::vector<double> intra90 = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
  static const std::vector<double> intraOld = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
  static const std::vector<double> inter100 = {96, 48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};
  static const std::vector<double> inter90 = {48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};
  static const std::vector<double> interOld = {48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12};
  if (inter) return sm >= 100 ? inter100 : sm >= 90 ? inter90 : interOld;
  return sm >= 100 ? intra100 : sm >= 90 ? intra90 : intraOld;
}

struct Found {
  bool ok = false;
  SearchConfig cfg;
  SearchResult res;
  double score() const { return ok ? static_cast<double>(res.channels.size()) * cfg.bwIntra : 0; }
};

void toGraph(const TopoSystem& s, const Found& f, const SearchRequest& req, TopoGraph* g) {
  g->pattern = f.cfg.pattern;
  g->nChannels = static_cast<int>(f.res.channels.size());
  g->bwIntra = f.cfg.bwIntra;
  g->bwInter = req.multiNode ? f.cfg.bwInter : 0;
  g->typeIntra = f.res.worstIntra;
  g->typeInter = req.multiNode ? f.res.worstInter : kPathLoc;
  g->sameChannels = f.cfg.sameChannels;
  g->crossNic = f.cfg.crossNic;
  g->latencyInter = 0;
  g->channels.clear();
  for (const SearchChannel& c : f.res.channels) {
    TopoGraphChannel out;
    for (int n : c.gpus) out.gpuRanks.push_back(s.nodes[n].rank);
    if (c.netIn >= 0) {
      out.netIn = s.nodes[c.netIn].dev;
      g->latencyInter = std::max(g->latencyInter, s.nodes[c.netIn].latencyUs);
    }
    if (c.netOut >= 0) {
      out.netOut = s.nodes[c.netOut].dev;
      g->latencyInter = std::max(g->latencyInter, s.nodes[c.netOut].latencyUs);
    }
    g->channels.push_back(std::move(out));
  }
}

// NCCL duplicates fast graphs: twice the channels at half the bandwidth each.
void duplicate(int sm, int maxChannels, Found* f) {
  const int n = static_cast<int>(f->res.channels.size());
  if (n == 0 || f->cfg.bwIntra < 25.0) return;
  if (sm > 80 && f->cfg.bwIntra < 50.0 && n > 4) return;
  const int dup = std::min(2 * n, std::max(maxChannels, n));
  for (int i = 0; i < dup - n; i++) f->res.channels.push_back(f->res.channels[i]);
  const int div = (dup + n - 1) / n;
  f->cfg.bwIntra /= div;
  f->cfg.bwInter /= div;
}

ncclResult_t cpuGraph(const TopoSystem& s, const SearchRequest& req, TopoGraph* out) {
  *out = TopoGraph();
  out->pattern = req.pattern;
  out->nChannels = 1;
  out->bwIntra = kCpuChannelBw;
  out->typeIntra = kPathPhb;
  TopoGraphChannel ch;
  if (req.multiNode) {
    int best = -1;
    for (int n : s.nodesOf(TopoNodeType::Net)) {
      if (best < 0 || s.nodes[n].netBw > s.nodes[best].netBw) best = n;
    }
    out->typeInter = kPathPhb;
    if (best >= 0) {
      out->bwInter = s.nodes[best].netBw;
      out->latencyInter = s.nodes[best].latencyUs;
      ch.netIn = ch.netOut = s.nodes[best].dev;
      const int cpu = s.localCpu(best);
      if (cpu >= 0) out->typeInter = std::max<int>(kPathPhb, s.path(cpu, best).type);
    } else {
      out->bwInter = topo_bw::kNetUnknown;
    }
  }
  out->channels.push_back(ch);
  return ncclSuccess;
}

}  // namespace

const char* graphPatternName(GraphPattern p) {
  switch (p) {
    case GraphPattern::BalancedTree: return "BALANCED_TREE";
    case GraphPattern::SplitTree: return "SPLIT_TREE";
    case GraphPattern::Tree: return "TREE";
    case GraphPattern::Ring: return "RING";
  }
  return "?";
}

ncclResult_t searchGraph(const TopoSystem& s, const SearchRequest& req, TopoGraph* out) {
  const std::vector<int> gpus = s.nodesOf(TopoNodeType::Gpu);
  const std::vector<int> nets = s.nodesOf(TopoNodeType::Net);
  if (gpus.empty()) return cpuGraph(s, req, out);
  const bool multi = req.multiNode && !nets.empty();
  const int sm = s.maxSm();
  const int maxCh = std::max(1, req.maxChannels);
  const int minCh = std::max(1, std::min(req.minChannels, maxCh));

  // The fastest a channel could go, and the most a GPU can move in all.
  double maxBw = 0, totalBw = 0;
  std::set<int> intraTypes, interTypes;
  for (int g : gpus) {
    double sum = 0;
    for (const TopoLink& l : s.nodes[g].links) sum += l.bw;
    totalBw = std::max(totalBw, sum);
    for (int h : gpus) {
      if (h == g) continue;
      intraTypes.insert(s.path(g, h).type);
      if (!multi) maxBw = std::max(maxBw, s.path(g, h).bw);
    }
    for (int n : nets) {
      if (!multi) break;
      interTypes.insert(std::max(s.path(g, n).type, s.path(n, g).type));
      interTypes.insert(s.path(g, n).type);
      maxBw = std::max(maxBw, std::min(s.path(g, n).bw, s.path(n, g).bw));
    }
  }
  if (gpus.size() == 1) {
    intraTypes = {kPathLoc};
    if (!multi) maxBw = totalBw = topo_bw::kLoc;
  }
  intraTypes.erase(kPathDis);
  interTypes.erase(kPathDis);
  if (intraTypes.empty()) intraTypes.insert(kPathSys);
  if (multi && interTypes.empty()) interTypes.insert(kPathSys);
  if (!multi) interTypes = {kPathLoc};

  const std::vector<double>& sp = speeds(sm, multi);
  size_t idx0 = 0;
  while (idx0 + 1 < sp.size() && (sp[idx0] > maxBw || sp[idx0] * minCh > totalBw)) idx0++;

  std::vector<GraphPattern> patterns{req.pattern};
  if (req.pattern == GraphPattern::BalancedTree && sm >= 90) patterns.push_back(GraphPattern::Tree);
  std::vector<int> crossOpts{req.crossNic == 1 ? 1 : 0};
  if (multi && req.crossNic == 2 && (req.pattern == GraphPattern::Ring || req.pattern == GraphPattern::BalancedTree)) {
    crossOpts.push_back(1);
  }
  std::vector<bool> sameOpts{true};
  if (gpus.size() > 1) sameOpts.push_back(false);

  ChannelSearcher searcher(s, kGlobalBudget, kTryBudget);
  Found best;
  bool done = false;
  auto attempt = [&](const SearchConfig& cfg, int minChannels) {
    Found f;
    f.cfg = cfg;
    if (!searcher.run(cfg, &f.res)) done = true;
    f.ok = static_cast<int>(f.res.channels.size()) >= minChannels;
    if (f.ok && f.score() > best.score() + 1e-9) best = f;
    if (f.ok && (static_cast<int>(f.res.channels.size()) >= cfg.maxChannels ||
                 f.res.channels.size() * cfg.bwInter >= totalBw)) {
      done = true;  // as good as it gets at this speed
    }
    return f.ok;
  };

  // Pass 1.
  for (size_t i = idx0; i < sp.size() && !done; i++) {
    if (best.ok && sp[i] / best.cfg.bwInter <= 0.49) break;
    for (int tInter : interTypes) {
      if (done || (best.ok && tInter > best.cfg.typeInter)) break;
      for (int tIntra : intraTypes) {
        if (done || (multi && tIntra > tInter && tIntra != *intraTypes.begin()) ||
            (best.ok && tIntra > best.cfg.typeIntra)) {
          break;
        }
        for (int cross : crossOpts) {
          for (GraphPattern pat : patterns) {
            for (bool same : sameOpts) {
              if (done) break;
              SearchConfig cfg;
              cfg.pattern = pat;
              cfg.multiNode = multi;
              cfg.bwIntra = cfg.bwInter = sp[i];
              cfg.typeIntra = tIntra;
              cfg.typeInter = multi ? tInter : kPathLoc;
              cfg.crossNic = cross;
              cfg.sameChannels = same;
              cfg.maxChannels = maxCh;
              attempt(cfg, minCh);
            }
          }
        }
      }
    }
  }

  if (best.ok) {
    duplicate(sm, maxCh, &best);
    // Pass 2: a higher speed at the channel count found.
    const int nFound = static_cast<int>(best.res.channels.size());
    size_t i = 0;
    while (i + 1 < sp.size() && sp[i] > best.cfg.bwInter) i++;
    done = false;
    const bool ring = best.cfg.pattern == GraphPattern::Ring;
    while (i > 0 && !searcher.exhausted()) {
      SearchConfig cfg = best.cfg;
      --i;
      if (ring) {
        cfg.bwIntra = cfg.bwInter = sp[i];
      } else if (multi && sp[i] <= 2 * cfg.bwInter) {
        cfg.bwIntra = sp[i];  // trees across nodes may run faster inside the node
      } else {
        break;
      }
      if (!attempt(cfg, nFound)) break;
    }
  } else {
    // Fallback: GPUs in PCI order, one slow channel.
    std::vector<int> byBus = gpus;
    std::stable_sort(byBus.begin(), byBus.end(), [&](int a, int b) { return s.nodes[a].id < s.nodes[b].id; });
    best.ok = true;
    best.cfg.pattern = req.pattern;
    best.cfg.multiNode = multi;
    best.cfg.bwIntra = best.cfg.bwInter = 0.1;
    best.cfg.sameChannels = true;
    SearchChannel ch;
    ch.gpus = byBus;
    if (multi) ch.netIn = ch.netOut = nets[0];
    best.res.channels = {ch};
    best.res.worstIntra = gpus.size() > 1 ? kPathSys : kPathLoc;
    best.res.worstInter = multi ? kPathSys : kPathLoc;
    ACCL_INFO(ACCL_LOG_GRAPH, "graph search found nothing for pattern %s; using the PCI-order fallback",
              graphPatternName(req.pattern));
  }
  toGraph(s, best, req, out);
  if (!multi && req.multiNode) out->bwInter = 0;
  ACCL_INFO(ACCL_LOG_GRAPH, "%s", describeGraph(*out).c_str());
  return ncclSuccess;
}

std::string describeGraph(const TopoGraph& g) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "Pattern %s, crossNic %d, nChannels %d, bw %.1f/%.1f, type %s/%s, sameChannels %d, latencyInter %.1f\n",
                graphPatternName(g.pattern), g.crossNic, g.nChannels, g.bwIntra, g.bwInter,
                topoPathTypeName(g.typeIntra), topoPathTypeName(g.typeInter), g.sameChannels ? 1 : 0,
                g.latencyInter);
  std::string out = buf;
  const char* tag = g.pattern == GraphPattern::Ring ? "RING" : "TREE";
  for (size_t c = 0; c < g.channels.size(); c++) {
    const TopoGraphChannel& ch = g.channels[c];
    out += std::string(tag) + " " + std::to_string(c) + " :";
    if (ch.netIn >= 0) out += " NET/" + std::to_string(ch.netIn);
    for (int r : ch.gpuRanks) out += " GPU/" + std::to_string(r);
    if (ch.netOut >= 0) out += " NET/" + std::to_string(ch.netOut);
    out += "\n";
  }
  return out;
}

bool graphSupportsLl128(const TopoGraph& ring, int sm, bool ll128C2c) {
  if (ring.typeIntra > kPathNvb) return false;
  return ring.typeInter <= kPathPxb || (sm >= 90 && ll128C2c && ring.typeInter <= kPathPxn);
}

}  // namespace accl
