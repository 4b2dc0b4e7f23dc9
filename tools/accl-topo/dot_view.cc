// DOT rendering and the Graphviz call for accl-topo (see dot_view.h).
#include "dot_view.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "topo_tree.h"

namespace accl_topo {

using accl::TopoLinkType;
using accl::TopoNodeType;
using accl::TopoSystem;

namespace {

struct Style {
  const char* fill;
  const char* border;
  const char* font;
  const char* shape;
};

Style styleOf(TopoNodeType t) {
  switch (t) {
    case TopoNodeType::Gpu: return {"#b5e27a", "#4d7f00", "black", "box"};
    case TopoNodeType::Pci: return {"#fff2b3", "#b59a00", "black", "box"};
    case TopoNodeType::Nvs: return {"#2f6b00", "#1f4700", "white", "box"};
    case TopoNodeType::Cpu: return {"#a9cdf0", "#2a5d8f", "black", "box"};
    case TopoNodeType::Nic: return {"#fdc99b", "#c0671b", "black", "box"};
    case TopoNodeType::Net: return {"#f3b6d0", "#a3336a", "black", "ellipse"};
  }
  return {"white", "black", "black", "box"};
}

std::string id(int node) { return "n" + std::to_string(node); }

std::string label(const TopoSystem& sys, int i) {
  const accl::TopoNode& n = sys.nodes[i];
  switch (n.type) {
    case TopoNodeType::Gpu:
      return "GPU " + std::to_string(n.dev) + "\\n" + n.label + "\\nsm" + std::to_string(n.sm) + (n.gdr ? " gdr" : "");
    case TopoNodeType::Pci: return "PCIe switch\\n" + n.label;
    case TopoNodeType::Nvs: return "NVSwitch";
    case TopoNodeType::Cpu: {
      std::string s = "CPU " + std::to_string(n.id);
      if (!n.arch.empty()) s += "\\n" + n.arch;
      if (!n.vendor.empty()) s += " " + n.vendor;
      return s;
    }
    case TopoNodeType::Nic: return "NIC\\n" + n.label;
    case TopoNodeType::Net:
      return n.label + " (net " + std::to_string(n.id) + ")\\n" + fmtBw(n.netBw * 8) + " Gb/s" + (n.gdr ? " gdr" : "");
  }
  return "?";
}

void node(const TopoSystem& sys, int i, const std::string& indent, std::string* out) {
  Style s = styleOf(sys.nodes[i].type);
  *out += indent + id(i) + " [label=\"" + label(sys, i) + "\", shape=" + s.shape + ", fillcolor=\"" + s.fill +
          "\", color=\"" + s.border + "\", fontcolor=\"" + s.font + "\"];\n";
}

std::string edgeAttrs(TopoLinkType type, double bw) {
  std::string l = std::string(accl::topoLinkTypeName(type)) + " " + fmtBw(bw);
  switch (type) {
    case TopoLinkType::Nvl: return "label=\"" + l + "\", color=\"#3a8a00\", fontcolor=\"#2f6b00\", penwidth=3";
    case TopoLinkType::C2c: return "label=\"" + l + "\", color=\"#7b3fa0\", fontcolor=\"#7b3fa0\", penwidth=3";
    case TopoLinkType::Pci: return "label=\"" + l + "\", color=\"#555555\", fontcolor=\"#444444\"";
    case TopoLinkType::Sys:
      return "label=\"" + l + "\", color=\"#c0392b\", fontcolor=\"#c0392b\", style=dashed, penwidth=2";
    case TopoLinkType::Net: return "label=\"" + l + "\", color=\"#1f5fa8\", fontcolor=\"#1f5fa8\"";
    case TopoLinkType::Loc: return "label=\"" + l + "\", style=dotted";
  }
  return "label=\"" + l + "\"";
}

// Emits node `i` and everything below it. A PCI switch's subtree gets a light cluster of its own,
// so the devices behind one switch stay together however the NVLink edges pull them.
void subtree(const TopoSystem& sys, const TopoTree& t, int i, const std::string& indent, std::string* out,
             std::string* edges) {
  bool boxed = sys.nodes[i].type == TopoNodeType::Pci && t.children[i].size() > 1;
  std::string in = indent;
  if (boxed) {
    *out += indent + "subgraph cluster_" + id(i) + " {\n";
    *out += indent + "  label=\"\"; style=\"rounded\"; color=\"#e6d98a\"; bgcolor=\"#fffdf0\";\n";
    in += "  ";
  }
  node(sys, i, in, out);
  for (int c : t.children[i]) {
    *edges += "  " + id(i) + " -> " + id(c) + " [" + edgeAttrs(t.up[c].type, t.up[c].bw) + "];\n";
    subtree(sys, t, c, in, out, edges);
  }
  if (boxed) *out += indent + "}\n";
}

std::string escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r;
}

}  // namespace

std::string renderDot(const TopoSystem& sys, const std::string& title) {
  TopoTree t = buildTree(sys);
  // Links outside the tree first: GPU-GPU links become small link nodes that belong in their
  // socket's cluster, so they are known before the clusters are written.
  std::map<int, std::string> inCluster;  // socket CPU node (-1: none) -> node lines
  std::string extraEdges;
  for (const TreeEdge& e : t.extra) {
    int from = e.from, to = e.to;
    TopoNodeType tf = sys.nodes[from].type, tt = sys.nodes[to].type;
    if (tf == TopoNodeType::Gpu && tt == TopoNodeType::Gpu) {
      // A direct GPU-GPU link (no NVSwitch) joins two GPUs of one row; drawn as a small link node one
      // row below them, so a full mesh stays readable instead of arcs crossing the PCI edges.
      std::string mid = "l" + std::to_string(from) + "_" + std::to_string(to);
      std::string color = e.type == TopoLinkType::Nvl ? "#3a8a00" : "#555555";
      int socket = t.socket[from] == t.socket[to] ? t.socket[from] : -1;
      inCluster[socket] += std::string(socket >= 0 ? "    " : "  ") + mid + " [label=\"" +
                           accl::topoLinkTypeName(e.type) + " " + fmtBw(e.bw) +
                           "\", shape=box, style=\"rounded,filled\", fillcolor=\"#e3f4cc\", color=\"" + color +
                           "\", fontsize=9, height=0.25, width=0.4, margin=\"0.04,0.02\"];\n";
      extraEdges += "  " + id(from) + " -> " + mid + " [color=\"" + color + "\", penwidth=3];\n";
      extraEdges += "  " + id(to) + " -> " + mid + " [color=\"" + color + "\", penwidth=3];\n";
      continue;
    }
    // NVSwitches hang below the GPUs, C2C GPUs below their CPU; other links (CPU-CPU) do not shape the layout.
    if (tf == TopoNodeType::Nvs && tt != TopoNodeType::Nvs) std::swap(from, to);
    if (tf == TopoNodeType::Gpu && tt == TopoNodeType::Cpu) std::swap(from, to);
    TopoNodeType head = sys.nodes[to].type, tail = sys.nodes[from].type;
    bool constrain = (head == TopoNodeType::Nvs && tail != TopoNodeType::Nvs) ||
                     (head == TopoNodeType::Gpu && tail == TopoNodeType::Cpu);
    extraEdges += "  " + id(from) + " -> " + id(to) + " [" + edgeAttrs(e.type, e.bw) +
                  (constrain ? "" : ", constraint=false") + "];\n";
  }

  std::string out, edges;
  out += "digraph topology {\n";
  out += "  graph [rankdir=TB, newrank=true, ordering=out, nodesep=0.25, ranksep=0.6, fontname=\"Helvetica\", "
         "fontsize=16, labelloc=t, label=\"" + escape(title) + "\"];\n";
  out += "  node [style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=11, penwidth=1.5];\n";
  out += "  edge [dir=none, fontname=\"Helvetica\", fontsize=9];\n";
  std::vector<int> cpus = sys.nodesOf(TopoNodeType::Cpu);
  for (int r : t.roots) {
    if (sys.nodes[r].type != TopoNodeType::Cpu) continue;
    out += "  subgraph cluster_" + id(r) + " {\n";
    out += "    label=\"socket / NUMA node " + std::to_string(sys.nodes[r].id) +
           "\"; style=\"rounded,dashed\"; color=\"#7f8c8d\"; fontcolor=\"#555555\"; fontsize=12;\n";
    subtree(sys, t, r, "    ", &out, &edges);
    out += inCluster[r];
    out += "  }\n";
  }
  for (int r : t.roots)
    if (sys.nodes[r].type != TopoNodeType::Cpu) subtree(sys, t, r, "  ", &out, &edges);
  out += inCluster[-1];
  if (cpus.size() > 1) {
    out += "  { rank=same;";
    for (int c : cpus) out += " " + id(c) + ";";
    out += " }\n";
  }
  std::vector<int> nvs = sys.nodesOf(TopoNodeType::Nvs);
  if (!nvs.empty()) {
    out += "  { rank=max;";
    for (int n : nvs) out += " " + id(n) + ";";
    out += " }\n";
  }
  out += edges;
  out += extraEdges;
  out += "}\n";
  return out;
}

std::string runGraphviz(const std::string& dot, const std::string& format, const std::string& outPath) {
  // Find `dot` on PATH first, so a missing Graphviz is a clear message rather than a shell error.
  std::string found;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string cand = (end > start ? dirs.substr(start, end - start) : ".") + "/dot";
    if (access(cand.c_str(), X_OK) == 0) {
      found = cand;
      break;
    }
    start = end + 1;
  }
  if (found.empty())
    return "Graphviz 'dot' was not found on PATH; install graphviz (e.g. apt-get install graphviz) or use --dot "
           "and render the text elsewhere";
  std::string tmpl = "/tmp/accl-topo-XXXXXX";
  int fd = mkstemp(tmpl.data());
  if (fd < 0) return "cannot create a temporary file for the DOT text";
  FILE* f = fdopen(fd, "w");
  std::fwrite(dot.data(), 1, dot.size(), f);
  std::fclose(f);
  pid_t pid = fork();
  if (pid == 0) {
    std::string fmt = "-T" + format;
    execl(found.c_str(), "dot", fmt.c_str(), "-o", outPath.c_str(), tmpl.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) status = -1;
  unlink(tmpl.c_str());
  if (status != 0)
    return found + " -T" + format + " failed (exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
           ") writing " + outPath;
  return {};
}

}  // namespace accl_topo
