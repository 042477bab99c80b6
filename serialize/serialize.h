#pragma once
// Checkpoints: tensors to and from files in the safetensors format (docs/serialization.md), so
// that Python's safetensors and other tools read what xten writes and the other way round:
// an 8-byte little-endian header size, a JSON header {name: {dtype, shape, data_offsets}, ...,
// "__metadata__": {string: string}}, then the raw bytes. Bad files raise ValueError naming the
// file and the problem; nothing reads outside the file.
#include <map>
#include <string>
#include <vector>

#include <xten/core/tensor.h>

namespace xten {

using NamedTensorList = std::vector<std::pair<std::string, Tensor>>;
using Metadata = std::map<std::string, std::string>;

// Named tensors (a state dict), in order. Tensors on another device are copied to the host to
// be written, and their device is recorded in the metadata ("xten.device.<name>") so that load
// puts them back there.
void save(const NamedTensorList& tensors, const std::string& path, const Metadata& metadata = {});
// One tensor (named "tensor") or a list (named "0", "1", ...).
void save(const Tensor& tensor, const std::string& path);
void save(const std::vector<Tensor>& tensors, const std::string& path);

// The tensors of a file, in file order, each on the device recorded for it (CPU if none or
// if that device is absent here).
NamedTensorList load(const std::string& path);
// The file's __metadata__ (without xten's device entries).
Metadata load_metadata(const std::string& path);
Tensor load_tensor(const std::string& path);
std::vector<Tensor> load_tensors(const std::string& path);

// Keys under a prefix ("optimizer." + "state.3.momentum_buffer"), to keep a model's,
// an optimizer's and a scaler's state in one file; and back (entries without it are dropped).
NamedTensorList with_prefix(const std::string& prefix, const NamedTensorList& tensors);
NamedTensorList under_prefix(const std::string& prefix, const NamedTensorList& tensors);

}  // namespace xten
