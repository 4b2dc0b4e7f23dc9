// Text rendering for accl-topo (see text_view.h).
#include "text_view.h"

#include <cstdarg>
#include <cstdio>
#include <string>

#include "topo_tree.h"

namespace accl_topo {

using accl::TopoLinkType;
using accl::TopoNodeType;
using accl::TopoSystem;

namespace {

void appendf(std::string* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string* out, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  *out += buf;
}

std::string hexId(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// The attributes worth showing for one node.
std::string details(const TopoSystem& sys, int i) {
  const accl::TopoNode& n = sys.nodes[i];
  std::string d;
  switch (n.type) {
    case TopoNodeType::Cpu:
      d = n.arch.empty() ? "" : n.arch;
      if (!n.vendor.empty()) d += " " + n.vendor;
      if (n.familyId || n.modelId) d += " family " + std::to_string(n.familyId) + " model " + std::to_string(n.modelId);
      if (n.hostHash) d += " host_hash " + hexId(n.hostHash);
      break;
    case TopoNodeType::Gpu:
      d = n.label + " sm " + std::to_string(n.sm);
      if (n.rank >= 0) d += " rank " + std::to_string(n.rank);
      d += n.gdr ? " gdr" : " no-gdr";
      break;
    case TopoNodeType::Net:
      d = fmtBw(n.netBw) + " GB/s port " + std::to_string(n.port) + " guid " + hexId(n.guid) + " maxconn " +
          std::to_string(n.maxConn) + (n.gdr ? " gdr" : " no-gdr");
      if (n.coll) d += " coll";
      if (n.latencyUs > 0) d += " latency " + fmtBw(n.latencyUs) + " us";
      break;
    case TopoNodeType::Pci: d = "switch"; break;
    case TopoNodeType::Nic:
    case TopoNodeType::Nvs: break;
  }
  return d;
}

void printNode(const TopoSystem& sys, const TopoTree& t, int i, int depth, std::string* out) {
  std::string indent(2 * depth, ' ');
  std::string link;
  if (t.parent[i] >= 0)
    link = std::string("[") + accl::topoLinkTypeName(t.up[i].type) + " " + fmtBw(t.up[i].bw) + " GB/s] ";
  std::string d = details(sys, i);
  appendf(out, "%s%s%s%s%s\n", indent.c_str(), link.c_str(), nodeName(sys, i).c_str(), d.empty() ? "" : "  ",
          d.c_str());
  for (int c : t.children[i]) printNode(sys, t, c, depth + 1, out);
}

// One matrix: rows = GPUs, columns = `cols`, cells = path type names.
void matrix(const TopoSystem& sys, const std::vector<int>& rows, const std::vector<int>& cols, std::string* out) {
  appendf(out, "%-8s", "");
  for (int c : cols) {
    std::string name = nodeName(sys, c);
    appendf(out, " %-6s", name.substr(0, name.find(' ')).c_str());
  }
  *out += "\n";
  for (int r : rows) {
    appendf(out, "%-8s", nodeName(sys, r).c_str());
    for (int c : cols) appendf(out, " %-6s", r == c ? "X" : accl::topoPathTypeName(sys.path(r, c).type));
    *out += "\n";
  }
}

}  // namespace

std::string renderText(const TopoSystem& sys, const std::vector<std::string>& notes) {
  std::string out;
  std::vector<int> gpus = sys.nodesOf(TopoNodeType::Gpu), nets = sys.nodesOf(TopoNodeType::Net);
  appendf(&out, "Topology: %d CPU(s), %d GPU(s), %d PCI switch(es), %d NVSwitch node(s), %d NIC(s), %d NET(s)\n\n",
          sys.count(TopoNodeType::Cpu), (int)gpus.size(), sys.count(TopoNodeType::Pci), sys.count(TopoNodeType::Nvs),
          sys.count(TopoNodeType::Nic), (int)nets.size());
  TopoTree t = buildTree(sys);
  for (int r : t.roots) printNode(sys, t, r, 0, &out);

  if (!t.extra.empty()) {
    out += "\nOther links:\n";
    for (const TreeEdge& e : t.extra)
      appendf(&out, "  %-16s -- %-16s %s %s GB/s\n", nodeName(sys, e.from).c_str(), nodeName(sys, e.to).c_str(),
              accl::topoLinkTypeName(e.type), fmtBw(e.bw).c_str());
  }

  if (!gpus.empty()) {
    out += "\nGPU x GPU paths:\n";
    matrix(sys, gpus, gpus, &out);
    if (!nets.empty()) {
      out += "\nGPU x NET paths:\n";
      matrix(sys, gpus, nets, &out);
      out += "\nNETs:";
      for (int n : nets) out += "  " + nodeName(sys, n);
      out += "\n";
    }
    out += "\nGPU path bandwidth (GB/s):\n";
    appendf(&out, "%-8s", "");
    for (int c : gpus) appendf(&out, " %-6s", nodeName(sys, c).c_str());
    out += "\n";
    for (int r : gpus) {
      appendf(&out, "%-8s", nodeName(sys, r).c_str());
      for (int c : gpus) appendf(&out, " %-6s", r == c ? "X" : fmtBw(sys.path(r, c).bw).c_str());
      out += "\n";
    }
    out +=
        "\nLegend: NVL = NVLink (direct or via NVSwitch); NVB = NVLink through one GPU; C2C = chip-to-chip link\n"
        "  to the CPU; PIX = at most one PCIe switch; PXB = several PCIe switches, no host bridge; P2C = GPU-C2C-CPU-\n"
        "  PCIe; PXN = via an NVLink peer GPU; PHB = through a CPU host bridge; SYS = across CPU sockets;\n"
        "  NET = through the network; DIS = disconnected.\n";
  }

  out += "\nDiscovery notes:\n";
  if (notes.empty()) out += "  (none)\n";
  for (const std::string& n : notes) out += "  " + n + "\n";
  return out;
}

}  // namespace accl_topo
