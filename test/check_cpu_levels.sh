#!/bin/sh
# check_cpu_levels.sh LIBXTEN "OBJECTS..." (test/CMakeLists.txt, cpu_levels_isolated):
# Note [CPU capability] in core/cpu_backend.h. Fails if
#  - a function of LIBXTEN that is not local (a weak or global symbol: an inline function or a
#    template instance the linker kept one copy of) holds AVX instructions (VEX or EVEX encoded:
#    their mnemonics start with 'v' in AT&T syntax, or they name %ymm/%zmm registers), unless its
#    name carries a level's namespace (cap_avx2, cap_avx512);
#  - one of OBJECTS (the avx2 and avx512 copies) has static initializers;
#  - the avx512 copies hold no zmm instruction (the flags did not apply).
set -eu
lib="$1"
objects="$2"
status=0

for o in $objects; do
  if readelf -S -W "$o" | grep -q -E '\.init_array|\.ctors'; then
    echo "static initializers in $o"
    status=1
  fi
done

shared=$(nm "$lib" > "${TMPDIR:-/tmp}/xten_levels_nm.$$" &&
  objdump -d --no-show-raw-insn "$lib" | awk -v nmfile="${TMPDIR:-/tmp}/xten_levels_nm.$$" '
    BEGIN { while ((getline line < nmfile) > 0) { n = split(line, f, " "); if (n == 3) bind[f[3]] = f[2] } }
    /^[0-9a-f]+ <.*>:$/ { fn = substr($2, 2, length($2) - 3); next }
    /\t/ {
      ins = $0; sub(/^.*\t/, "", ins)
      if (ins ~ /^v/ && ins !~ /^ver[rw]/ || ins ~ /%[yz]mm/) {
        b = bind[fn]
        if (b != "t" && b != "r" && fn !~ /cap_avx/ && !(fn in seen)) { seen[fn] = 1; print b " " fn }
        if (ins ~ /%zmm/) zmm++
      }
    }
    END { print "zmm " zmm + 0 }')
rm -f "${TMPDIR:-/tmp}/xten_levels_nm.$$"
zmm=$(printf '%s\n' "$shared" | awk '$1 == "zmm" { print $2 }')
bad=$(printf '%s\n' "$shared" | grep -v '^zmm ' || true)
if [ -n "$bad" ]; then
  echo "shared functions with AVX instructions (they would run on CPUs without AVX):"
  printf '%s\n' "$bad" | head -20 | c++filt
  status=1
fi
if [ "${zmm:-0}" -eq 0 ]; then
  echo "no zmm instruction in $lib: the avx512 copies were not compiled for AVX-512"
  status=1
fi
[ $status -eq 0 ] && echo "ok: $zmm zmm instructions, all in local functions or the levels' own; no static initializers"
exit $status
