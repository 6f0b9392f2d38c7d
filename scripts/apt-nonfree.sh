#!/usr/bin/env bash
# Installs Debian packages from the non-free component (default: libttspico-utils, the SVOX
# Pico TTS: Apache-2.0 lingware, in non-free only because of how its data was built) on a
# system whose sources list only `main`, without touching the system's apt configuration.
#
# The private sources file is derived from the system's own /etc/apt/sources.list.d/*.sources
# (deb822) or /etc/apt/sources.list (one-line format): same URIs, suites and keyrings, with
# `non-free` added to the components. apt then reads only that file
# (Dir::Etc::SourceList=/dev/null, Dir::Etc::SourceParts=<tmp>) and keeps its package lists in
# a private directory (Dir::State::Lists=<tmp>/lists), so the system's lists stay as they were.
#
# Idempotent (exits 0 at once when everything is installed); root only.
# Usage: scripts/apt-nonfree.sh [package ...]
set -euo pipefail

packages=("$@")
[ ${#packages[@]} -eq 0 ] && packages=(libttspico-utils)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "apt-nonfree.sh: must run as root to install: ${missing[*]}" >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/parts" "$tmp/lists/partial"
# apt downloads as the unprivileged _apt user: let it reach the private lists directory.
chmod 755 "$tmp" "$tmp/parts" "$tmp/lists"
chown _apt:root "$tmp/lists/partial" 2>/dev/null || true

found=0
shopt -s nullglob
for src in /etc/apt/sources.list.d/*.sources; do
  # deb822: add non-free (and non-free-firmware is not needed) to every Components line.
  awk '
    /^Components:/ {
      has = 0
      for (i = 2; i <= NF; i++) if ($i == "non-free") has = 1
      if (!has) $0 = $0 " non-free"
    }
    { print }
  ' "$src" >"$tmp/parts/$(basename "$src")"
  found=1
done
for list in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$list" ] || continue
  # One-line format: "deb [opts] URI suite comp..." -> add non-free when missing.
  awk '
    /^[[:space:]]*deb(-src)?[[:space:]]/ {
      has = 0
      for (i = 1; i <= NF; i++) if ($i == "non-free") has = 1
      if (!has) $0 = $0 " non-free"
    }
    { print }
  ' "$list" >"$tmp/parts/$(basename "$list" | sed 's/\.list$//')-derived.list"
  found=1
done
if [ "$found" -eq 0 ]; then
  echo "apt-nonfree.sh: no apt sources found under /etc/apt" >&2
  exit 1
fi

apt_opts=(
  -o "Dir::Etc::SourceList=/dev/null"
  -o "Dir::Etc::SourceParts=$tmp/parts"
  -o "Dir::State::Lists=$tmp/lists"
)
export DEBIAN_FRONTEND=noninteractive
apt-get "${apt_opts[@]}" update -qq
apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "apt-nonfree.sh: installed ${missing[*]}"
