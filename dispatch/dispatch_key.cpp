#include <xten/dispatch/dispatch_key.h>

namespace xten {

const char* to_string(DispatchKey k) {
  switch (k) {
    case DispatchKey::Undefined:
      return "Undefined";
    case DispatchKey::CPU:
      return "CPU";
    case DispatchKey::XPU:
      return "XPU";
    case DispatchKey::QuantizedCPU:
      return "QuantizedCPU";
    case DispatchKey::QuantizedXPU:
      return "QuantizedXPU";
    case DispatchKey::Capture:
      return "Capture";
    case DispatchKey::AutogradCPU:
      return "AutogradCPU";
    case DispatchKey::AutogradXPU:
      return "AutogradXPU";
    case DispatchKey::AutocastCPU:
      return "AutocastCPU";
    case DispatchKey::AutocastXPU:
      return "AutocastXPU";
    case DispatchKey::CompositeImplicit:
      return "CompositeImplicit";
    case DispatchKey::Autograd:
      return "Autograd";
    case DispatchKey::EndOfKeys:
      break;
  }
  return "Unknown";
}

std::string DispatchKeySet::to_string() const {
  std::string s = "{";
  for (int k = 1; k < kNumRuntimeKeys; ++k) {
    if (!has(static_cast<DispatchKey>(k))) continue;
    if (s.size() > 1) s += ", ";
    s += xten::to_string(static_cast<DispatchKey>(k));
  }
  return s + "}";
}

}  // namespace xten
