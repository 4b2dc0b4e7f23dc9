// accl-topo: shows the topology accl sees — this machine as probed (or an NCCL topology XML with
// --topo-file) — as an indented tree with path-type matrices (--text, the default), as NCCL's XML
// (--xml), or as a Graphviz drawing (--dot, --png, --svg).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/cli.h"
#include "dot_view.h"
#include "nccl.h"
#include "text_view.h"
#include "topo/discover.h"
#include "topo/system.h"
#include "topo/xml.h"

namespace {

constexpr const char* kTool = "accl-topo";

void printUsage(FILE* f) {
  std::fprintf(f,
               "usage: accl-topo [--topo-file FILE] [--text | --xml | --dot] [--png OUT.png | --svg OUT.svg]\n"
               "  --topo-file FILE  load an NCCL topology XML instead of probing this machine (as NCCL_TOPO_FILE)\n"
               "  --text            tree of CPUs, PCI switches, GPUs, NICs and NETs with link types and GB/s, then\n"
               "                    GPU x GPU and GPU x NET path types (nvidia-smi topo -m style) and discovery "
               "notes (default)\n"
               "  --xml             the topology as NCCL XML (what NCCL_TOPO_DUMP_FILE writes)\n"
               "  --dot             Graphviz DOT text\n"
               "  --png FILE, --svg FILE  draw with Graphviz 'dot' into FILE (may be combined with a text format)\n"
               "Environment: NCCL_TOPO_FILE, NCCL_P2P_LEVEL, NCCL_NET_GDR_LEVEL, ... as for the library.\n"
               "Exit status: 0 ok, 1 the topology could not be loaded or drawn, 2 bad usage.\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string topoFile, format, imagePath, imageFormat;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* opt) -> const char* {
      if (i + 1 >= argc) {
        accl::cli::usageError(kTool, "%s needs a file name", opt);
        return nullptr;
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      printUsage(stdout);
      return 0;
    } else if (a == "--text" || a == "--xml" || a == "--dot") {
      if (!format.empty() && format != a.substr(2))
        return accl::cli::usageError(kTool, "--%s and %s: choose one of --text, --xml, --dot", format.c_str(),
                                     a.c_str());
      format = a.substr(2);
    } else if (a == "--topo-file") {
      const char* v = value("--topo-file");
      if (!v) return accl::cli::kExitUsage;
      topoFile = v;
    } else if (a == "--png" || a == "--svg") {
      const char* v = value(a.c_str());
      if (!v) return accl::cli::kExitUsage;
      if (!imagePath.empty()) return accl::cli::usageError(kTool, "only one of --png, --svg (one image per run)");
      imagePath = v;
      imageFormat = a.substr(2);
    } else {
      return accl::cli::usageError(kTool, "unknown option '%s'", a.c_str());
    }
  }
  if (format.empty() && imagePath.empty()) format = "text";

  if (!topoFile.empty()) setenv("NCCL_TOPO_FILE", topoFile.c_str(), 1);
  accl::DiscoverOptions opts;
  std::unique_ptr<accl::XmlNode> xml;
  if (accl::topoDiscoverXml(&opts, &xml) != ncclSuccess) {
    std::fprintf(stderr, "accl-topo: %s\n", ncclGetLastError(nullptr));
    return accl::cli::kExitRunFailed;
  }
  if (format == "xml") {
    std::fputs(accl::xmlToString(*xml).c_str(), stdout);
    if (imagePath.empty()) return 0;
  }
  accl::TopoPolicy policy;
  std::unique_ptr<accl::TopoSystem> sys;
  if (accl::TopoPolicy::fromEnv(&policy) != ncclSuccess || accl::TopoSystem::fromXml(*xml, policy, &sys) != ncclSuccess) {
    std::fprintf(stderr, "accl-topo: %s\n", ncclGetLastError(nullptr));
    return accl::cli::kExitRunFailed;
  }
  std::string title = topoFile.empty() ? std::string("this machine (probed)") : topoFile;
  if (size_t slash = title.rfind('/'); slash != std::string::npos) title = title.substr(slash + 1);
  if (format == "text") std::fputs(accl_topo::renderText(*sys, opts.notes).c_str(), stdout);
  std::string dot;
  if (format == "dot" || !imagePath.empty()) dot = accl_topo::renderDot(*sys, title);
  if (format == "dot") std::fputs(dot.c_str(), stdout);
  if (!imagePath.empty()) {
    std::string err = accl_topo::runGraphviz(dot, imageFormat, imagePath);
    if (!err.empty()) {
      std::fprintf(stderr, "accl-topo: %s\n", err.c_str());
      return accl::cli::kExitRunFailed;
    }
    std::fprintf(stderr, "accl-topo: wrote %s\n", imagePath.c_str());
  }
  return 0;
}
