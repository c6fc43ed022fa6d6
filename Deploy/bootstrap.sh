#!/usr/bin/env bash
# Installs what Homeroom needs on Debian 12 and is missing; safe to run again.
set -euo pipefail

packages=(libnng-dev libprotobuf-c-dev protobuf-c-compiler protobuf-compiler libsodium-dev libsqlite3-dev libssl-dev openssl pkg-config
          python3 python3-venv python3-pip iproute2 iptables fish zsh)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "bootstrap: need root (or sudo) to apt-get install ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
  if [ -x /opt/swift/usr/bin/swift ]; then
    echo "bootstrap: swift is in /opt/swift/usr/bin; add it to PATH (the scripts here do)" >&2
  else
    echo "bootstrap: Swift 6 is required: install a Swift 6.x toolchain for Debian 12 (swift.org) and put it on PATH" >&2
    exit 1
  fi
fi
echo "bootstrap: all system packages present" >&2
