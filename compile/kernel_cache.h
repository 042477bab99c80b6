#pragma once
// Generated kernels on disk (docs/compile.md, "XPU code"): running the system's compilers on
// generated source, and a cache of what they made, keyed by everything that decides the result
// (the source, the tools and their flags), so that a second process skips the compilers.
// Entries are written whole (a temporary file renamed into place) and checked when read: an
// entry that does not match its checksum is reported and built again, never used.
#include <optional>
#include <string>
#include <vector>

namespace xten::compiler {

using Bytes = std::vector<unsigned char>;

// The cache folder: $XTEN_COMPILE_CACHE_DIR, else $XDG_CACHE_HOME/xten/compile, else
// ~/.cache/xten/compile (read on every call, so a program may point it elsewhere).
std::string kernel_cache_dir();

// 64-bit FNV-1a of `text`, as 16 hex digits: cache keys and kernel names.
std::string hash_hex(const std::string& text);

// Runs argv[0] (a path) with argv; its stdout and stderr go to `log_path`. Returns "" when it
// exited 0, else what went wrong ("clang-15 exited with status 1: <first lines of the log>").
std::string run_tool(const std::vector<std::string>& argv, const std::string& log_path);

// The cached bytes for `key`, or nullopt (none yet, or a corrupt entry: then a warning on
// stderr names the file, which is removed).
std::optional<Bytes> cache_load(const std::string& key, const std::string& what);
// Stores `data` for `key` (best effort: a cache that cannot be written only costs time).
void cache_store(const std::string& key, const Bytes& data);

}  // namespace xten::compiler
