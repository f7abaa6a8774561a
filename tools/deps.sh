#!/bin/sh
# Install the Debian/Ubuntu packages cairn builds and tests with, when any
# is missing. Uses sudo when not run as root.
set -eu
PKGS="build-essential pkg-config clang libclang-rt-14-dev libncurses-dev libsqlite3-dev
      libzstd-dev libcjson-dev libuv1-dev libcurl4-openssl-dev libssl-dev libcmocka-dev
      libutf8proc-dev libcmark-gfm-dev libcmark-gfm-extensions-dev python3 zstd openssl
      util-linux tmux"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
# shellcheck disable=SC2086
$SUDO apt-get install -y $missing
