// XmlNode: a small XML tree for NCCL's topology and graph files (the format NCCL_TOPO_FILE loads and
// NCCL_TOPO_DUMP_FILE writes), plus the text reader and writer.
//
// The model is the subset those files use: elements with ordered attributes and child elements; no
// text content, no namespaces, no DTD. A node owns its children (unique_ptr), knows its parent,
// and is neither copyable nor movable, so pointers to nodes stay valid while the tree lives;
// clone() makes a deep copy.
//
// Reader (xmlParse / xmlLoadFile) accepts:
//   * an optional UTF-8 byte order mark, <?...?> processing instructions (e.g. <?xml version="1.0"?>)
//     and <!-- comments --> anywhere between tags;
//   * whitespace (space, tab, CR, LF) between tags and around '=' in attributes;
//   * attribute values in double or single quotes; the entities &amp; &lt; &gt; &quot; &apos; and
//     numeric &#N; / &#xH; (ASCII only) are decoded;
//   * exactly one root element, nested at most kXmlMaxDepth deep.
// Anything else is an error with the source name, line and column, and what was expected
// (ncclInvalidUsage: the text normally comes from a user's file).
//
// Writer (xmlToString / xmlSaveFile) produces NCCL's own dump layout, so files written by either
// library look the same: one element per line, two spaces of indent per level,
// `<name key="value" ...>` in attribute order, `/>` for an element without children, a closing
// `</name>` otherwise, LF line ends. In values, & < and " are written as entities (they never
// occur in real topology values, so NCCL-written files and ours are byte-identical in practice).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nccl.h"

namespace accl {

// Deepest element nesting the reader accepts (real topologies are < 10 deep).
inline constexpr int kXmlMaxDepth = 256;

struct XmlAttr {
  std::string key;
  std::string value;
};

class XmlNode {
 public:
  explicit XmlNode(std::string name) : name_(std::move(name)) {}
  XmlNode(const XmlNode&) = delete;
  XmlNode& operator=(const XmlNode&) = delete;

  const std::string& name() const { return name_; }
  XmlNode* parent() const { return parent_; }

  // --- Attributes (kept in insertion order; keys are unique and case-sensitive) ---
  const std::vector<XmlAttr>& attrs() const { return attrs_; }
  bool hasAttr(std::string_view key) const { return attr(key) != nullptr; }
  // The value, or nullptr when the attribute is absent.
  const std::string* attr(std::string_view key) const;
  // The value, or `fallback` when absent.
  std::string attrOr(std::string_view key, std::string_view fallback) const;
  // Replaces the value in place when present (order unchanged), else appends.
  void setAttr(std::string_view key, std::string_view value);
  void setAttrInt(std::string_view key, int64_t value);  // decimal
  void setAttrHex(std::string_view key, uint64_t value);  // "0x%llx", as NCCL writes guids and hashes
  // Returns whether the attribute existed.
  bool removeAttr(std::string_view key);

  // Typed getters. The whole value must parse (strtoll/strtoull base 0, so "0x068000" works;
  // strtod for doubles); a missing attribute or a malformed value fails with ncclInvalidUsage and a
  // message naming the element path, the attribute and the value.
  ncclResult_t getStr(std::string_view key, std::string* out) const;
  ncclResult_t getInt(std::string_view key, int64_t* out) const;
  ncclResult_t getUint(std::string_view key, uint64_t* out) const;
  ncclResult_t getDouble(std::string_view key, double* out) const;
  // As above, but an absent attribute yields `fallback` (a malformed one is still an error).
  ncclResult_t getIntOr(std::string_view key, int64_t fallback, int64_t* out) const;
  ncclResult_t getDoubleOr(std::string_view key, double fallback, double* out) const;

  // --- Children (document order) ---
  const std::vector<std::unique_ptr<XmlNode>>& children() const { return children_; }
  size_t childCount() const { return children_.size(); }
  XmlNode* child(size_t i) const { return children_[i].get(); }
  XmlNode& addChild(std::string name);
  XmlNode& adoptChild(std::unique_ptr<XmlNode> node);  // node must have no parent
  // Detaches `node` (a direct child) and returns it; nullptr when it is not a child of this node.
  std::unique_ptr<XmlNode> removeChild(const XmlNode* node);

  // First direct child named `name` (optionally with key == value), or nullptr.
  XmlNode* firstChild(std::string_view name) const;
  XmlNode* firstChild(std::string_view name, std::string_view key, std::string_view value) const;
  std::vector<XmlNode*> childrenNamed(std::string_view name) const;

  // Depth-first, document-order search of the subtree below this node (this node excluded).
  XmlNode* findFirst(std::string_view name) const;
  XmlNode* findFirst(std::string_view name, std::string_view key, std::string_view value) const;
  std::vector<XmlNode*> findAll(std::string_view name) const;

  // Closest ancestor named `name`, or nullptr.
  XmlNode* ancestor(std::string_view name) const;

  // A readable location for messages: "system/cpu[numaid=0]/pci[busid=0000:17:00.0]/gpu[dev=0]"
  // (each element's first attribute is shown).
  std::string path() const;

  std::unique_ptr<XmlNode> clone() const;

 private:
  std::string name_;
  XmlNode* parent_ = nullptr;
  std::vector<XmlAttr> attrs_;
  std::vector<std::unique_ptr<XmlNode>> children_;
};

// Structural equality: same names, the same attributes in the same order, equal children in order.
bool xmlEqual(const XmlNode& a, const XmlNode& b);
// Empty when equal, else a one-line description of the first difference (for test messages).
std::string xmlFirstDifference(const XmlNode& a, const XmlNode& b);

// Parses `text`. `sourceName` names the input in error messages (a path, or e.g. "NCCL_TOPO_FILE").
ncclResult_t xmlParse(std::string_view text, const char* sourceName, std::unique_ptr<XmlNode>* root);
// Reads and parses a file; an unreadable file is ncclInvalidUsage naming the path and errno text.
// (Callers that merely probe an optional file should check that it exists first.)
ncclResult_t xmlLoadFile(const char* path, std::unique_ptr<XmlNode>* root);

// Serialises the tree in NCCL's dump layout (see the top of this file).
std::string xmlToString(const XmlNode& root);
// Writes xmlToString(root) to `path` (replacing it); failures are ncclSystemError with errno text.
ncclResult_t xmlSaveFile(const char* path, const XmlNode& root);

}  // namespace accl
