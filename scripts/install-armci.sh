#!/bin/sh
# install-armci.sh PREFIX: installs armci-shim (the native ARMCI) for C users and for build
# systems that look for an ARMCI (Global Arrays' --with-armci=PREFIX, pkg-config):
#
#   PREFIX/bin/skif-armcicc
#   PREFIX/include/armci.h, message.h, armcix.h
#   PREFIX/lib/libarmci.so, libarmci.a
#   PREFIX/lib/pkgconfig/armci.pc            relative to its own place
#
# Everything is found relative to PREFIX: it can be moved. Builds the release library first
# (cargo, honouring CARGO_TARGET_DIR), unless given what to copy: --libdir DIR
# (libarmci.{so,a}).
set -eu
cd "$(dirname "$0")/.."
root=$PWD
prefix= libdir=
while [ $# -gt 0 ]; do
  case "$1" in
    --libdir) libdir=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "install-armci.sh: unknown option $1" >&2; exit 2 ;;
    *) prefix=$1; shift ;;
  esac
done
[ -n "$prefix" ] || { echo "usage: install-armci.sh PREFIX [--libdir DIR]" >&2; exit 2; }
if [ -z "$libdir" ]; then
  cargo build --release --quiet -p armci-shim
  libdir=${CARGO_TARGET_DIR:-$root/target}/release
fi
mkdir -p "$prefix/bin" "$prefix/include" "$prefix/lib/pkgconfig"
prefix=$(cd "$prefix" && pwd)
cp "$root/armci-shim/bin/skif-armcicc" "$prefix/bin/"
cp "$root/armci-shim/include/armci.h" "$root/armci-shim/include/message.h" "$root/armci-shim/include/armcix.h" "$prefix/include/"
for f in libarmci.so libarmci.a; do
  if [ -f "$libdir/$f" ]; then cp "$libdir/$f" "$prefix/lib/"; fi
done
[ -f "$prefix/lib/libarmci.so" ] || { echo "install-armci.sh: no libarmci.so in $libdir" >&2; exit 1; }
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)
cat > "$prefix/lib/pkgconfig/armci.pc" <<PC
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: armci
Description: armci-shim: ARMCI on SkifCh channels (libarmci)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -larmci -Wl,-rpath,\${libdir}
Libs.private: -lpthread -lm -ldl -lrt -lutil -lgcc_s
PC
echo "installed armci-shim in $prefix (pkg-config: PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs armci)"
