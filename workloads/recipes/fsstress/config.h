/*
 * What xfstests' ./configure finds on Debian 12 (with xfslibs-dev) for the
 * headers src/global.h and ltp/fsstress.c read: without dirent.h, stdlib.h
 * and unistd.h fsstress does not compile; without linux/falloc.h and
 * sys/mman.h its fallocate, punch, zero, collapse, insert, unshare, mread
 * and mwrite operations compile to nothing and still count as done.
 * HAVE_RENAMEAT2: glibc 2.36 declares renameat2(), which fsstress would
 * otherwise declare a second time. build-fsstress.sh adds the -D flags of
 * xfstests' ltp/Makefile (AIO, io_uring, copy_file_range, exchange-range).
 */
#define HAVE_XFS_XFS_H 1
#define HAVE_LINUX_FIEMAP_H 1
#define HAVE_LINUX_FALLOC_H 1
#define HAVE_SYS_MMAN_H 1
#define HAVE_SYS_PRCTL_H 1
#define HAVE_RENAMEAT2 1
#define HAVE_ASSERT_H 1
#define HAVE_DIRENT_H 1
#define HAVE_ERRNO_H 1
#define HAVE_LIBGEN_H 1
#define HAVE_MALLOC_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_STRINGS_H 1
#define HAVE_SYS_FCNTL_H 1
#define HAVE_SYS_IOCTL_H 1
#define HAVE_SYS_PARAM_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_SYS_STATVFS_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_SYS_WAIT_H 1
#define HAVE_UNISTD_H 1
#define STDC_HEADERS 1
