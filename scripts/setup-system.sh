#!/usr/bin/env bash
# Installs the Debian packages the project needs: native ffmpeg (test media, media backend)
# and the CPU speech engines of the backend (pocketsphinx, SVOX Pico from non-free through
# scripts/apt-nonfree.sh, flite, sox, rubberband, espeak-ng) and Debian chromium for the browser
# tests (playwright-core drives it; its own browser download does not work here). As root it installs them;
# otherwise it prints the one command to run.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
packages=(ffmpeg pocketsphinx pocketsphinx-en-us pocketsphinx-testdata flite sox rubberband-cli espeak-ng chromium python3)
nonfree=(libttspico-utils)
missing=()
for p in "${packages[@]}" "${nonfree[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "Missing system packages (${missing[*]}). Run: sudo bash scripts/setup-system.sh" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
bash "$here/apt-nonfree.sh" "${nonfree[@]}"
