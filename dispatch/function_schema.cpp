#include <xten/dispatch/function_schema.h>

#include <cctype>

#include <fmt/format.h>

#include <xten/core/error.h>
#include <xten/dispatch/cpp_signature.h>

namespace xten {

namespace {

struct ParsedSchema {
  std::string name, overload;
  std::vector<SchemaArgument> arguments, returns;
};

// The schema spelling of each base type, in SchemaBaseType's order.
constexpr const char* kBaseNames[] = {"Tensor", "Scalar", "int",        "float",
                                      "bool",   "str",    "ScalarType", "Device"};
constexpr int kNumBaseTypes = sizeof(kBaseNames) / sizeof(kBaseNames[0]);
static_assert(kNumBaseTypes == static_cast<int>(SchemaBaseType::Device) + 1);

const char* base_name(SchemaBaseType b) {
  return kBaseNames[static_cast<int>(b)];
}

// A hand-written reader over the schema text; every error names the op and the column
// (1-based) where reading stopped.
class SchemaReader {
 public:
  explicit SchemaReader(const std::string& s) : s_(s) {}

  ParsedSchema read() {
    ParsedSchema p;
    std::string qualified = identifier("the op name");
    if (peek_is("::")) {
      pos_ += 2;
      qualified += "::" + identifier("the op name after '::'");
    }
    p.name = op_ = qualified;  // errors in the overload name name the op
    if (accept('.')) p.overload = identifier("the overload name after '.'");
    op_ = p.overload.empty() ? p.name : p.name + "." + p.overload;
    expect('(');
    bool kwarg_only = false;
    skip_spaces();
    if (!accept(')')) {
      while (true) {
        skip_spaces();
        if (accept('*')) {
          if (kwarg_only) fail("a second '*'");
          kwarg_only = true;
        } else {
          SchemaArgument a = argument(/*in_returns=*/false);
          a.kwarg_only = kwarg_only;
          for (const SchemaArgument& b : p.arguments)
            if (b.name == a.name) fail("argument '" + a.name + "' named twice");
          p.arguments.push_back(std::move(a));
        }
        skip_spaces();
        if (accept(')')) break;
        expect(',');
      }
    }
    skip_spaces();
    if (!peek_is("->")) fail("'->' and the returns");
    pos_ += 2;
    skip_spaces();
    if (accept('(')) {  // several returns, or none: "()"
      skip_spaces();
      if (!accept(')')) {
        while (true) {
          p.returns.push_back(argument(/*in_returns=*/true));
          skip_spaces();
          if (accept(')')) break;
          expect(',');
        }
      }
    } else {
      p.returns.push_back(argument(/*in_returns=*/true));
    }
    skip_spaces();
    if (pos_ != s_.size()) fail("the end of the schema");
    return p;
  }

 private:
  // type [alias] [list] [?] name [= default]; in returns the name is optional and there is
  // no default.
  SchemaArgument argument(bool in_returns) {
    skip_spaces();
    SchemaArgument a;
    const size_t type_at = pos_;
    const std::string base = identifier("a type");
    int found = -1;
    for (int i = 0; i < kNumBaseTypes; ++i)
      if (base == kBaseNames[i]) found = i;
    if (found < 0) {
      pos_ = type_at;
      std::string known;
      for (const char* n : kBaseNames) known += (known.empty() ? "" : ", ") + std::string(n);
      fail("a type (" + known + "), not '" + base + "'");
    }
    a.type.base = static_cast<SchemaBaseType>(found);
    if (accept('(')) {
      if (a.type.base != SchemaBaseType::Tensor) fail("an alias annotation only on a Tensor");
      AliasInfo alias;
      while (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_])))
        alias.set += s_[pos_++];
      if (alias.set.empty()) fail("an alias set name such as 'a'");
      alias.is_write = accept('!');
      expect(')');
      a.alias = alias;
    }
    if (accept('[')) {
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      expect(']');
      a.type.list = true;
    }
    a.type.optional = accept('?');
    skip_spaces();
    if (pos_ < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      a.name = identifier("a name");
    else if (!in_returns)
      fail("an argument name");
    skip_spaces();
    if (!in_returns && accept('=')) {
      skip_spaces();
      const size_t start = pos_;
      int depth = 0;
      bool quoted = false;
      for (; pos_ < s_.size(); ++pos_) {
        const char c = s_[pos_];
        if (c == '\'') quoted = !quoted;
        if (quoted) continue;
        if (c == '[') ++depth;
        if (c == ']') --depth;
        if (depth == 0 && (c == ',' || c == ')')) break;
      }
      if (quoted) fail("the closing quote of the default");
      std::string d = s_.substr(start, pos_ - start);
      while (!d.empty() && d.back() == ' ') d.pop_back();
      if (d.empty()) fail("a default value after '='");
      a.default_value = d;
    }
    return a;
  }

  std::string identifier(const std::string& what) {
    skip_spaces();
    const size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      ++pos_;
    if (pos_ == start || std::isdigit(static_cast<unsigned char>(s_[start]))) {
      pos_ = start;
      fail(what);
    }
    return s_.substr(start, pos_ - start);
  }
  void skip_spaces() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  bool accept(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    skip_spaces();
    if (!accept(c)) fail(std::string("'") + c + "'");
  }
  bool peek_is(const char* t) const {
    return s_.compare(pos_, std::char_traits<char>::length(t), t) == 0;
  }
  [[noreturn]] void fail(const std::string& expected) const {
    XTEN_FAIL(ValueError, "dispatch", "malformed schema for '{}' at column {}: expected {} in '{}'",
              op_.empty() ? "?" : op_, pos_ + 1, expected, s_);
  }

  const std::string& s_;
  size_t pos_ = 0;
  std::string op_;
};

}  // namespace

std::string SchemaType::str() const {
  return std::string(base_name(base)) + (list ? "[]" : "") + (optional ? "?" : "");
}

FunctionSchema FunctionSchema::parse(const std::string& schema) {
  ParsedSchema p = SchemaReader(schema).read();
  FunctionSchema f;
  f.text_ = schema;
  f.name_ = std::move(p.name);
  f.overload_ = std::move(p.overload);
  f.arguments_ = std::move(p.arguments);
  f.returns_ = std::move(p.returns);
  return f;
}

int FunctionSchema::argument_index(const std::string& name) const {
  for (size_t i = 0; i < arguments_.size(); ++i)
    if (arguments_[i].name == name) return static_cast<int>(i);
  return -1;
}

bool FunctionSchema::is_mutable() const {
  for (size_t i = 0; i < arguments_.size(); ++i)
    if (writes_argument(i)) return true;
  return false;
}

std::vector<SchemaType> detail::schema_types(const SchemaType* types, size_t n) {
  return std::vector<SchemaType>(types, types + n);
}

std::string CppSignature::mismatch(const FunctionSchema& schema) const {
  const auto& args = schema.arguments();
  if (arguments.size() != args.size())
    return fmt::format("{} arguments in C++, {} in the schema", arguments.size(), args.size());
  for (size_t i = 0; i < args.size(); ++i)
    if (arguments[i] != args[i].type)
      return fmt::format("argument {} '{}' is {} in the schema but {} in C++", i + 1, args[i].name,
                         args[i].type.str(), arguments[i].str());
  const auto& rets = schema.returns();
  // A list return (Tensor[]) is one value; so is each element of a tuple.
  bool same = returns.size() == rets.size();
  for (size_t i = 0; same && i < rets.size(); ++i) same = returns[i] == rets[i].type;
  if (!same) {
    std::string cpp, declared;
    for (const SchemaType& t : returns) cpp += (cpp.empty() ? "" : ", ") + t.str();
    for (const SchemaArgument& r : rets) declared += (declared.empty() ? "" : ", ") + r.type.str();
    return fmt::format("returns ({}) in the schema but ({}) in C++", declared, cpp);
  }
  return "";
}

}  // namespace xten
