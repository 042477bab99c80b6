#include <xten/dispatch/library.h>

#include <fmt/format.h>

namespace xten {

namespace {
std::string site_of(const char* file, int line) {
  std::string f = file;
  // Keep paths short and stable: from the source tree's top folder on.
  for (const char* top :
       {"/core/", "/dispatch/", "/kernels/", "/autocast/", "/test/", "/examples/"}) {
    const auto pos = f.rfind(top);
    if (pos != std::string::npos) {
      f = f.substr(pos + 1);
      break;
    }
  }
  return fmt::format("{}:{}", f, line);
}
}  // namespace

Library::Library(Kind kind, std::string ns, std::optional<DispatchKey> key, const char* file,
                 int line)
    : kind_(kind), ns_(std::move(ns)), key_(key), site_(site_of(file, line)) {}

Library::~Library() {
  for (auto it = ids_.rbegin(); it != ids_.rend(); ++it) Dispatcher::singleton().deregister(*it);
}

std::string Library::qualify(const std::string& name) const {
  return name.find("::") != std::string::npos || ns_ == "_" ? name : ns_ + "::" + name;
}

Library& Library::def(const std::string& schema, const char* file, int line) {
  return def_with_signature(schema, nullptr, file, line);
}

Library& Library::def_with_signature(const std::string& schema, const CppSignature* sig,
                                     const char* file, int line) {
  XTEN_CHECK(kind_ == Kind::Def, ValueError, "dispatch",
             "def('{}') belongs in a LIBRARY block, not LIBRARY_IMPL ({})", schema, site_);
  Dispatcher::singleton().define(qualify(schema), site_of(file, line), sig);
  return *this;
}

Library& Library::impl_kernel(const std::string& name, KernelFunction k, const char* file,
                              int line) {
  XTEN_CHECK(key_.has_value(), ValueError, "dispatch",
             "impl('{}') needs a key: register it in a LIBRARY_IMPL block ({})", name, site_);
  ids_.push_back(Dispatcher::singleton().register_kernel(qualify(name), *key_, std::move(k),
                                                         site_of(file, line)));
  return *this;
}

Library& Library::fallback(KernelFunction k, const char* file, int line) {
  XTEN_CHECK(key_.has_value(), ValueError, "dispatch", "fallback() needs a LIBRARY_IMPL block ({})",
             site_);
  ids_.push_back(
      Dispatcher::singleton().register_fallback(*key_, std::move(k), site_of(file, line)));
  return *this;
}

}  // namespace xten
