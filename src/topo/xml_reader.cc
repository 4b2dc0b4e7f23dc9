// The XML text reader behind xmlParse / xmlLoadFile (declared in topo/xml.h): a single forward pass
// over the text with an explicit stack of open elements, tracking line and column so that every
// error says where it is and what was expected there.
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "topo/xml.h"
#include "util/check.h"

namespace accl {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool isNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool isNameChar(char c) { return isNameStart(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }

class Reader {
 public:
  Reader(std::string_view text, const char* source) : text_(text), source_(source ? source : "<string>") {}

  ncclResult_t parse(std::unique_ptr<XmlNode>* rootOut) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // UTF-8 byte order mark
    ACCL_CHECK(skipMisc());
    if (atEnd()) return error("the document has no root element");
    if (peek() != '<') return error("expected '<' to start the root element, got %s", shown(peek()).c_str());

    std::unique_ptr<XmlNode> root;
    bool selfClosed = false;
    int rootLine = line_;
    ACCL_CHECK(parseStartTag(&root, &selfClosed));
    struct Open {
      XmlNode* node;
      int line;
    };
    std::vector<Open> stack;
    if (!selfClosed) stack.push_back({root.get(), rootLine});

    while (!stack.empty()) {
      ACCL_CHECK(skipMisc());
      const Open& top = stack.back();
      if (atEnd()) {
        return error("end of input inside <%s> opened at line %d (missing </%s>)", top.node->name().c_str(), top.line,
                     top.node->name().c_str());
      }
      if (peek() != '<') {
        return error("unexpected text %s inside <%s> (opened at line %d): only elements may appear here",
                     shown(peek()).c_str(), top.node->name().c_str(), top.line);
      }
      if (lookingAt("</")) {
        ACCL_CHECK(parseEndTag(top));
        stack.pop_back();
        continue;
      }
      int childLine = line_;
      std::unique_ptr<XmlNode> child;
      ACCL_CHECK(parseStartTag(&child, &selfClosed));
      XmlNode& added = top.node->adoptChild(std::move(child));
      if (!selfClosed) {
        if ((int)stack.size() >= kXmlMaxDepth) {
          return error("elements are nested deeper than %d levels at <%s>", kXmlMaxDepth, added.name().c_str());
        }
        stack.push_back({&added, childLine});
      }
    }

    ACCL_CHECK(skipMisc());
    if (!atEnd()) {
      return error("unexpected %s after the end of the root element <%s>; a document has one root element",
                   shown(peek()).c_str(), root->name().c_str());
    }
    *rootOut = std::move(root);
    return ncclSuccess;
  }

 private:
  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }
  bool lookingAt(std::string_view s) const { return text_.substr(pos_, s.size()) == s; }

  void advance() {
    if (atEnd()) return;
    if (text_[pos_] == '\n') {
      ++line_;
      lineStart_ = pos_ + 1;
    }
    ++pos_;
  }
  void advance(size_t n) {
    for (size_t i = 0; i < n; ++i) advance();
  }

  bool skipSpace() {
    size_t start = pos_;
    while (!atEnd() && isSpace(peek())) advance();
    return pos_ != start;
  }

  // How a character is quoted in messages.
  std::string shown(char c) const {
    if (atEnd()) return "end of input";
    char buf[16];
    if (c >= 0x20 && c < 0x7f) {
      std::snprintf(buf, sizeof(buf), "'%c'", c);
    } else {
      std::snprintf(buf, sizeof(buf), "byte 0x%02x", (unsigned char)c);
    }
    return buf;
  }

  ncclResult_t error(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    int column = (int)(pos_ - lineStart_) + 1;
    return fail(ncclInvalidUsage, "XML parse error in %s at line %d, column %d: %s", source_, line_, column, msg);
  }

  // Whitespace, comments and processing instructions.
  ncclResult_t skipMisc() {
    while (true) {
      skipSpace();
      if (lookingAt("<!--")) {
        int openLine = line_;
        advance(4);
        while (!atEnd() && !lookingAt("-->")) advance();
        if (atEnd()) return error("unterminated comment opened at line %d (missing -->)", openLine);
        advance(3);
      } else if (lookingAt("<?")) {
        int openLine = line_;
        advance(2);
        while (!atEnd() && !lookingAt("?>")) advance();
        if (atEnd()) return error("unterminated <? ... ?> declaration opened at line %d", openLine);
        advance(2);
      } else if (lookingAt("<!")) {
        return error("<! declarations (DOCTYPE, CDATA) are not supported in topology files");
      } else {
        return ncclSuccess;
      }
    }
  }

  std::string parseName() {
    size_t start = pos_;
    if (!atEnd() && isNameStart(peek())) {
      while (!atEnd() && isNameChar(peek())) advance();
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  // Decodes the entity starting at '&' (already consumed) into `out`.
  ncclResult_t parseEntity(const std::string& attrName, const std::string& element, std::string* out) {
    size_t semi = text_.find(';', pos_);
    if (semi == std::string_view::npos || semi - pos_ > 10) {
      return error("bad attribute %s in <%s>: '&' must start an entity such as &amp;", attrName.c_str(),
                   element.c_str());
    }
    std::string ent(text_.substr(pos_, semi - pos_));
    char decoded = 0;
    if (ent == "amp") decoded = '&';
    else if (ent == "lt") decoded = '<';
    else if (ent == "gt") decoded = '>';
    else if (ent == "quot") decoded = '"';
    else if (ent == "apos") decoded = '\'';
    else if (ent.size() > 1 && ent[0] == '#') {
      bool hex = ent[1] == 'x' || ent[1] == 'X';
      const char* digits = ent.c_str() + (hex ? 2 : 1);
      char* end = nullptr;
      long v = std::strtol(digits, &end, hex ? 16 : 10);
      if (*digits != '\0' && *end == '\0' && v > 0 && v < 0x80) decoded = (char)v;
    }
    if (decoded == 0) {
      return error("bad attribute %s in <%s>: unknown entity &%s;", attrName.c_str(), element.c_str(), ent.c_str());
    }
    out->push_back(decoded);
    advance(ent.size() + 1);
    return ncclSuccess;
  }

  ncclResult_t parseAttribute(XmlNode* node) {
    const std::string& element = node->name();
    std::string key = parseName();
    if (key.empty()) {
      return error("bad attribute in <%s>: expected an attribute name, '>' or '/>', got %s", element.c_str(),
                   shown(peek()).c_str());
    }
    skipSpace();
    if (peek() != '=') {
      return error("bad attribute %s in <%s>: expected '=' after the attribute name, got %s", key.c_str(),
                   element.c_str(), shown(peek()).c_str());
    }
    advance();
    skipSpace();
    char quote = peek();
    if (quote != '"' && quote != '\'') {
      return error("bad attribute %s in <%s>: expected a quoted value, got %s", key.c_str(), element.c_str(),
                   shown(peek()).c_str());
    }
    int openLine = line_;
    advance();
    std::string value;
    while (true) {
      if (atEnd()) {
        return error("bad attribute %s in <%s>: value opened at line %d has no closing quote", key.c_str(),
                     element.c_str(), openLine);
      }
      char c = peek();
      if (c == quote) break;
      if (c == '<') {
        return error("bad attribute %s in <%s>: '<' inside the value opened at line %d (is the closing quote "
                     "missing?)",
                     key.c_str(), element.c_str(), openLine);
      }
      advance();
      if (c == '&') {
        ACCL_CHECK(parseEntity(key, element, &value));
      } else {
        value.push_back(c);
      }
    }
    advance();  // closing quote
    if (node->hasAttr(key)) {
      return error("bad attribute %s in <%s>: the attribute appears twice", key.c_str(), element.c_str());
    }
    node->setAttr(key, value);
    return ncclSuccess;
  }

  // At '<' of a start tag: reads `<name attr="v" ...>` or `.../>`.
  ncclResult_t parseStartTag(std::unique_ptr<XmlNode>* out, bool* selfClosed) {
    int openLine = line_;
    advance();  // '<'
    std::string name = parseName();
    if (name.empty()) return error("expected an element name after '<', got %s", shown(peek()).c_str());
    auto node = std::make_unique<XmlNode>(name);
    while (true) {
      bool hadSpace = skipSpace();
      if (atEnd()) return error("end of input inside the tag <%s> started at line %d", name.c_str(), openLine);
      if (peek() == '>') {
        advance();
        *selfClosed = false;
        break;
      }
      if (peek() == '/') {
        advance();
        if (peek() != '>') return error("expected '>' after '/' in <%s>, got %s", name.c_str(), shown(peek()).c_str());
        advance();
        *selfClosed = true;
        break;
      }
      if (!hadSpace) {
        return error("bad attribute in <%s>: expected whitespace, '>' or '/>' before %s", name.c_str(),
                     shown(peek()).c_str());
      }
      ACCL_CHECK(parseAttribute(node.get()));
    }
    *out = std::move(node);
    return ncclSuccess;
  }

  template <typename Open>
  ncclResult_t parseEndTag(const Open& open) {
    advance(2);  // "</"
    std::string name = parseName();
    if (name.empty()) return error("expected an element name after '</', got %s", shown(peek()).c_str());
    skipSpace();
    if (peek() != '>') return error("expected '>' to end </%s>, got %s", name.c_str(), shown(peek()).c_str());
    if (name != open.node->name()) {
      return error("</%s> does not match the open element <%s> from line %d", name.c_str(),
                   open.node->name().c_str(), open.line);
    }
    advance();
    return ncclSuccess;
  }

  std::string_view text_;
  const char* source_;
  size_t pos_ = 0;
  size_t lineStart_ = 0;
  int line_ = 1;
};

}  // namespace

ncclResult_t xmlParse(std::string_view text, const char* sourceName, std::unique_ptr<XmlNode>* root) {
  Reader reader(text, sourceName);
  return reader.parse(root);
}

ncclResult_t xmlLoadFile(const char* path, std::unique_ptr<XmlNode>* root) {
  FILE* f = std::fopen(path, "rb");
  if (!f) return fail(ncclInvalidUsage, "cannot open topology XML file %s: %s", path, strerror(errno));
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  int err = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (err) return fail(ncclInvalidUsage, "cannot read topology XML file %s: %s", path, strerror(err));
  return xmlParse(text, path, root);
}

}  // namespace accl
