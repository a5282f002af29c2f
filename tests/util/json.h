// A small header-only JSON reader for the test suite (conformance files are JSON Lines).
// Supports objects, arrays, strings with escapes (including \uXXXX with surrogate pairs),
// numbers, true/false/null. Numbers keep both a double and, when the literal is an exact
// integer that fits, an int64 (so integer data round-trips exactly).
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sn::testutil {

class Json {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Json() = default;

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_number() const { return kind_ == Kind::Number; }
  bool is_int() const { return kind_ == Kind::Number && is_integral_; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_array() const { return kind_ == Kind::Array; }
  bool is_object() const { return kind_ == Kind::Object; }

  bool as_bool() const {
    expect(Kind::Bool, "bool");
    return bool_;
  }
  double as_double() const {
    expect(Kind::Number, "number");
    return number_;
  }
  // The exact integer value; throws when the literal was not an integer representable in int64.
  int64_t as_int() const {
    expect(Kind::Number, "number");
    if (!is_integral_) throw std::runtime_error("json: number is not an integer");
    return int_;
  }
  const std::string& as_string() const {
    expect(Kind::String, "string");
    return string_;
  }
  const std::vector<Json>& as_array() const {
    expect(Kind::Array, "array");
    return *array_;
  }
  // Keys in sorted order (std::map); duplicate keys keep the last value.
  const std::map<std::string, Json>& as_object() const {
    expect(Kind::Object, "object");
    return *object_;
  }

  size_t size() const {
    if (kind_ == Kind::Array) return array_->size();
    if (kind_ == Kind::Object) return object_->size();
    throw std::runtime_error("json: size() of a scalar");
  }
  const Json& operator[](size_t i) const {
    const auto& a = as_array();
    if (i >= a.size()) throw std::runtime_error("json: array index out of range");
    return a[i];
  }
  // int overload: keeps `v[0]` from being read as a null `const char*` key
  const Json& operator[](int i) const {
    if (i < 0) throw std::runtime_error("json: negative array index");
    return (*this)[size_t(i)];
  }
  bool has(const std::string& key) const { return kind_ == Kind::Object && object_->count(key) != 0; }
  const Json& operator[](const std::string& key) const {
    const auto& o = as_object();
    auto it = o.find(key);
    if (it == o.end()) throw std::runtime_error("json: missing key '" + key + "'");
    return it->second;
  }
  const Json& operator[](const char* key) const { return (*this)[std::string(key)]; }

  static Json parse(std::string_view text) {
    Parser p{text, 0};
    p.skip_ws();
    Json v = p.value();
    p.skip_ws();
    if (p.pos != text.size()) p.fail("trailing characters");
    return v;
  }

 private:
  void expect(Kind k, const char* what) const {
    if (kind_ != k) throw std::runtime_error(std::string("json: value is not a ") + what);
  }

  struct Parser {
    std::string_view s;
    size_t pos;

    [[noreturn]] void fail(const std::string& msg) const {
      throw std::runtime_error("json parse error at offset " + std::to_string(pos) + ": " + msg);
    }
    void skip_ws() {
      while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' || s[pos] == '\r')) ++pos;
    }
    char peek() const { return pos < s.size() ? s[pos] : '\0'; }
    void expect_char(char c) {
      if (peek() != c) fail(std::string("expected '") + c + "'");
      ++pos;
    }
    void expect_word(std::string_view w) {
      if (s.substr(pos, w.size()) != w) fail("expected '" + std::string(w) + "'");
      pos += w.size();
    }

    Json value() {
      Json v;
      switch (peek()) {
        case '{': {
          ++pos;
          v.kind_ = Kind::Object;
          v.object_ = std::make_shared<std::map<std::string, Json>>();
          skip_ws();
          if (peek() == '}') {
            ++pos;
            return v;
          }
          for (;;) {
            skip_ws();
            if (peek() != '"') fail("expected object key");
            std::string key = string_body();
            skip_ws();
            expect_char(':');
            skip_ws();
            (*v.object_)[std::move(key)] = value();
            skip_ws();
            if (peek() == ',') {
              ++pos;
              continue;
            }
            expect_char('}');
            return v;
          }
        }
        case '[': {
          ++pos;
          v.kind_ = Kind::Array;
          v.array_ = std::make_shared<std::vector<Json>>();
          skip_ws();
          if (peek() == ']') {
            ++pos;
            return v;
          }
          for (;;) {
            skip_ws();
            v.array_->push_back(value());
            skip_ws();
            if (peek() == ',') {
              ++pos;
              continue;
            }
            expect_char(']');
            return v;
          }
        }
        case '"':
          v.kind_ = Kind::String;
          v.string_ = string_body();
          return v;
        case 't':
          expect_word("true");
          v.kind_ = Kind::Bool;
          v.bool_ = true;
          return v;
        case 'f':
          expect_word("false");
          v.kind_ = Kind::Bool;
          v.bool_ = false;
          return v;
        case 'n':
          expect_word("null");
          return v;
        default:
          return number();
      }
    }

    Json number() {
      size_t start = pos;
      bool integral = true;
      if (peek() == '-') ++pos;
      if (!(peek() >= '0' && peek() <= '9')) fail("invalid value");
      while (peek() >= '0' && peek() <= '9') ++pos;
      if (peek() == '.') {
        integral = false;
        ++pos;
        while (peek() >= '0' && peek() <= '9') ++pos;
      }
      if (peek() == 'e' || peek() == 'E') {
        integral = false;
        ++pos;
        if (peek() == '+' || peek() == '-') ++pos;
        while (peek() >= '0' && peek() <= '9') ++pos;
      }
      std::string lit(s.substr(start, pos - start));
      Json v;
      v.kind_ = Kind::Number;
      v.number_ = std::strtod(lit.c_str(), nullptr);
      if (integral) {
        errno = 0;
        char* end = nullptr;
        long long iv = std::strtoll(lit.c_str(), &end, 10);
        if (errno == 0 && end == lit.c_str() + lit.size()) {
          v.is_integral_ = true;
          v.int_ = static_cast<int64_t>(iv);
        }
      } else if (std::isfinite(v.number_) && v.number_ == std::floor(v.number_) && std::fabs(v.number_) < 9.0e18) {
        // "2.0" or "1e3": integral in value; expose the integer too.
        v.is_integral_ = true;
        v.int_ = static_cast<int64_t>(v.number_);
      }
      return v;
    }

    unsigned hex4() {
      if (pos + 4 > s.size()) fail("truncated \\u escape");
      unsigned cp = 0;
      for (int i = 0; i < 4; ++i) {
        char c = s[pos++];
        cp <<= 4;
        if (c >= '0' && c <= '9')
          cp |= unsigned(c - '0');
        else if (c >= 'a' && c <= 'f')
          cp |= unsigned(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
          cp |= unsigned(c - 'A' + 10);
        else
          fail("bad hex digit in \\u escape");
      }
      return cp;
    }

    static void append_utf8(std::string& out, unsigned cp) {
      if (cp < 0x80) {
        out += char(cp);
      } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
      } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
      }
    }

    std::string string_body() {
      expect_char('"');
      std::string out;
      for (;;) {
        if (pos >= s.size()) fail("unterminated string");
        char c = s[pos++];
        if (c == '"') return out;
        if (c != '\\') {
          out += c;
          continue;
        }
        if (pos >= s.size()) fail("unterminated escape");
        char e = s[pos++];
        switch (e) {
          case '"':
            out += '"';
            break;
          case '\\':
            out += '\\';
            break;
          case '/':
            out += '/';
            break;
          case 'b':
            out += '\b';
            break;
          case 'f':
            out += '\f';
            break;
          case 'n':
            out += '\n';
            break;
          case 'r':
            out += '\r';
            break;
          case 't':
            out += '\t';
            break;
          case 'u': {
            unsigned cp = hex4();
            if (cp >= 0xD800 && cp < 0xDC00 && s.substr(pos, 2) == "\\u") {
              pos += 2;
              unsigned lo = hex4();
              if (lo >= 0xDC00 && lo < 0xE000)
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              else
                fail("bad low surrogate");
            }
            append_utf8(out, cp);
            break;
          }
          default:
            fail(std::string("bad escape \\") + e);
        }
      }
    }
  };

  Kind kind_ = Kind::Null;
  bool bool_ = false;
  bool is_integral_ = false;
  double number_ = 0.0;
  int64_t int_ = 0;
  std::string string_;
  std::shared_ptr<std::vector<Json>> array_;
  std::shared_ptr<std::map<std::string, Json>> object_;
};

// Reads a JSON Lines file: one value per non-empty line. Returns (1-based line number, value) pairs.
inline std::vector<std::pair<int, Json>> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<std::pair<int, Json>> out;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      out.emplace_back(lineno, Json::parse(line));
    } catch (const std::exception& e) {
      throw std::runtime_error(path + ":" + std::to_string(lineno) + ": " + e.what());
    }
  }
  return out;
}

}  // namespace sn::testutil
