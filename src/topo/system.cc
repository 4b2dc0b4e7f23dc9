// TopoSystem queries: nodes by type, GPUs / NETs by dev, precomputed paths, the P2P and GDR
// checks, and the structural comparison used by tests and the XML round trip.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "topo/topo_internal.h"

namespace accl {

std::vector<int> TopoSystem::nodesOf(TopoNodeType t) const {
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(nodes.size()); i++) {
    if (nodes[i].type == t) out.push_back(i);
  }
  if (t == TopoNodeType::Gpu) {
    std::stable_sort(out.begin(), out.end(), [&](int a, int b) { return nodes[a].dev < nodes[b].dev; });
  }
  return out;
}

int TopoSystem::gpuByDev(int dev) const {
  for (int i = 0; i < static_cast<int>(nodes.size()); i++) {
    if (nodes[i].type == TopoNodeType::Gpu && nodes[i].dev == dev) return i;
  }
  return -1;
}

int TopoSystem::netByDev(int dev) const {
  for (int i = 0; i < static_cast<int>(nodes.size()); i++) {
    if (nodes[i].type == TopoNodeType::Net && nodes[i].dev == dev) return i;
  }
  return -1;
}

const TopoPath& TopoSystem::path(int from, int to) const {
  static const TopoPath kNone;
  const int n = static_cast<int>(paths_.size());
  if (from < 0 || to < 0 || from >= n || to >= n) return kNone;
  return paths_[from][to];
}

int TopoSystem::effectiveP2pLevel() const {
  if (policy.p2pDisable) return kPathLoc;
  if (policy.p2pLevel >= 0) return policy.p2pLevel;
  int cpu = -1;
  for (int i = 0; i < static_cast<int>(nodes.size()) && cpu < 0; i++) {
    if (nodes[i].type == TopoNodeType::Cpu) cpu = i;
  }
  // AMD's root complexes forward P2P well: allow it across sockets on small boxes.
  if (cpu >= 0 && nodes[cpu].arch == "x86_64" && nodes[cpu].vendor == "AuthenticAMD" &&
      count(TopoNodeType::Gpu) <= 2) {
    return kPathSys;
  }
  return kPathPxb;
}

int TopoSystem::effectiveGdrLevel() const { return policy.netGdrLevel >= 0 ? policy.netGdrLevel : kPathPxb; }

int TopoSystem::localCpu(int node) const {
  int best = -1;
  for (int c : nodesOf(TopoNodeType::Cpu)) {
    const TopoPath& p = path(node, c);
    if (c == node) return c;
    if (p.type == kPathDis) continue;
    if (best < 0 || p.type < path(node, best).type || (p.type == path(node, best).type && p.bw > path(node, best).bw)) {
      best = c;
    }
  }
  return best;
}

bool TopoSystem::p2pAllowed(int gpuA, int gpuB) const {
  const int n = static_cast<int>(nodes.size());
  if (gpuA < 0 || gpuB < 0 || gpuA >= n || gpuB >= n) return false;
  if (nodes[gpuA].type != TopoNodeType::Gpu || nodes[gpuB].type != TopoNodeType::Gpu) return false;
  return path(gpuA, gpuB).type <= effectiveP2pLevel();
}

namespace {
// A NET's gdr flag; a NIC has GDR when one of its ports does.
bool netGdr(const TopoSystem& s, int net) {
  const TopoNode& n = s.nodes[net];
  if (n.type == TopoNodeType::Net) return n.gdr;
  if (n.type != TopoNodeType::Nic) return false;
  for (const TopoLink& l : n.links) {
    if (s.nodes[l.remote].type == TopoNodeType::Net && s.nodes[l.remote].gdr) return true;
  }
  return false;
}
}  // namespace

bool TopoSystem::gdrAllowed(int gpu, int net) const {
  const int n = static_cast<int>(nodes.size());
  if (gpu < 0 || net < 0 || gpu >= n || net >= n || nodes[gpu].type != TopoNodeType::Gpu) return false;
  if (!nodes[gpu].gdr || !netGdr(*this, net)) return false;
  const TopoPath& p = path(gpu, net);
  int dist = p.type;
  if (dist == kPathPxn) {
    // The relay GPU does the RDMA: its distance to the NIC is what counts.
    for (int h : p.hops) {
      if (h != gpu && nodes[h].type == TopoNodeType::Gpu) {
        dist = path(h, net).type;
        break;
      }
    }
  }
  if (policy.gdrC2c && dist == kPathP2c) dist = kPathC2c;
  return dist <= effectiveGdrLevel();
}

int TopoSystem::maxSm() const {
  int sm = 0;
  for (const TopoNode& n : nodes) {
    if (n.type == TopoNodeType::Gpu) sm = std::max(sm, n.sm);
  }
  return sm;
}

std::string TopoSystem::cpuVendor() const {
  for (const TopoNode& n : nodes) {
    if (n.type == TopoNodeType::Cpu) return n.vendor;
  }
  return "";
}

namespace {
bool near(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(a)); }

std::string nodeName(const TopoNode& n, int i) {
  return std::string(topoNodeTypeName(n.type)) + "[" + std::to_string(i) + " " + n.label + "]";
}
}  // namespace

std::string TopoSystem::firstDifference(const TopoSystem& a, const TopoSystem& b) {
  char buf[256];
  if (a.nodes.size() != b.nodes.size()) {
    std::snprintf(buf, sizeof buf, "node count %zu vs %zu", a.nodes.size(), b.nodes.size());
    return buf;
  }
  for (size_t i = 0; i < a.nodes.size(); i++) {
    const TopoNode& x = a.nodes[i];
    const TopoNode& y = b.nodes[i];
    const std::string where = nodeName(x, static_cast<int>(i));
    auto diff = [&](const char* what, const std::string& u, const std::string& v) {
      return where + ": " + what + " " + u + " vs " + v;
    };
    auto num = [](double v) {
      char t[64];
      std::snprintf(t, sizeof t, "%g", v);
      return std::string(t);
    };
    if (x.type != y.type) return diff("type", topoNodeTypeName(x.type), topoNodeTypeName(y.type));
    if (x.id != y.id) return diff("id", num(double(x.id)), num(double(y.id)));
    if (x.label != y.label) return diff("label", x.label, y.label);
    if (x.dev != y.dev || x.rank != y.rank || x.sm != y.sm || x.gdr != y.gdr) {
      return diff("gpu dev/rank/sm/gdr", num(x.dev) + "/" + num(x.rank) + "/" + num(x.sm) + "/" + num(x.gdr),
                  num(y.dev) + "/" + num(y.rank) + "/" + num(y.sm) + "/" + num(y.gdr));
    }
    if (x.arch != y.arch || x.vendor != y.vendor || x.familyId != y.familyId || x.modelId != y.modelId ||
        x.hostHash != y.hostHash) {
      return diff("cpu arch/vendor/family/model/hash", x.arch + "/" + x.vendor, y.arch + "/" + y.vendor);
    }
    if (!near(x.netBw, y.netBw) || !near(x.latencyUs, y.latencyUs) || x.guid != y.guid || x.port != y.port ||
        x.maxConn != y.maxConn || x.coll != y.coll) {
      return diff("net bw/latency/guid/port/maxconn/coll", num(x.netBw), num(y.netBw));
    }
    if (x.links.size() != y.links.size()) return diff("link count", num(x.links.size()), num(y.links.size()));
    for (size_t l = 0; l < x.links.size(); l++) {
      const TopoLink& p = x.links[l];
      const TopoLink& q = y.links[l];
      if (p.remote != q.remote || p.type != q.type || !near(p.bw, q.bw)) {
        return diff(("link " + std::to_string(l)).c_str(),
                    std::string(topoLinkTypeName(p.type)) + "->" + std::to_string(p.remote) + " " + num(p.bw),
                    std::string(topoLinkTypeName(q.type)) + "->" + std::to_string(q.remote) + " " + num(q.bw));
      }
    }
  }
  for (size_t i = 0; i < a.nodes.size(); i++) {
    for (size_t j = 0; j < a.nodes.size(); j++) {
      const TopoPath& p = a.path(static_cast<int>(i), static_cast<int>(j));
      const TopoPath& q = b.path(static_cast<int>(i), static_cast<int>(j));
      if (p.type != q.type || !near(p.bw, q.bw)) {
        return "path " + nodeName(a.nodes[i], static_cast<int>(i)) + " -> " +
               nodeName(a.nodes[j], static_cast<int>(j)) + ": " + topoPathTypeName(p.type) + " vs " +
               topoPathTypeName(q.type);
      }
    }
  }
  return "";
}

}  // namespace accl
