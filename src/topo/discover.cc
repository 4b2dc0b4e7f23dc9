// Topology discovery entry points: the <system> XML from NCCL_TOPO_FILE (or the topology daemon's
// file) or from probing this machine, the host hash on every <cpu>, NCCL_TOPO_DUMP_FILE, and the
// step from XML to TopoSystem.
//
// Unlike NCCL, a loaded file is used as the whole description: the local GPUs and NICs are not
// merged into it. That keeps a fixture's graph the same on every machine (a CPU-only test box can
// load a DGX topology), which is what NCCL_TOPO_FILE is used for in accl.
#include "topo/discover.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <string>

#include "topo/discover_internal.h"
#include "util/check.h"
#include "util/log.h"
#include "util/host_identity.h"
#include "util/params.h"

namespace accl {
namespace {

constexpr const char* kDaemonTopoFile = "/var/run/nvidia-topologyd/virtualTopology.xml";

// The node identity the communicator groups ranks by (util/host_identity.h), so a dumped
// topology names the node the peers see.
uint64_t topoHostHash() { return hostHash(); }

ncclResult_t loadTopoFile(const std::string& path, const char* what, std::unique_ptr<XmlNode>* out) {
  std::unique_ptr<XmlNode> root;
  ACCL_CHECK(xmlLoadFile(path.c_str(), &root));
  if (root->name() != "system")
    return fail(ncclInvalidUsage, "%s %s: the root element is <%s>, expected <system version=\"1\">", what,
                path.c_str(), root->name().c_str());
  ACCL_INFO(ACCL_LOG_GRAPH, "topology: loaded %s %s", what, path.c_str());
  *out = std::move(root);
  return ncclSuccess;
}

void addCpus(XmlNode* system, const HostTopology& host) {
  for (const HostCpu& c : host.cpus) {
    XmlNode& cpu = system->addChild("cpu");
    cpu.setAttrInt("numaid", c.numaId);
    cpu.setAttr("host_hash", "0");  // placeholder, keeps NCCL's attribute order; rewritten below
    if (!c.affinity.empty()) cpu.setAttr("affinity", c.affinity);
    if (!c.arch.empty()) cpu.setAttr("arch", c.arch);
    if (!c.vendor.empty()) cpu.setAttr("vendor", c.vendor);
    if (c.familyId >= 0) cpu.setAttrInt("familyid", c.familyId);
    if (c.modelId >= 0) cpu.setAttrInt("modelid", c.modelId);
  }
}

ncclResult_t probeSystem(DiscoverOptions* opts, std::unique_ptr<XmlNode>* out) {
  auto system = std::make_unique<XmlNode>("system");
  system->setAttrInt("version", 1);
  HostTopology host;
  probeHost(&host, opts);
  addCpus(system.get(), host);
  int gpus = 0, nics = 0;
  if (opts->probeGpus)
    gpus = probeGpus(system.get(), host, opts);
  else
    discoverNote(opts, "topology: GPU probe disabled by the caller");
  if (opts->probeNics)
    nics = probeNics(system.get(), host, gpus > 0, opts);
  else
    discoverNote(opts, "topology: NIC probe disabled by the caller");
  trimPciWithoutDevices(system.get());
  ACCL_INFO(ACCL_LOG_GRAPH, "topology: probed %zu CPU(s), %d GPU(s), %d NET port(s) (host: %s)", host.cpus.size(),
            gpus, nics, host.source.c_str());
  *out = std::move(system);
  return ncclSuccess;
}

}  // namespace

void discoverNote(DiscoverOptions* opts, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  ACCL_INFO(ACCL_LOG_GRAPH | ACCL_LOG_INIT, "%s", buf);
  if (opts) opts->notes.emplace_back(buf);
}

ncclResult_t topoDiscoverXml(DiscoverOptions* opts, std::unique_ptr<XmlNode>* out) {
  DiscoverOptions local;
  if (!opts) opts = &local;
  std::unique_ptr<XmlNode> system;
  std::string file = paramStr("NCCL_TOPO_FILE");
  if (!file.empty()) {
    ACCL_CHECK(loadTopoFile(file, "NCCL_TOPO_FILE", &system));
    discoverNote(opts, "topology: from NCCL_TOPO_FILE %s (this machine was not probed)", file.c_str());
  } else if (access(kDaemonTopoFile, R_OK) == 0) {
    ACCL_CHECK(loadTopoFile(kDaemonTopoFile, "topology daemon file", &system));
    discoverNote(opts, "topology: from %s (this machine was not probed)", kDaemonTopoFile);
  } else {
    ACCL_CHECK(probeSystem(opts, &system));
  }
  uint64_t hash = topoHostHash();
  for (const auto& c : system->children())
    if (c->name() == "cpu") c->setAttrHex("host_hash", hash);
  *out = std::move(system);
  return ncclSuccess;
}

ncclResult_t topoGetSystem(int rank, std::unique_ptr<TopoSystem>* out) {
  DiscoverOptions opts;
  std::unique_ptr<XmlNode> xml;
  ACCL_CHECK(topoDiscoverXml(&opts, &xml));
  std::string dump = paramStr("NCCL_TOPO_DUMP_FILE");
  if (!dump.empty() && rank >= 0 && rank == paramInt("NCCL_TOPO_DUMP_FILE_RANK")) {
    ACCL_CHECK(xmlSaveFile(dump.c_str(), *xml));
    ACCL_INFO(ACCL_LOG_GRAPH, "topology: rank %d wrote NCCL_TOPO_DUMP_FILE %s", rank, dump.c_str());
  }
  TopoPolicy policy;
  ACCL_CHECK(TopoPolicy::fromEnv(&policy));
  std::unique_ptr<TopoSystem> system;
  ACCL_CHECK(TopoSystem::fromXml(*xml, policy, &system));
  if (!system->xml) system->xml = std::move(xml);
  *out = std::move(system);
  return ncclSuccess;
}

}  // namespace accl
