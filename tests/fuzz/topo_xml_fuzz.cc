// Fuzz target: the topology XML reader (topo/xml_reader.cc, the NCCL_TOPO_FILE format) and the graph
// built from it (TopoSystem::fromXml, paths included). Input: the file's bytes.
// Properties: whatever the reader accepts, the writer's output reads back to an equal tree (the
// round trip accl-topo --xml and NCCL_TOPO_DUMP_FILE rely on), and a clone equals its original.
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_target.h"
#include "topo/system.h"
#include "topo/xml.h"

using namespace accl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<XmlNode> root;
  if (xmlParse(text, "fuzz", &root) != ncclSuccess) return 0;
  FUZZ_CHECK(root != nullptr);

  std::string written = xmlToString(*root);
  std::unique_ptr<XmlNode> reread;
  FUZZ_CHECK(xmlParse(written, "fuzz-rewritten", &reread) == ncclSuccess);
  FUZZ_CHECK(xmlEqual(*root, *reread));
  FUZZ_CHECK(xmlToString(*reread) == written);
  FUZZ_CHECK(xmlEqual(*root, *root->clone()));

  if (root->name() == "system") {
    TopoPolicy policy;
    std::unique_ptr<TopoSystem> system;
    (void)TopoSystem::fromXml(*root, policy, &system);
  }
  return 0;
}
