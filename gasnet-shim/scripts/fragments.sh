#!/bin/sh
# fragments.sh LIBDIR OUTDIR — writes the conduit fragments a GASNet client reads to find
# this GASNet (conduit "skifch"):
#   OUTDIR/skifch-conduit/skifch-seq.mak, skifch-par.mak      (include them from a Makefile)
#   OUTDIR/pkgconfig/gasnet-skifch-seq.pc, gasnet-skifch-par.pc  (PKG_CONFIG_PATH=OUTDIR/pkgconfig)
# each exporting GASNET_CC, GASNET_CPPFLAGS, GASNET_CFLAGS, GASNET_LDFLAGS, GASNET_LIBS
# (and GASNET_CXX, GASNET_CXXFLAGS, GASNET_LD, GASNET_LDFLAGS). LIBDIR holds libgasnet.so
# (cargo build -p gasnet-shim: target/debug or target/release). The headers are this
# crate's include/ directory.
set -e
[ $# -eq 2 ] || { echo "usage: $0 LIBDIR OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
lib=$(cd "$1" && pwd)
out=$2
mkdir -p "$out/skifch-conduit" "$out/pkgconfig"
cc=${CC:-cc}
cxx=${CXX:-c++}
for mode in seq par; do
    MODE=$(echo $mode | tr a-z A-Z)
    cppflags="-DGASNET_$MODE -D_GNU_SOURCE=1 -I$here/include"
    libs="-L$lib -Wl,-rpath,$lib -lgasnet -lpthread -lrt -lm -ldl"
    cat > "$out/skifch-conduit/skifch-$mode.mak" <<MAK
# skifch-$mode.mak — GASNet-EX conduit fragment of gasnet-shim (conduit skifch, GASNET_$MODE)
GASNET_PREFIX = $here
GASNET_CONDUIT = skifch
GASNET_THREAD_MODEL = $MODE
GASNET_CC = $cc
GASNET_CXX = $cxx
GASNET_LD = $cc
GASNET_CPPFLAGS = $cppflags
GASNET_CFLAGS = -std=gnu11 -O2
GASNET_CXXFLAGS = -O2
GASNET_LDFLAGS =
GASNET_LIBS = $libs
MAK
    cat > "$out/pkgconfig/gasnet-skifch-$mode.pc" <<PC
# gasnet-skifch-$mode.pc — GASNet-EX conduit fragment of gasnet-shim (conduit skifch)
prefix=$here
libdir=$lib
GASNET_CC=$cc
GASNET_CXX=$cxx
GASNET_LD=$cc
GASNET_CPPFLAGS=$cppflags
GASNET_CFLAGS=-std=gnu11 -O2
GASNET_CXXFLAGS=-O2
GASNET_LDFLAGS=
GASNET_LIBS=$libs

Name: gasnet-skifch-$mode
Description: GASNet-EX on SkifCh (gasnet-shim), skifch conduit, $MODE
Version: 2023.9.0
Cflags: $cppflags
Libs: $libs
PC
done
