#!/usr/bin/env bash
# Packs xten's build for a benchmark host that has PyTorch but no Debian packages (the device
# tool's 16-core host): libxten.so stripped, the Debian libraries it links (ldd), libfmt's
# headers, into .devbench/libs.tar.xz (about 12 MB; .devbench is in .git/info/exclude, so it
# travels only where the run names it in `carry`). On the host:
#   cd .devbench && tar xJf libs.tar.xz && ln -sfn "$(cd .. && pwd)" include/xten && cd .. &&
#   export XTEN_BUILD_DIR=$PWD/.devbench LD_LIBRARY_PATH=$PWD/.devbench/lib &&
#   bash bench/reference/compare_interleaved.sh sweep 2 1 16
# Usage: bench/reference/pack_for_host.sh   (reads build/, or $XTEN_BUILD_DIR)
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${XTEN_BUILD_DIR:-build}"
lib="$build/lib/libxten.so"
[ -e "$lib" ] || { echo "pack_for_host: $lib not built" >&2; exit 2; }
grep -qx "/.devbench/" .git/info/exclude 2>/dev/null || echo "/.devbench/" >>.git/info/exclude
stage="$(mktemp -d)"
mkdir -p "$stage/lib" "$stage/include" "$stage/bench" .devbench
strip --strip-unneeded -o "$stage/lib/libxten.so.0" "$(readlink -f "$lib")"
ln -s libxten.so.0 "$stage/lib/libxten.so"
# Every library libxten links but the C runtime's own and the compiler's (the host has those).
ldd "$lib" | awk '$3 ~ /^\// {print $3}' |
  grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libgomp|ld-linux[^/]*)\.so' |
  while read -r dep; do cp -L "$dep" "$stage/lib/"; done
cp "$build/lib/libze_opencl.so" "$stage/lib/" 2>/dev/null || true
ln -s "$(basename "$(ls "$stage"/lib/libfmt.so.*)")" "$stage/lib/libfmt.so"
cp -r /usr/include/fmt "$stage/include/"
tar -C "$stage" -cJf .devbench/libs.tar.xz lib include bench
rm -rf "$stage"
ls -la .devbench/libs.tar.xz
