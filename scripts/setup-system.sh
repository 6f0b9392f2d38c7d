#!/usr/bin/env bash
# Installs the Debian packages the project needs (native ffmpeg for test media and the media
# backend). As root it installs them; otherwise it prints the one command to run.
set -euo pipefail
packages=(ffmpeg)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "Missing system packages. Run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
