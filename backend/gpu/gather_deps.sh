#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# backend/gpu/gather_deps.sh [DIR]: the dependencies of mmtwin-train that a CUDA image lacks, from Debian's
# packages, unpacked into one folder (default .gpudeps, ignored by git) for a machine with no package registry
# (backend/gpu/README.md says why this way and not another):
#   DIR/include          yaml-cpp, nlohmann-json, CLI11 headers
#   DIR/lib/libyaml-cpp.a  yaml-cpp, static: nothing to find at run time
#   DIR/gloo/include     Gloo's headers (searched after Torch's own: only for a LibTorch that ships none)
#   DIR/MANIFEST.txt     the packages and versions, the date, the size
# Built on the CPU machine (Debian bookworm, glibc 2.36, GCC 12, the new C++ ABI), they link into a program
# built on a newer glibc and GCC: the old symbol versions are still there. Needs apt-get (the packages are
# downloaded, not installed; apt-get update once when the download fails; with no registry at all, the same
# files from the installed packages); at most 40 MiB; written atomically (DIR.tmp, then renamed).
set -euo pipefail
dir=${1:-.gpudeps}
packages=(libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libgloo-dev)
tmp="$dir.tmp"
rm -rf "$tmp"
mkdir -p "$tmp/debs" "$tmp/root" "$tmp/include" "$tmp/lib" "$tmp/gloo/include"
download() { (cd "$tmp/debs" && apt-get download "${packages[@]}" >/dev/null 2>&1); }
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
if download || { $sudo apt-get update -qq >/dev/null 2>&1 && download; }; then
  for deb in "$tmp"/debs/*.deb; do dpkg -x "$deb" "$tmp/root"; done
elif dpkg -s "${packages[@]}" >/dev/null 2>&1; then
  # No package registry here, but the packages are installed: the same files, from the system.
  for p in "${packages[@]}"; do
    dpkg -L "$p" | while read -r f; do
      if [ -f "$f" ]; then mkdir -p "$tmp/root$(dirname "$f")" && cp -a "$f" "$tmp/root$f"; fi
    done
  done
else
  echo "gather_deps: apt-get download ${packages[*]} failed, and they are not installed" >&2
  exit 1
fi
cp -r "$tmp/root/usr/include/yaml-cpp" "$tmp/root/usr/include/nlohmann" "$tmp/root/usr/include/CLI" "$tmp/include/"
cp "$tmp/root/usr/lib/x86_64-linux-gnu/libyaml-cpp.a" "$tmp/lib/"
cp -r "$tmp/root/usr/include/gloo" "$tmp/gloo/include/"
{
  echo "# mmtwin-train's dependencies for a machine without apt (backend/gpu/gather_deps.sh)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1), $(g++ --version | head -1)"
  if compgen -G "$tmp/debs/*.deb" >/dev/null; then
    for deb in "$tmp"/debs/*.deb; do dpkg-deb -f "$deb" Package Version | paste -sd' '; done
  else
    for p in "${packages[@]}"; do dpkg-query -W -f='Package: ${Package} Version: ${Version} (installed)\n' "$p"; done
  fi
} >"$tmp/MANIFEST.txt"
rm -rf "$tmp/debs" "$tmp/root"
size_kib=$(du -sk "$tmp" | cut -f1)
echo "size: ${size_kib} KiB" >>"$tmp/MANIFEST.txt"
if ((size_kib > 40 * 1024)); then
  echo "gather_deps: $tmp is ${size_kib} KiB, over the 40 MiB the GPU machine's copy allows" >&2
  exit 1
fi
rm -rf "$dir"
mv "$tmp" "$dir"
echo "gather_deps: $dir (${size_kib} KiB): $(grep -c "^Package" "$dir/MANIFEST.txt") packages"
