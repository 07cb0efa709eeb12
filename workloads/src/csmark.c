// SPDX-License-Identifier: GPL-2.0
/*
 * csmark begin | csmark end LABEL
 *
 * Opens or closes a window of the tcg-cs plugin from a shell script (the
 * guest's lockstat_reset / lockstat_save): see csmark.h. Without the
 * plugin it does nothing.
 */
#include <stdio.h>
#include <string.h>

#include "csmark.h"

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "begin")) {
		csmark_begin();
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "end") && argv[2][0]) {
		csmark_end();
		csmark_label(argv[2]);
		return 0;
	}
	fprintf(stderr, "usage: csmark begin | csmark end LABEL\n");
	return 2;
}
