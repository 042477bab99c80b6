#pragma once
// FunctionSchema: an op's declaration, parsed once when the op is declared.
//
//   add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
//
// gives the name ("add_"), the overload ("Tensor"), each argument's type, name, default,
// whether it is keyword-only, and its alias annotation: `Tensor(a!)` is written by the op
// (alias set "a", write), `Tensor(a)` in a return is a view of the argument of set "a".
// Autocast reads which arguments are written (never cast), autograd will read the same to
// know which inputs an op mutates and which outputs alias which inputs.
//
// Note [Schema and C++ signature]
// A kernel's C++ signature is checked against the schema when the kernel is registered (or,
// for kernels registered before the op is declared, when it is declared), with one C++ type
// per schema type: Tensor <-> const Tensor&, Tensor? <-> const std::optional<Tensor>&,
// Tensor[] <-> const std::vector<Tensor>&, Scalar <-> const Scalar&, int <-> int64_t,
// int[] <-> IntArrayRef, float <-> double, bool <-> bool, str <-> const std::string&,
// ScalarType <-> ScalarType, Device <-> Device; `T?` is std::optional<T> for every other T.
// Returns: Tensor, std::tuple<Tensor, ...> for several, std::vector<Tensor> for Tensor[].
#include <optional>
#include <string>
#include <vector>

namespace xten {

// The base types a schema can name.
enum class SchemaBaseType : uint8_t { Tensor, Scalar, Int, Float, Bool, Str, ScalarType, Device };

struct SchemaType {
  SchemaBaseType base = SchemaBaseType::Tensor;
  bool list = false;      // T[] (or T[N])
  bool optional = false;  // T?
  bool operator==(const SchemaType& o) const {
    return base == o.base && list == o.list && optional == o.optional;
  }
  bool operator!=(const SchemaType& o) const { return !(*this == o); }
  std::string str() const;  // "Tensor?", "int[]"
};

// `Tensor(a!)`: the alias set ("a") and whether the op writes through it.
struct AliasInfo {
  std::string set;
  bool is_write = false;
};

struct SchemaArgument {
  std::string name;  // empty for unnamed returns
  SchemaType type;
  std::optional<std::string> default_value;  // as written: "1", "None", "'none'", "[]"
  std::optional<AliasInfo> alias;
  bool kwarg_only = false;  // after a bare `*`
};

class FunctionSchema {
 public:
  // Parses "name.overload(args) -> returns" (a namespace "ns::" before the name is kept in
  // full_name()). A malformed schema raises ValueError naming the op and the column.
  static FunctionSchema parse(const std::string& schema);

  const std::string& name() const { return name_; }          // "xten::add_" or "add_"
  const std::string& overload() const { return overload_; }  // "Tensor" or ""
  std::string full_name() const { return overload_.empty() ? name_ : name_ + "." + overload_; }
  const std::vector<SchemaArgument>& arguments() const { return arguments_; }
  const std::vector<SchemaArgument>& returns() const { return returns_; }
  const std::string& text() const { return text_; }  // the schema as declared

  // The index of the argument called `name`, or -1.
  int argument_index(const std::string& name) const;
  // Whether the op writes any argument (an in-place or out= op).
  bool is_mutable() const;
  bool writes_argument(size_t i) const {
    return i < arguments_.size() && arguments_[i].alias && arguments_[i].alias->is_write;
  }

 private:
  std::string text_, name_, overload_;
  std::vector<SchemaArgument> arguments_, returns_;
};

}  // namespace xten
