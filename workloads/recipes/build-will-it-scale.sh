#!/bin/sh
# will-it-scale tests in processes mode, static. The version tested is in
# workloads/recipes/versions; Debian 12 needs libhwloc-dev (it brings
# libnuma-dev and libltdl-dev). Debian ships no static libudev: udev-stub.c
# stands in for the five functions libhwloc.a calls.
#
#   workloads/recipes/build-will-it-scale.sh WILL_IT_SCALE_DIR OUT_DIR TEST...
#       -> OUT_DIR/TEST_processes for each TEST (open1 unlink1 ...)
set -eu
if [ $# -lt 3 ]; then
    echo "usage: $0 WILL_IT_SCALE_DIR OUT_DIR TEST..." >&2
    exit 2
fi
src=$1
out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
# ld warns that libltdl and libhwloc call dlopen in a static program: hwloc
# loads no plugin here, the warnings are harmless.
for test in "$@"; do
    gcc -O2 -static "$src/main.c" "$src/tests/$test.c" "$here/udev-stub.c" \
        -lhwloc -lnuma -lltdl -lm -o "$out/${test}_processes"
done
