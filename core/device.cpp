#include <xten/core/device.h>

#include <cctype>
#include <ostream>

#include <xten/core/error.h>

namespace xten {

const char* to_string(DeviceType t) {
  return t == kCPU ? "cpu" : "xpu";
}

Device::Device(DeviceType type, int index) : type_(type), index_(static_cast<int8_t>(index)) {
  XTEN_CHECK(index >= -1 && index < 128, ValueError, "Device",
             "device index must be -1 (current) or in [0, 128), but got {}", index);
  XTEN_CHECK(type != kCPU || index <= 0, ValueError, "Device",
             "a cpu device has index 0 (or none), but got {}", index);
}

Device::Device(const std::string& s) : type_(kCPU), index_(-1) {
  const auto colon = s.find(':');
  const std::string name = s.substr(0, colon);
  int type = -1;  // the device type whose name this is
  for (int t = 0; t < kNumDeviceTypes; ++t)
    if (name == to_string(static_cast<DeviceType>(t))) type = t;
  bool ok = type >= 0;
  int index = -1;
  if (ok && colon != std::string::npos) {
    const std::string digits = s.substr(colon + 1);
    ok = !digits.empty() && digits.size() <= 3;
    for (char c : digits) ok = ok && std::isdigit(static_cast<unsigned char>(c));
    if (ok) index = std::stoi(digits);
  }
  XTEN_CHECK(ok, ValueError, "Device",
             "invalid device string '{}': expected 'cpu' or 'xpu', optionally followed by "
             "':<index>' (e.g. 'xpu:1')",
             s);
  *this = Device(static_cast<DeviceType>(type), index);
}

std::string Device::str() const {
  return has_index() ? fmt::format("{}:{}", to_string(type_), index_) : to_string(type_);
}

std::ostream& operator<<(std::ostream& os, Device d) {
  return os << d.str();
}

}  // namespace xten
