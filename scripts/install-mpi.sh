#!/bin/sh
# install-mpi.sh PREFIX: installs mpi-lite for C/C++ users and for build systems that look
# for an MPI (rsmpi's `mpicc -show`, mpi4py's MPICC, pkg-config):
#
#   PREFIX/bin/skif-mpicc, skif-mpicxx, skif-mpiexec, skifrun
#   PREFIX/bin/mpi/{mpicc,mpicxx,mpic++,mpiexec,mpirun}   put first on PATH to use the names
#   PREFIX/include/mpi.h
#   PREFIX/lib/libskifmpi.so, libskifmpi.a
#   PREFIX/lib/pkgconfig/skifmpi.pc, mpi.pc              relative to their own place
#
# The installed wrappers find everything relative to themselves: PREFIX can be moved.
# Builds the release library and launcher first (cargo, honouring CARGO_TARGET_DIR), unless
# given what to copy: --libdir DIR (libskifmpi.{so,a}) and --skifrun FILE.
set -eu
cd "$(dirname "$0")/.."
root=$PWD
prefix= libdir= skifrun=
while [ $# -gt 0 ]; do
  case "$1" in
    --libdir) libdir=$2; shift 2 ;;
    --skifrun) skifrun=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "install-mpi.sh: unknown option $1" >&2; exit 2 ;;
    *) prefix=$1; shift ;;
  esac
done
[ -n "$prefix" ] || { echo "usage: install-mpi.sh PREFIX [--libdir DIR] [--skifrun FILE]" >&2; exit 2; }
if [ -z "$libdir" ] || [ -z "$skifrun" ]; then
  cargo build --release --quiet -p skifmpi -p skifrun
  target=${CARGO_TARGET_DIR:-$root/target}
  libdir=${libdir:-$target/release}
  skifrun=${skifrun:-$target/release/skifrun}
fi
mkdir -p "$prefix/bin/mpi" "$prefix/include" "$prefix/lib/pkgconfig"
prefix=$(cd "$prefix" && pwd)
cp "$root/mpi-lite/bin/skif-mpicc" "$root/mpi-lite/bin/skif-mpiexec" "$prefix/bin/"
cp "$skifrun" "$prefix/bin/skifrun"
ln -sf skif-mpicc "$prefix/bin/skif-mpicxx"
for n in mpicc mpicxx mpic++; do ln -sf ../skif-mpicc "$prefix/bin/mpi/$n"; done
for n in mpiexec mpirun; do ln -sf ../skif-mpiexec "$prefix/bin/mpi/$n"; done
cp "$root/mpi-lite/include/mpi.h" "$prefix/include/"
for f in libskifmpi.so libskifmpi.a; do
  if [ -f "$libdir/$f" ]; then cp "$libdir/$f" "$prefix/lib/"; fi
done
[ -f "$prefix/lib/libskifmpi.so" ] || { echo "install-mpi.sh: no libskifmpi.so in $libdir" >&2; exit 1; }
version=$(sed -n 's/^#define MPI_LITE_VERSION "\(.*\)"/\1/p' "$root/mpi-lite/include/mpi.h")
for pc in skifmpi mpi; do
  cat > "$prefix/lib/pkgconfig/$pc.pc" <<PC
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: $pc
Description: mpi-lite: MPI 3.1 on SkifCh channels (libskifmpi)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lskifmpi -Wl,-rpath,\${libdir}
Libs.private: -lpthread -lm -ldl -lrt -lutil -lgcc_s
PC
done
echo "installed mpi-lite in $prefix (put $prefix/bin/mpi first on PATH for mpicc/mpiexec)"
