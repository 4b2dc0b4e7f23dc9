// XmlNode (tree, attribute access, search, equality) and the writer in NCCL's dump layout.
// The text reader is in topo/xml_reader.cc.
#include "topo/xml.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util/check.h"

namespace accl {
namespace {

void collectNamed(const XmlNode& node, std::string_view name, std::vector<XmlNode*>* out) {
  for (const auto& c : node.children()) {
    if (c->name() == name) out->push_back(c.get());
    collectNamed(*c, name, out);
  }
}

XmlNode* searchFirst(const XmlNode& node, std::string_view name, const std::string_view* key,
                     std::string_view value) {
  for (const auto& c : node.children()) {
    if (c->name() == name) {
      if (!key) return c.get();
      const std::string* v = c->attr(*key);
      if (v && *v == value) return c.get();
    }
    if (XmlNode* found = searchFirst(*c, name, key, value)) return found;
  }
  return nullptr;
}

void appendEscaped(std::string* out, const std::string& value) {
  for (char ch : value) {
    switch (ch) {
      case '&': out->append("&amp;"); break;
      case '<': out->append("&lt;"); break;
      case '"': out->append("&quot;"); break;
      default: out->push_back(ch);
    }
  }
}

void writeNode(const XmlNode& node, int indent, std::string* out) {
  out->append(indent, ' ');
  out->push_back('<');
  out->append(node.name());
  for (const XmlAttr& a : node.attrs()) {
    out->push_back(' ');
    out->append(a.key);
    out->append("=\"");
    appendEscaped(out, a.value);
    out->push_back('"');
  }
  if (node.childCount() == 0) {
    out->append("/>\n");
    return;
  }
  out->append(">\n");
  for (const auto& c : node.children()) writeNode(*c, indent + 2, out);
  out->append(indent, ' ');
  out->append("</");
  out->append(node.name());
  out->append(">\n");
}

std::string describeAttrs(const XmlNode& n) {
  std::string s;
  for (const XmlAttr& a : n.attrs()) s += (s.empty() ? "" : " ") + a.key + "=\"" + a.value + "\"";
  return s;
}

}  // namespace

// --- Attributes ---

const std::string* XmlNode::attr(std::string_view key) const {
  for (const XmlAttr& a : attrs_)
    if (a.key == key) return &a.value;
  return nullptr;
}

std::string XmlNode::attrOr(std::string_view key, std::string_view fallback) const {
  const std::string* v = attr(key);
  return v ? *v : std::string(fallback);
}

void XmlNode::setAttr(std::string_view key, std::string_view value) {
  for (XmlAttr& a : attrs_) {
    if (a.key == key) {
      a.value = value;
      return;
    }
  }
  attrs_.push_back(XmlAttr{std::string(key), std::string(value)});
}

void XmlNode::setAttrInt(std::string_view key, int64_t value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%" PRId64, value);
  setAttr(key, buf);
}

void XmlNode::setAttrHex(std::string_view key, uint64_t value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, value);
  setAttr(key, buf);
}

bool XmlNode::removeAttr(std::string_view key) {
  for (auto it = attrs_.begin(); it != attrs_.end(); ++it) {
    if (it->key == key) {
      attrs_.erase(it);
      return true;
    }
  }
  return false;
}

ncclResult_t XmlNode::getStr(std::string_view key, std::string* out) const {
  const std::string* v = attr(key);
  if (!v) {
    return fail(ncclInvalidUsage, "topology XML: element %s has no attribute \"%.*s\"", path().c_str(),
                (int)key.size(), key.data());
  }
  *out = *v;
  return ncclSuccess;
}

ncclResult_t XmlNode::getInt(std::string_view key, int64_t* out) const {
  std::string s;
  ACCL_CHECK(getStr(key, &s));
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 0);
  if (s.empty() || *end != '\0' || errno == ERANGE) {
    return fail(ncclInvalidUsage, "topology XML: element %s attribute %.*s=\"%s\" is not an integer",
                path().c_str(), (int)key.size(), key.data(), s.c_str());
  }
  *out = v;
  return ncclSuccess;
}

ncclResult_t XmlNode::getUint(std::string_view key, uint64_t* out) const {
  std::string s;
  ACCL_CHECK(getStr(key, &s));
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (s.empty() || s[0] == '-' || *end != '\0' || errno == ERANGE) {
    return fail(ncclInvalidUsage, "topology XML: element %s attribute %.*s=\"%s\" is not an unsigned integer",
                path().c_str(), (int)key.size(), key.data(), s.c_str());
  }
  *out = v;
  return ncclSuccess;
}

ncclResult_t XmlNode::getDouble(std::string_view key, double* out) const {
  std::string s;
  ACCL_CHECK(getStr(key, &s));
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno == ERANGE) {
    return fail(ncclInvalidUsage, "topology XML: element %s attribute %.*s=\"%s\" is not a number",
                path().c_str(), (int)key.size(), key.data(), s.c_str());
  }
  *out = v;
  return ncclSuccess;
}

ncclResult_t XmlNode::getIntOr(std::string_view key, int64_t fallback, int64_t* out) const {
  if (!hasAttr(key)) {
    *out = fallback;
    return ncclSuccess;
  }
  return getInt(key, out);
}

ncclResult_t XmlNode::getDoubleOr(std::string_view key, double fallback, double* out) const {
  if (!hasAttr(key)) {
    *out = fallback;
    return ncclSuccess;
  }
  return getDouble(key, out);
}

// --- Children ---

XmlNode& XmlNode::addChild(std::string name) { return adoptChild(std::make_unique<XmlNode>(std::move(name))); }

XmlNode& XmlNode::adoptChild(std::unique_ptr<XmlNode> node) {
  node->parent_ = this;
  children_.push_back(std::move(node));
  return *children_.back();
}

std::unique_ptr<XmlNode> XmlNode::removeChild(const XmlNode* node) {
  for (auto it = children_.begin(); it != children_.end(); ++it) {
    if (it->get() == node) {
      std::unique_ptr<XmlNode> out = std::move(*it);
      children_.erase(it);
      out->parent_ = nullptr;
      return out;
    }
  }
  return nullptr;
}

XmlNode* XmlNode::firstChild(std::string_view name) const {
  for (const auto& c : children_)
    if (c->name_ == name) return c.get();
  return nullptr;
}

XmlNode* XmlNode::firstChild(std::string_view name, std::string_view key, std::string_view value) const {
  for (const auto& c : children_) {
    if (c->name_ != name) continue;
    const std::string* v = c->attr(key);
    if (v && *v == value) return c.get();
  }
  return nullptr;
}

std::vector<XmlNode*> XmlNode::childrenNamed(std::string_view name) const {
  std::vector<XmlNode*> out;
  for (const auto& c : children_)
    if (c->name_ == name) out.push_back(c.get());
  return out;
}

XmlNode* XmlNode::findFirst(std::string_view name) const { return searchFirst(*this, name, nullptr, {}); }

XmlNode* XmlNode::findFirst(std::string_view name, std::string_view key, std::string_view value) const {
  return searchFirst(*this, name, &key, value);
}

std::vector<XmlNode*> XmlNode::findAll(std::string_view name) const {
  std::vector<XmlNode*> out;
  collectNamed(*this, name, &out);
  return out;
}

XmlNode* XmlNode::ancestor(std::string_view name) const {
  for (XmlNode* p = parent_; p; p = p->parent_)
    if (p->name_ == name) return p;
  return nullptr;
}

std::string XmlNode::path() const {
  std::string self = name_;
  if (!attrs_.empty()) self += "[" + attrs_[0].key + "=" + attrs_[0].value + "]";
  return parent_ ? parent_->path() + "/" + self : self;
}

std::unique_ptr<XmlNode> XmlNode::clone() const {
  auto copy = std::make_unique<XmlNode>(name_);
  copy->attrs_ = attrs_;
  for (const auto& c : children_) copy->adoptChild(c->clone());
  return copy;
}

// --- Equality ---

std::string xmlFirstDifference(const XmlNode& a, const XmlNode& b) {
  if (a.name() != b.name()) return a.path() + ": element <" + a.name() + "> vs <" + b.name() + ">";
  if (a.attrs().size() != b.attrs().size()) {
    return a.path() + ": attributes [" + describeAttrs(a) + "] vs [" + describeAttrs(b) + "]";
  }
  for (size_t i = 0; i < a.attrs().size(); ++i) {
    const XmlAttr& x = a.attrs()[i];
    const XmlAttr& y = b.attrs()[i];
    if (x.key != y.key || x.value != y.value) {
      return a.path() + ": attribute " + std::to_string(i) + " is " + x.key + "=\"" + x.value + "\" vs " + y.key +
             "=\"" + y.value + "\"";
    }
  }
  if (a.childCount() != b.childCount()) {
    return a.path() + ": " + std::to_string(a.childCount()) + " children vs " + std::to_string(b.childCount());
  }
  for (size_t i = 0; i < a.childCount(); ++i) {
    std::string d = xmlFirstDifference(*a.child(i), *b.child(i));
    if (!d.empty()) return d;
  }
  return {};
}

bool xmlEqual(const XmlNode& a, const XmlNode& b) {
  if (a.name() != b.name() || a.childCount() != b.childCount() || a.attrs().size() != b.attrs().size()) return false;
  for (size_t i = 0; i < a.attrs().size(); ++i) {
    if (a.attrs()[i].key != b.attrs()[i].key || a.attrs()[i].value != b.attrs()[i].value) return false;
  }
  for (size_t i = 0; i < a.childCount(); ++i)
    if (!xmlEqual(*a.child(i), *b.child(i))) return false;
  return true;
}

// --- Writer ---

std::string xmlToString(const XmlNode& root) {
  std::string out;
  writeNode(root, 0, &out);
  return out;
}

ncclResult_t xmlSaveFile(const char* path, const XmlNode& root) {
  std::string text = xmlToString(root);
  FILE* f = std::fopen(path, "w");
  if (!f) return fail(ncclSystemError, "topology XML: cannot open %s for writing: %s", path, strerror(errno));
  size_t written = std::fwrite(text.data(), 1, text.size(), f);
  int err = written == text.size() ? 0 : errno;
  if (std::fclose(f) != 0 && err == 0) err = errno;
  if (written != text.size() || err != 0) {
    return fail(ncclSystemError, "topology XML: writing %s failed: %s", path, strerror(err ? err : EIO));
  }
  return ncclSuccess;
}

}  // namespace accl
