#!/usr/bin/env bash
# Installs what Homeroom needs on Debian 12 and is missing; safe to run again.
set -euo pipefail

# The -dev packages of every library the binary links (Deploy/Dockerfile's builder
# installs the same; DeployFilesTests checks both against ldd). systemd for
# systemd-analyze, which the tests run on Deploy/systemd/ (not to run it as init);
# jq for the README's lock line, which reads a fence from --json.
packages=(libnng-dev libprotobuf-c-dev protobuf-c-compiler protobuf-compiler libsodium-dev libsqlite3-dev libssl-dev openssl pkg-config
          python3 python3-venv python3-pip iproute2 iptables fish zsh systemd jq)
# --browser (Deploy/test.sh): also headless Chromium and its WebDriver, for the page's
# browser test (Tests/web/run.sh). The demo and the image do not need them.
if [ "${1:-}" = "--browser" ]; then
  packages+=(chromium chromium-driver)
fi

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
    echo "bootstrap: Swift 6.3.1 is required (the tested toolchain, as in Deploy/Dockerfile): install swift.org's Swift 6.3.1 for Debian 12 in /opt/swift (or put it on PATH)" >&2
    exit 1
  fi
fi
echo "bootstrap: all system packages present" >&2
