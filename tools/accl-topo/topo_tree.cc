// Builds accl-topo's forest (see topo_tree.h) with a depth-first walk over PCI and NET links
// from each CPU.
#include "topo_tree.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>
#include <utility>

namespace accl_topo {

using accl::TopoLinkType;
using accl::TopoNodeType;
using accl::TopoSystem;

const accl::TopoLink* findLink(const TopoSystem& sys, int from, int to) {
  for (const accl::TopoLink& l : sys.nodes[from].links)
    if (l.remote == to) return &l;
  return nullptr;
}

std::string fmtBw(double gbps) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", gbps);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s;
}

std::string nodeName(const TopoSystem& sys, int node) {
  const accl::TopoNode& n = sys.nodes[node];
  switch (n.type) {
    case TopoNodeType::Gpu: return "GPU" + std::to_string(n.dev);
    case TopoNodeType::Cpu: return "CPU" + std::to_string(n.id);
    case TopoNodeType::Net: return "NET" + std::to_string(n.id) + " " + n.label;
    case TopoNodeType::Nic: return "NIC " + n.label;
    case TopoNodeType::Pci: return "PCI " + n.label;
    case TopoNodeType::Nvs: return "NVS" + (sys.count(TopoNodeType::Nvs) > 1 ? std::to_string(n.id) : std::string());
  }
  return "?";
}

namespace {

// Links a tree walk follows: PCI links (CPU > switches > devices) and a NIC's NET links.
bool treeLink(const accl::TopoNode& from, const accl::TopoNode& to, TopoLinkType type) {
  if (to.type == TopoNodeType::Cpu || to.type == TopoNodeType::Nvs) return false;
  if (type == TopoLinkType::Pci) return true;
  return type == TopoLinkType::Net && from.type == TopoNodeType::Nic && to.type == TopoNodeType::Net;
}

void walk(const TopoSystem& sys, int u, int cpu, TopoTree* t) {
  t->socket[u] = cpu;
  std::vector<std::pair<int, const accl::TopoLink*>> next;
  for (const accl::TopoLink& l : sys.nodes[u].links) {
    int v = l.remote;
    if (t->socket[v] >= 0 || std::find(t->roots.begin(), t->roots.end(), v) != t->roots.end()) continue;
    if (!treeLink(sys.nodes[u], sys.nodes[v], l.type)) continue;
    bool dup = false;
    for (const auto& n : next) dup |= n.first == v;
    if (!dup) next.emplace_back(v, &l);
  }
  std::sort(next.begin(), next.end());
  for (const auto& [v, l] : next) {
    if (t->socket[v] >= 0) continue;  // reached through an earlier sibling
    t->parent[v] = u;
    t->up[v] = {u, v, l->type, l->bw};
    t->children[u].push_back(v);
    walk(sys, v, cpu, t);
  }
}

}  // namespace

TopoTree buildTree(const TopoSystem& sys) {
  size_t n = sys.nodes.size();
  TopoTree t;
  t.parent.assign(n, -1);
  t.up.assign(n, {});
  t.children.assign(n, {});
  t.socket.assign(n, -1);
  for (int cpu : sys.nodesOf(TopoNodeType::Cpu)) t.roots.push_back(cpu);
  for (int cpu : sys.nodesOf(TopoNodeType::Cpu)) walk(sys, cpu, cpu, &t);
  // Anything left (NVSwitches, a GPU with no PCI path) becomes a root of its own.
  for (size_t i = 0; i < n; ++i)
    if (t.socket[i] < 0 && std::find(t.roots.begin(), t.roots.end(), (int)i) == t.roots.end()) t.roots.push_back((int)i);

  std::set<std::tuple<int, int, int>> seen;
  for (size_t u = 0; u < n; ++u) {
    for (const accl::TopoLink& l : sys.nodes[u].links) {
      int v = l.remote;
      if (v == (int)u) continue;
      if ((t.parent[v] == (int)u && t.up[v].type == l.type) || (t.parent[u] == v && t.up[u].type == l.type)) continue;
      if (!seen.insert({std::min<int>(u, v), std::max<int>(u, v), (int)l.type}).second) continue;
      t.extra.push_back({(int)u, v, l.type, l.bw});
    }
  }
  return t;
}

}  // namespace accl_topo
