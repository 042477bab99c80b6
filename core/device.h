#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

namespace xten {

enum class DeviceType : int8_t { CPU = 0, XPU = 1 };
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kXPU = DeviceType::XPU;
constexpr int kNumDeviceTypes = 2;

const char* to_string(DeviceType t);

// A device type plus an index; index -1 means "the current device of that type".
class Device {
 public:
  Device(DeviceType type, int index = -1);  // NOLINT: a DeviceType is a Device
  // "cpu", "xpu", "xpu:1". Anything else is a ValueError that shows the string.
  Device(const std::string& s);                      // NOLINT
  Device(const char* s) : Device(std::string(s)) {}  // NOLINT

  DeviceType type() const { return type_; }
  int index() const { return index_; }
  bool has_index() const { return index_ >= 0; }
  bool is_cpu() const { return type_ == kCPU; }
  bool is_xpu() const { return type_ == kXPU; }
  std::string str() const;

  friend bool operator==(Device a, Device b) { return a.type_ == b.type_ && a.index_ == b.index_; }
  friend bool operator!=(Device a, Device b) { return !(a == b); }

 private:
  DeviceType type_;
  int8_t index_;
};

std::ostream& operator<<(std::ostream& os, Device d);

}  // namespace xten
