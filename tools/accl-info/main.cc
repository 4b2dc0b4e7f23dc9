// accl-info: what this libnccl.so.2 is — version, backend, devices — and, with --env, every
// environment variable it reads with its current value, source and help text.
#include <cstdio>
#include <cstring>

#include "common/cli.h"
#include "device/device_probe.h"
#include "nccl.h"
#include "util/param_display.h"
#include "util/params.h"

#ifdef ACCL_HAVE_CUDA
#include "backend/cuda/kernel_launch.h"
#endif

namespace {

void printUsage() {
  std::printf(
      "usage: accl-info [--env] [--help]\n"
      "  (no option)  library version, NCCL ABI version, backend and devices\n"
      "  --env        every NCCL_*/ACCL_* variable accl reads: value (\"unset\" and what then applies when\n"
      "               it is not set), where it comes from, meaning\n"
      "Exit status: 0 ok, 2 bad usage.\n");
}

void printSummary() {
  int version = 0;
  ncclGetVersion(&version);
  std::printf("accl %d.%d.%d (NCCL ABI %d, libnccl.so.2)\n", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, version);
  int cudart = accl::cudaRuntimeVersion();
  if (cudart)
    std::printf("CUDA support: built with CUDA runtime %d.%d\n", cudart / 1000, (cudart % 1000) / 10);
  else
    std::printf("CUDA support: not built (host backend only)\n");
#ifdef ACCL_HAVE_CUDA
  const char* archs = accl::acclKernelArchitectures();
  if (archs[0] != '\0')
    std::printf("CUDA kernels: for architecture(s) %s\n", archs);
  else
    std::printf("CUDA kernels: none (no GPU was visible at build time; -DACCL_CUDA_ARCHITECTURES=90 builds them)\n");
#endif
  std::printf("CUDA devices visible: %d\n", accl::cudaDeviceCount());
  accl::Backend backend;
  if (accl::selectBackend("accl-info", &backend) == ncclSuccess)
    std::printf("backend for new communicators: %s\n", accl::backendName(backend));
  else
    std::printf("backend for new communicators: error: %s\n", ncclGetLastError(nullptr));
}

void printEnv() {
  std::printf("%-40s %-8s %-20s %s\n", "VARIABLE", "SOURCE", "VALUE", "MEANING");
  for (const accl::ParamInfo& p : accl::allParams()) {
    accl::ParamValue value = accl::paramValue(p);
    std::printf("%-40s %-8s %-20s %s\n", p.name, value.source, accl::paramDisplayValue(p, value).c_str(), p.help);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool env = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--env") == 0) {
      env = true;
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      printUsage();
      return 0;
    } else {
      return accl::cli::usageError("accl-info", "unknown option '%s'", argv[i]);
    }
  }
  printSummary();
  if (env) printEnv();
  return 0;
}
