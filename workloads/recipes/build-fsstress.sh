#!/bin/sh
# xfstests' fsstress, static, with every operation of its default mix compiled
# in. The version tested is in workloads/recipes/versions; Debian 12 needs
# xfslibs-dev, libaio-dev and liburing-dev.
#
#   workloads/recipes/build-fsstress.sh XFSTESTS_DIR OUT_DIR    -> OUT_DIR/fsstress
set -eu
if [ $# -ne 2 ]; then
    echo "usage: $0 XFSTESTS_DIR OUT_DIR" >&2
    exit 2
fi
src=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
# The flags xfstests' ltp/Makefile adds once configure found libaio, liburing,
# copy_file_range and an xfslibs without XFS_IOC_EXCHANGE_RANGE (6.1's).
gcc -O2 -static -D_GNU_SOURCE -DAIO -DURING -DHAVE_COPY_FILE_RANGE \
    -DNEED_INTERNAL_XFS_IOC_EXCHANGE_RANGE -I"$here/fsstress" -I"$src/src" \
    "$src/ltp/fsstress.c" -laio -luring -lm -o "$out/fsstress"
