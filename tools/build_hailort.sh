#!/usr/bin/env bash
# Builds HailoRT offline from the vendored sources (../shared/vendor/hailort): libhailort, hailortcli
# and the hailo_platform wheel, the wheel installed into a venv of its own (HailoRT pins numpy < 2;
# the harness's venv is left alone). The result is cached by version, Python and a hash of the
# sources and of this script, so a second run prints the folder in well under a second.
#
#   tools/build_hailort.sh VERSION [PYTHON]      VERSION: 4.23.0 (Hailo-8/8L) | 5.2.0 (Hailo-10H)
#
# The last line printed is the build folder: VERSION, lib/libhailort.so*, bin/hailortcli,
# venv/bin/python (hailo_platform importable), src/ (the unpacked tree, for drivers built against it).
# Tests find builds through HARNESS_HAILORT (folders separated by ':').
# Env: HAILORT_VENDOR (sources), HAILORT_CACHE (cache root), JOBS (parallel compile jobs).
set -euo pipefail
ver=${1:?usage: tools/build_hailort.sh 4.23.0|5.2.0 [PYTHON]}
py=${2:-python3}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
vendor=${HAILORT_VENDOR:-$root/../shared/vendor/hailort}
cache=${HAILORT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hailo-harness/hailort}
jobs=${JOBS:-$(nproc)}

# The dependency archives each line's CMake pins (vendor SOURCES.md).
case $ver in
  4.23.0) deps="json-3.9.1-fetchcontent pybind11-2.10.1" ;;
  5.2.0)  deps="json-3.11.3 pybind11-2.13.6 minja-main-5856862" ;;
  *) echo "build_hailort: unknown version '$ver' (expected 4.23.0 or 5.2.0)" >&2; exit 2 ;;
esac
deps="$deps protobuf-v21.12 eigen-3.4.0 cli11-2.2.0-hailo dotwriter-master-e5fa8f2 readerwriterqueue-1.0.3 xxhash-0.8.2 spdlog-1.13.0"
archives="$vendor/hailort-$ver.tar.gz"
for d in $deps; do archives="$archives $vendor/deps/$d.tar.gz"; done
for a in $archives; do
  [ -f "$a" ] || { echo "build_hailort: missing source archive $a (set HAILORT_VENDOR)" >&2; exit 1; }
done

pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
hash=$({ for a in $archives; do sha256sum < "$a"; done; sha256sum < "${BASH_SOURCE[0]}"; echo "$pyver"; } | sha256sum | cut -c1-16)
out=$cache/$ver-py$pyver-$hash
if [ -f "$out/.complete" ]; then
  echo "$out"
  exit 0
fi
log() { echo "build_hailort $ver: $*" >&2; }

# Build tools (Debian packages) when missing.
missing=""
for tool in cmake g++ make; do command -v "$tool" >/dev/null || missing="$missing $tool"; done
"$py" -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
  || missing="$missing python3-dev"
if [ -n "$missing" ]; then
  log "installing$missing"
  apt-get update -qq && apt-get install -y -qq $missing >/dev/null
fi

# Sources, unpacked where HailoRT's CMake looks for them (hailort/external/<name>-src).
# The build happens in place: the wheel's extension finds libhailort through an RPATH into it.
mkdir -p "$out"
src=$out/src
if [ ! -d "$src" ]; then
  log "unpacking into $src"
  tmp=$(mktemp -d "$out/unpack.XXXX")
  tar xzf "$vendor/hailort-$ver.tar.gz" -C "$tmp"
  mkdir -p "$tmp/hailort-$ver/hailort/external"
  for d in $deps; do tar xzf "$vendor/deps/$d.tar.gz" -C "$tmp/hailort-$ver/hailort/external"; done
  mv "$tmp/hailort-$ver" "$src" && rmdir "$tmp"
fi

# 1) libhailort + hailortcli (configure builds protobuf first).
start=$(date +%s)
log "configuring libhailort (builds protobuf first; ~8 min on 2 cores)"
cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release -DFETCHCONTENT_FULLY_DISCONNECTED=ON \
  -DHAILO_OFFLINE_COMPILATION=ON -DHAILO_BUILD_EXAMPLES=OFF -DHAILO_BUILD_GSTREAMER=OFF >"$out/configure.log" 2>&1 \
  || { tail -30 "$out/configure.log" >&2; exit 1; }
log "building libhailort and hailortcli with $jobs jobs"
cmake --build "$src/build" --target libhailort hailortcli -- -j"$jobs" >"$out/build.log" 2>&1 \
  || { tail -30 "$out/build.log" >&2; exit 1; }
lib=$(ls "$src"/build/hailort/libhailort/src/libhailort.so.* | head -1)

# 2) a venv for hailo_platform, then the pyhailort extension and the wheel. setup.py reuses the
#    configured build folder (4.23.0: build, 5.2.0: build.x86_64.Release); LIBHAILORT_PATH is given
#    to CMake only (5.2.0's setup.py parses a folder name out of it).
log "building the hailo_platform wheel"
[ -x "$out/venv/bin/python" ] || "$py" -m venv "$out/venv"
vpy=$out/venv/bin/python
"$vpy" -m pip install -q setuptools wheel "numpy<2" argcomplete contextlib2 future netaddr netifaces >"$out/venv.log" 2>&1 \
  || { tail -30 "$out/venv.log" >&2; exit 1; }
plat=$src/hailort/libhailort/bindings/python/platform
bdir=build.x86_64.Release; [ "$ver" = 4.23.0 ] && bdir=build
cmake -S "$plat/../src" -B "$plat/$bdir" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_LIBRARY_OUTPUT_DIRECTORY="$plat/$bdir" -DPYBIND11_PYTHON_VERSION="$pyver" \
  -DPYTHON_EXECUTABLE="$vpy" -DFETCHCONTENT_FULLY_DISCONNECTED=ON \
  -DLIBHAILORT_PATH="$lib" -DHAILORT_INCLUDE_DIR="$src/hailort/libhailort/include" >"$out/pyhailort.log" 2>&1 \
  && cmake --build "$plat/$bdir" --target install -- -j"$jobs" >>"$out/pyhailort.log" 2>&1 \
  && (cd "$plat" && "$vpy" -m pip wheel -q --no-build-isolation --no-deps --no-index -w "$out/wheel" .) >>"$out/pyhailort.log" 2>&1 \
  && "$vpy" -m pip install -q --no-deps --force-reinstall "$out"/wheel/*.whl >>"$out/pyhailort.log" 2>&1 \
  || { tail -30 "$out/pyhailort.log" >&2; exit 1; }

mkdir -p "$out/lib" "$out/bin"
ln -sf "$lib" "$out/lib/"
ln -sf "$src/build/hailort/hailortcli/hailortcli" "$out/bin/hailortcli"
"$out/bin/hailortcli" --version >/dev/null
"$vpy" -c 'import hailo_platform' || { log "hailo_platform does not import from $vpy"; exit 1; }
echo "$ver" >"$out/VERSION"
touch "$out/.complete"
log "built in $(( $(date +%s) - start )) s"
echo "$out"
