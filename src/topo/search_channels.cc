// ChannelSearcher: the channels of one search configuration. Channels are found one after the
// other; each is a depth-first search over orders of the node's GPUs in which every hop must be
// within the configuration's path-type limit and find its bandwidth free on every link of the
// path (which is then reserved). Multi-node channels first pick the NET they enter by and the GPU
// that NET feeds; rings then end at a GPU that can reach the exit NET, trees leave by a NET at
// their first GPU. Candidates are tried best path type first, then most free bandwidth, then the
// next device number, so a uniform box (NVSwitch) gets the natural ring 0 1 2 ... n-1.
#include <algorithm>
#include <limits>

#include "topo/search_internal.h"

namespace accl {

namespace {
bool isTree(GraphPattern p) { return p != GraphPattern::Ring; }
}  // namespace

ChannelSearcher::ChannelSearcher(const TopoSystem& system, long globalBudget, long tryBudget)
    : s_(system), gpus_(system.nodesOf(TopoNodeType::Gpu)), nets_(system.nodesOf(TopoNodeType::Net)),
      globalBudget_(globalBudget), tryBudget_(tryBudget) {}

bool ChannelSearcher::overBudget() {
  ++steps_;
  return steps_ - tryStart_ > tryBudget_ || steps_ > globalBudget_;
}

bool ChannelSearcher::take(int from, int to, double bw, int sign) {
  const TopoPath& p = s_.path(from, to);
  if (p.type == kPathDis) return false;
  // Intel root complexes cap GPU-to-GPU traffic they forward: such PCIe hops cost 20% more.
  double pciFactor = 1.0;
  if (s_.nodes[from].type == TopoNodeType::Gpu && s_.nodes[to].type == TopoNodeType::Gpu) {
    for (int h : p.hops) {
      if (s_.nodes[h].type == TopoNodeType::Cpu && s_.nodes[h].vendor == "GenuineIntel") pciFactor = 1.2;
    }
  }
  int prev = from;
  for (size_t i = 0; i < p.hops.size(); i++) {
    const int li = p.hopLinks[i];
    const double need = bw * (s_.nodes[prev].links[li].type == TopoLinkType::Pci ? pciFactor : 1.0);
    double& left = left_[prev][li];
    if (sign > 0 && left + 1e-9 < need) {
      // Give back what this call already took.
      int q = from;
      for (size_t j = 0; j < i; j++) {
        const int lj = p.hopLinks[j];
        left_[q][lj] += bw * (s_.nodes[q].links[lj].type == TopoLinkType::Pci ? pciFactor : 1.0);
        q = p.hops[j];
      }
      return false;
    }
    left += sign > 0 ? -need : need;
    prev = p.hops[i];
  }
  return true;
}

double ChannelSearcher::residual(int from, int to) const {
  const TopoPath& p = s_.path(from, to);
  double r = std::numeric_limits<double>::max();
  int prev = from;
  for (size_t i = 0; i < p.hops.size(); i++) {
    r = std::min(r, left_[prev][p.hopLinks[i]]);
    prev = p.hops[i];
  }
  return r;
}

bool ChannelSearcher::hopOk(const SearchConfig& cfg, int from, int to, bool intra) const {
  const int limit = intra ? cfg.typeIntra : cfg.typeInter;
  if (s_.path(from, to).type > limit) return false;
  // Trees carry data both ways: the reverse path must qualify too.
  return !isTree(cfg.pattern) || s_.path(to, from).type <= limit;
}

bool ChannelSearcher::run(const SearchConfig& cfg, SearchResult* out) {
  left_.assign(s_.nodes.size(), {});
  for (size_t i = 0; i < s_.nodes.size(); i++) {
    for (const TopoLink& l : s_.nodes[i].links) left_[i].push_back(l.bw);
  }
  netUses_.assign(s_.nodes.size(), 0);
  tryStart_ = steps_;
  out->channels.clear();
  out->worstIntra = out->worstInter = kPathLoc;
  while (static_cast<int>(out->channels.size()) < cfg.maxChannels) {
    const SearchChannel* replay = cfg.sameChannels && !out->channels.empty() ? &out->channels[0] : nullptr;
    SearchChannel ch;
    if (!channel(cfg, replay, &ch)) break;
    const auto& g = ch.gpus;
    for (size_t i = 0; i + 1 < g.size(); i++) out->worstIntra = std::max(out->worstIntra, s_.path(g[i], g[i + 1]).type);
    if (!cfg.multiNode && !isTree(cfg.pattern) && g.size() > 1) {
      out->worstIntra = std::max(out->worstIntra, s_.path(g.back(), g.front()).type);
    }
    if (cfg.multiNode) {
      const int exitGpu = isTree(cfg.pattern) ? g.front() : g.back();
      out->worstInter = std::max({out->worstInter, s_.path(ch.netIn, g.front()).type, s_.path(exitGpu, ch.netOut).type});
    }
    out->channels.push_back(std::move(ch));
  }
  return !exhausted();
}

bool ChannelSearcher::channel(const SearchConfig& cfg, const SearchChannel* replay, SearchChannel* out) {
  std::vector<char> used(s_.nodes.size(), 0);
  if (!cfg.multiNode) {
    const int start = replay ? replay->gpus[0] : gpus_[0];
    out->gpus = {start};
    used[start] = 1;
    return dfs(cfg, start, -1, replay, &used, out);
  }
  std::vector<int> nets = nets_;
  std::stable_sort(nets.begin(), nets.end(), [&](int a, int b) { return netUses_[a] < netUses_[b]; });
  for (int net : nets) {
    std::vector<int> firsts = gpus_;
    if (replay) {
      firsts = {replay->gpus[0]};
    } else {
      std::stable_sort(firsts.begin(), firsts.end(), [&](int a, int b) {
        const TopoPath& pa = s_.path(net, a);
        const TopoPath& pb = s_.path(net, b);
        return pa.type != pb.type ? pa.type < pb.type : pa.bw > pb.bw;
      });
    }
    for (int g : firsts) {
      if (!hopOk(cfg, net, g, false) || !take(net, g, cfg.bwInter, +1)) continue;
      out->gpus = {g};
      out->netIn = net;
      used[g] = 1;
      if (isTree(cfg.pattern)) {
        // The tree's links to other nodes all hang off its first GPU.
        std::vector<int> exits{net};
        if (cfg.crossNic && cfg.pattern != GraphPattern::Tree) {
          for (int n : nets_) {
            if (n != net) exits.push_back(n);
          }
        }
        for (int x : exits) {
          if (!hopOk(cfg, g, x, false) || !take(g, x, cfg.bwInter, +1)) continue;
          out->netOut = x;
          if (dfs(cfg, g, -1, replay, &used, out)) {
            netUses_[net]++;
            return true;
          }
          take(g, x, cfg.bwInter, -1);
          if (overBudget()) break;
        }
      } else if (dfs(cfg, g, cfg.crossNic ? -1 : net, replay, &used, out)) {
        netUses_[net]++;
        return true;
      }
      used[g] = 0;
      take(net, g, cfg.bwInter, -1);
      if (overBudget()) return false;
    }
  }
  return false;
}

bool ChannelSearcher::dfs(const SearchConfig& cfg, int cur, int exitNet, const SearchChannel* replay,
                          std::vector<char>* used, SearchChannel* ch) {
  if (overBudget()) return false;
  const size_t placed = ch->gpus.size();
  if (placed == gpus_.size()) return closeChannel(cfg, cur, exitNet, ch);
  std::vector<int> cands;
  for (int g : gpus_) {
    if (!(*used)[g]) cands.push_back(g);
  }
  if (exitNet >= 0) {
    // A ring leaving by a fixed NET needs some GPU still to place that can reach it.
    bool any = false;
    for (int g : cands) any = any || s_.path(g, exitNet).type <= cfg.typeInter;
    if (!any) return false;
  }
  if (replay) {
    cands = {replay->gpus[placed]};
    if ((*used)[cands[0]]) return false;
  } else {
    const int n = static_cast<int>(s_.nodes.size());
    const int curDev = s_.nodes[cur].dev;
    std::vector<double> res(n, 0);
    for (int g : cands) res[g] = residual(cur, g);
    std::stable_sort(cands.begin(), cands.end(), [&](int a, int b) {
      const int ta = s_.path(cur, a).type, tb = s_.path(cur, b).type;
      if (ta != tb) return ta < tb;
      if (res[a] != res[b]) return res[a] > res[b];
      const int span = static_cast<int>(gpus_.size()) + 1024;
      return (s_.nodes[a].dev - curDev + span) % span < (s_.nodes[b].dev - curDev + span) % span;
    });
  }
  for (int next : cands) {
    if (!hopOk(cfg, cur, next, true) || !take(cur, next, cfg.bwIntra, +1)) continue;
    (*used)[next] = 1;
    ch->gpus.push_back(next);
    if (dfs(cfg, next, exitNet, replay, used, ch)) return true;
    ch->gpus.pop_back();
    (*used)[next] = 0;
    take(cur, next, cfg.bwIntra, -1);
    if (steps_ - tryStart_ > tryBudget_ || steps_ > globalBudget_) return false;
  }
  return false;
}

bool ChannelSearcher::closeChannel(const SearchConfig& cfg, int last, int exitNet, SearchChannel* ch) {
  if (isTree(cfg.pattern)) return true;
  if (!cfg.multiNode) {
    const int first = ch->gpus.front();
    if (first == last) return true;
    return hopOk(cfg, last, first, true) && take(last, first, cfg.bwIntra, +1);
  }
  std::vector<int> exits;
  if (exitNet >= 0) {
    exits = {exitNet};
  } else {
    // The NET nearest the last GPU; the entry NET first among equals.
    exits = nets_;
    std::stable_sort(exits.begin(), exits.end(), [&](int a, int b) {
      const TopoPath& pa = s_.path(last, a);
      const TopoPath& pb = s_.path(last, b);
      if (pa.type != pb.type) return pa.type < pb.type;
      if (pa.bw != pb.bw) return pa.bw > pb.bw;
      return (a == ch->netIn) > (b == ch->netIn);
    });
  }
  for (int x : exits) {
    if (hopOk(cfg, last, x, false) && take(last, x, cfg.bwInter, +1)) {
      ch->netOut = x;
      return true;
    }
  }
  return false;
}

}  // namespace accl
