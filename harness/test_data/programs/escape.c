/*
 * escape: workers that try to outlive their step, as fsstress's do.
 *
 *   escape [-e] [-s]
 *
 * The program moves to a process group of its own (setpgid(0, 0), as
 * fsstress does) and starts two workers, each also in a process group of
 * its own; with -s the second starts a session of its own (setsid) instead.
 * Everything ignores SIGTERM. It prints one line per process,
 * "escape pid=N pgid=N sid=N", then sleeps (with -e: exits at once and
 * leaves the workers running). Static, for the busybox guest and the host.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void say(void)
{
	printf("escape pid=%d pgid=%d sid=%d\n", (int)getpid(), (int)getpgid(0), (int)getsid(0));
	fflush(stdout);
}

static void worker(int own_session)
{
	if (own_session)
		setsid();
	else
		setpgid(0, 0);
	say();
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	int leave = 0, own_session = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-e") == 0)
			leave = 1;
		else if (strcmp(argv[i], "-s") == 0)
			own_session = 1;
		else {
			fprintf(stderr, "usage: escape [-e] [-s]\n");
			return 2;
		}
	}
	signal(SIGTERM, SIG_IGN);
	setpgid(0, 0);
	say();
	for (int i = 0; i < 2; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0)
			worker(i == 1 && own_session);
	}
	sleep(1); /* the workers have said where they are */
	if (leave)
		return 0;
	for (;;)
		pause();
}
