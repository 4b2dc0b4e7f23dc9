// The sysfs side of host discovery: NUMA nodes and their CPU masks (/sys/devices/system/node), CPU
// identity (/proc/cpuinfo, uname), every PCI function with its upstream bridge, NUMA node, ids and
// negotiated link (/sys/bus/pci/devices). Used alone when accl is built without hwloc, and to fill
// in what hwloc does not report (link speed strings, the full 24-bit class code).
#include <dirent.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "topo/discover_internal.h"

namespace accl {
namespace {

std::vector<std::string> listDir(const std::string& path) {
  std::vector<std::string> names;
  DIR* d = opendir(path.c_str());
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

uint32_t readHex(const std::string& path) {
  std::string s = readLine(path);
  return s.empty() ? 0 : static_cast<uint32_t>(std::strtoul(s.c_str(), nullptr, 16));
}

std::string realPath(const std::string& path) {
  char buf[PATH_MAX];
  if (!realpath(path.c_str(), buf)) return {};
  return buf;
}

// The mask of CPUs this process may run on, in cpumap format (used when there is no NUMA info).
std::string processAffinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return {};
  int last = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) last = c;
  if (last < 0) return {};
  std::string out;
  for (int g = last / 32; g >= 0; --g) {
    uint32_t v = 0;
    for (int b = 0; b < 32; ++b)
      if (CPU_ISSET(g * 32 + b, &set)) v |= 1u << b;
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%08x", v);
    if (!out.empty()) out += ',';
    out += buf;
  }
  return out;
}

}  // namespace

// A sysfs directory name that is a PCI function: domain:bus:dev.fn with the domain given.
bool isSysfsBusId(const std::string& name) {
  return std::count(name.begin(), name.end(), ':') == 2 && !normalizeBusId(name).empty();
}

std::string readLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\t' || line.back() == '\r'))
    line.pop_back();
  return line;
}

std::string normalizeBusId(const std::string& text) {
  // [domain:]bus:dev.fn, every field plain hex digits (no "0x", no sign, nothing after fn).
  auto hexField = [](const std::string& f, size_t maxDigits, unsigned long* out) {
    if (f.empty() || f.size() > maxDigits || f.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
      return false;
    *out = std::strtoul(f.c_str(), nullptr, 16);
    return true;
  };
  size_t dot = text.rfind('.');
  if (dot == std::string::npos) return {};
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    size_t colon = text.find(':', start);
    if (colon == std::string::npos || colon > dot) {
      parts.push_back(text.substr(start, dot - start));
      break;
    }
    parts.push_back(text.substr(start, colon - start));
    start = colon + 1;
  }
  unsigned long domain = 0, bus = 0, dev = 0, fn = 0;
  if (parts.size() == 3 && !hexField(parts[0], 8, &domain)) return {};
  if (parts.size() < 2 || parts.size() > 3) return {};
  if (!hexField(parts[parts.size() - 2], 2, &bus) || !hexField(parts.back(), 2, &dev) ||
      !hexField(text.substr(dot + 1), 1, &fn) || dev > 0x1f || fn > 7)
    return {};
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04lx:%02lx:%02lx.%lx", domain, bus, dev, fn);
  return buf;
}

std::string sysfsPciAncestor(const std::string& sysfsPath) {
  std::string p = realPath(sysfsPath);
  while (!p.empty() && p != "/") {
    size_t slash = p.rfind('/');
    std::string last = p.substr(slash + 1);
    // Only a full "dddd:bb:dd.f" name is a PCI function (not "pci0000:00", not "virtio2").
    if (isSysfsBusId(last)) return normalizeBusId(last);
    p.resize(slash);
  }
  return {};
}

uint32_t readSysfsPciClass(const std::string& busId) { return readHex("/sys/bus/pci/devices/" + busId + "/class"); }

void readSysfsPciLink(HostPciDevice* dev) {
  std::string base = "/sys/bus/pci/devices/" + dev->busId + "/";
  // "16.0 GT/s PCIe" on recent kernels, "16 GT/s" or "8.0 GT/s" on older ones; "Unknown" on VMs.
  std::string speed = readLine(base + "current_link_speed");
  if (!speed.empty() && speed.find("GT/s") != std::string::npos) {
    double gts = std::strtod(speed.c_str(), nullptr);
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f GT/s PCIe", gts);
    dev->linkSpeed = buf;
  }
  std::string width = readLine(base + "current_link_width");
  int w = width.empty() ? 0 : std::atoi(width.c_str());
  if (w > 0 && w <= 32) dev->linkWidth = w;
}

void probeHostSysfs(HostTopology* host, DiscoverOptions* opts) {
  // --- CPUs: one per NUMA node ---
  if (host->cpus.empty()) {
    for (const std::string& name : listDir("/sys/devices/system/node")) {
      if (name.rfind("node", 0) != 0 || name.size() < 5 ||
          name.find_first_not_of("0123456789", 4) != std::string::npos)
        continue;
      HostCpu cpu;
      cpu.numaId = std::atoi(name.c_str() + 4);
      cpu.affinity = readLine("/sys/devices/system/node/" + name + "/cpumap");
      host->cpus.push_back(cpu);
    }
    if (host->cpus.empty()) {
      discoverNote(opts, "topology: no NUMA information in /sys/devices/system/node; showing one CPU (numa 0)");
      HostCpu cpu;
      cpu.affinity = processAffinity();
      host->cpus.push_back(cpu);
    }
    std::sort(host->cpus.begin(), host->cpus.end(),
              [](const HostCpu& a, const HostCpu& b) { return a.numaId < b.numaId; });
  }

  // --- CPU identity (fills what hwloc left empty) ---
  std::string arch, vendor;
  int family = -1, model = -1;
  struct utsname u;
  if (uname(&u) == 0) {
    arch = u.machine;
    if (arch == "aarch64") arch = "arm64";
    if (arch.rfind("ppc64", 0) == 0) arch = "ppc64";
  }
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) {
      if (!vendor.empty()) break;  // first processor block done
      continue;
    }
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string value = line.substr(std::min(line.size(), colon + 2));
    if (key == "vendor_id" && vendor.empty()) vendor = value;
    else if (key == "cpu family" && family < 0) family = std::atoi(value.c_str());
    else if (key == "model" && model < 0) model = std::atoi(value.c_str());
  }
  for (HostCpu& cpu : host->cpus) {
    if (cpu.arch.empty()) cpu.arch = arch;
    if (cpu.arch != "x86_64") continue;  // vendor/family/model are x86 notions in NCCL's XML
    if (cpu.vendor.empty()) cpu.vendor = vendor;
    if (cpu.familyId < 0) cpu.familyId = family;
    if (cpu.modelId < 0) cpu.modelId = model;
  }

  // --- PCI functions ---
  if (!host->pci.empty()) return;
  std::vector<std::string> devices = listDir("/sys/bus/pci/devices");
  if (devices.empty()) {
    discoverNote(opts, "topology: /sys/bus/pci/devices is empty or unreadable; no PCI tree (GPUs and NICs are "
                       "placed under the first CPU)");
    return;
  }
  for (const std::string& name : devices) {
    HostPciDevice dev;
    dev.busId = normalizeBusId(name);
    if (dev.busId.empty()) continue;
    std::string base = "/sys/bus/pci/devices/" + name;
    std::string real = realPath(base);
    size_t slash = real.rfind('/');
    if (slash != std::string::npos && slash > 0) {
      std::string up = real.substr(0, slash);
      std::string upName = up.substr(up.rfind('/') + 1);
      if (isSysfsBusId(upName)) dev.parent = normalizeBusId(upName);
    }
    std::string numa = readLine(base + "/numa_node");
    dev.numaId = numa.empty() ? -1 : std::atoi(numa.c_str());
    dev.classCode = readHex(base + "/class");
    dev.vendor = readHex(base + "/vendor");
    dev.device = readHex(base + "/device");
    dev.subVendor = readHex(base + "/subsystem_vendor");
    dev.subDevice = readHex(base + "/subsystem_device");
    readSysfsPciLink(&dev);
    host->pci[dev.busId] = dev;
  }
}

}  // namespace accl
