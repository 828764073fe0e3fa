#!/usr/bin/env bash
# Builds the reference tests/expr_reference.rs runs fex's `expr` against:
# muParser, the engine behind FG's expr_feature, from Debian's packages
# (libmuparser-dev and its library, fetched with `apt-get download` and
# unpacked with `dpkg -x`: no root, nothing installed), and
# tests/reference/muparser_driver.cpp over it, into target/muparser.
# Prints the driver's path. Does nothing when the driver is newer than its
# source. Needs a Debian-family machine with g++.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/muparser
mkdir -p target
exec 9>target/muparser.lock
flock 9
src=tests/reference/muparser_driver.cpp
if [ -x "$out/driver" ] && [ "$out/driver" -nt "$src" ]; then
    echo "$out/driver"
    exit 0
fi
rm -rf "$out.tmp"
mkdir -p "$out.tmp/root"
# The version the tests were written against (Debian 12's), else whatever
# the machine's release has.
(cd "$out.tmp" && { apt-get download libmuparser-dev=2.3.3-0.1 libmuparser2v5=2.3.3-0.1 ||
    apt-get download libmuparser-dev libmuparser2v5; }) >"$out.tmp/download.log" 2>&1 ||
    { cat "$out.tmp/download.log" >&2; echo "muparser.sh: apt-get download failed" >&2; exit 1; }
for deb in "$out.tmp"/*.deb; do dpkg -x "$deb" "$out.tmp/root"; done
lib=$(find "$out.tmp/root" -name 'libmuparser.so.*.*' | head -1)
libdir=$(dirname "$lib")
g++ -O2 -std=c++17 -I"$out.tmp/root/usr/include" "$src" -o "$out.tmp/driver" "$lib" \
    -Wl,-rpath,"\$ORIGIN/${libdir#"$out.tmp/"}"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out/driver"
