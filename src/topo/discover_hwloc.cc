// Host discovery through hwloc (when accl is built with it): one CPU per NUMA node with its cpuset
// and its package's vendor / family / model, and every PCI function and PCI-to-PCI bridge with its
// upstream bridge and NUMA locality. Sysfs then completes what hwloc does not carry (the negotiated
// link as a "GT/s" string, the class's programming-interface byte). Without hwloc, or when it fails
// to load, everything comes from sysfs (discover_host_sysfs.cc).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "topo/discover_internal.h"

#ifdef ACCL_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace accl {

#ifdef ACCL_HAVE_HWLOC
namespace {

// cpumap format ("0000ffff,ffffffff"): 32-bit groups, most significant first.
std::string cpumapString(hwloc_const_bitmap_t set) {
  int last = hwloc_bitmap_last(set);
  if (last < 0) return {};
  std::string out;
  for (int g = last / 32; g >= 0; --g) {
    unsigned long word = hwloc_bitmap_to_ith_ulong(set, static_cast<unsigned>(g * 32 / (8 * sizeof(unsigned long))));
    uint32_t v = static_cast<uint32_t>(word >> ((g * 32) % (8 * sizeof(unsigned long))));
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%08x", v);
    if (!out.empty()) out += ',';
    out += buf;
  }
  return out;
}

std::string busIdOf(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& a) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", static_cast<unsigned>(a.domain), a.bus, a.dev, a.func);
  return buf;
}

int intInfo(hwloc_obj_t obj, const char* name) {
  const char* v = obj ? hwloc_obj_get_info_by_name(obj, name) : nullptr;
  return v ? std::atoi(v) : -1;
}

void addPci(hwloc_topology_t topo, hwloc_obj_t obj, const hwloc_obj_attr_u::hwloc_pcidev_attr_s& a, HostTopology* host) {
  HostPciDevice dev;
  dev.busId = busIdOf(a);
  hwloc_obj_t up = obj->parent;
  if (up && up->type == HWLOC_OBJ_BRIDGE && up->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI)
    dev.parent = busIdOf(up->attr->bridge.upstream.pci);
  // Locality: the NUMA node of the first non-I/O ancestor, when it is exactly one node.
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, obj);
  if (anc && anc->nodeset && hwloc_bitmap_weight(anc->nodeset) == 1) dev.numaId = hwloc_bitmap_first(anc->nodeset);
  if (dev.numaId < 0) {
    std::string numa = readLine("/sys/bus/pci/devices/" + dev.busId + "/numa_node");
    if (!numa.empty()) dev.numaId = std::atoi(numa.c_str());
  }
  uint32_t sysClass = readSysfsPciClass(dev.busId);
  dev.classCode = (sysClass >> 8) == a.class_id ? sysClass : static_cast<uint32_t>(a.class_id) << 8;
  dev.vendor = a.vendor_id;
  dev.device = a.device_id;
  dev.subVendor = a.subvendor_id;
  dev.subDevice = a.subdevice_id;
  readSysfsPciLink(&dev);  // hwloc's linkspeed (GB/s) cannot be turned back into a per-lane rate exactly
  host->pci[dev.busId] = dev;
}

bool probeHostHwloc(HostTopology* host, DiscoverOptions* opts) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) {
    discoverNote(opts, "topology: hwloc_topology_init failed; using sysfs");
    return false;
  }
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    discoverNote(opts, "topology: hwloc_topology_load failed; using sysfs");
    return false;
  }
  unsigned v = hwloc_get_api_version();
  char src[64];
  std::snprintf(src, sizeof(src), "hwloc %u.%u.%u", v >> 16, (v >> 8) & 0xff, v & 0xff);
  host->source = src;

  int nNuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nNuma; ++i) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, i);
    HostCpu cpu;
    cpu.numaId = static_cast<int>(numa->os_index);
    cpu.affinity = cpumapString(numa->cpuset);
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, numa);
    if (!pkg && numa->cpuset) {
      for (hwloc_obj_t p = nullptr; (p = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PACKAGE, p));) {
        if (hwloc_bitmap_intersects(p->cpuset, numa->cpuset)) {
          pkg = p;
          break;
        }
      }
    }
    if (pkg) {
      if (const char* vendor = hwloc_obj_get_info_by_name(pkg, "CPUVendor")) cpu.vendor = vendor;
      cpu.familyId = intInfo(pkg, "CPUFamilyNumber");
      cpu.modelId = intInfo(pkg, "CPUModelNumber");
    }
    host->cpus.push_back(cpu);
  }
  std::sort(host->cpus.begin(), host->cpus.end(),
            [](const HostCpu& a, const HostCpu& b) { return a.numaId < b.numaId; });

  for (hwloc_obj_t obj = nullptr; (obj = hwloc_get_next_pcidev(topo, obj));) addPci(topo, obj, obj->attr->pcidev, host);
  for (hwloc_obj_t obj = nullptr; (obj = hwloc_get_next_bridge(topo, obj));) {
    if (obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI)
      addPci(topo, obj, obj->attr->bridge.upstream.pci, host);
  }
  hwloc_topology_destroy(topo);
  if (host->pci.empty())
    discoverNote(opts, "topology: hwloc reported no PCI devices (no /sys/bus/pci access?); GPUs and NICs are "
                       "placed under the first CPU");
  return true;
}

}  // namespace
#endif  // ACCL_HAVE_HWLOC

void probeHost(HostTopology* host, DiscoverOptions* opts) {
#ifdef ACCL_HAVE_HWLOC
  if (!probeHostHwloc(host, opts)) *host = HostTopology{};
#else
  discoverNote(opts, "topology: accl was built without hwloc; CPUs and the PCI tree come from sysfs");
#endif
  if (host->source.empty()) host->source = "sysfs";
  // Fills CPU identity fields hwloc left empty; probes CPUs / PCI only when still empty.
  probeHostSysfs(host, opts);
}

}  // namespace accl
