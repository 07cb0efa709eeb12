/*
 * stepwatch: runs a step's command (or one phase of it) for the harness,
 * times it, and brackets the kernel's lock counts around the part that is
 * timed. Built static by harness/guest/initramfs.py; /bin/phase links to it.
 *
 *   stepwatch -p PREFIX [-C DIR] -- COMMAND
 *       run_step's side: runs `sh -e -c COMMAND` in DIR, leaves
 *       PREFIX.window ("command_ns=... window_ns=... opened=0|1 closed=0|1").
 *       With INODE_DUEL_LOCK_START / INODE_DUEL_LOCK_END set, the window
 *       opens at the first line containing the start text (default: when
 *       the command starts) and closes at the first later line containing
 *       the end text (default: when it ends); lock_stat is reset when it
 *       opens and saved to PREFIX.all.lock_stat when it closes. PREFIX.window
 *       also says where in each stream the window lies (out_from= out_to=
 *       err_from= err_to=: byte offsets of the command's stdout and stderr;
 *       the start and end lines inside it; to=-1: up to the end), so that
 *       the host reads a program's own figures from its window.
 *
 *   phase [-s TEXT] [-e TEXT] NAME OPS COMMAND [ARG...]
 *       for a run line: runs COMMAND, brackets lock_stat around it (or
 *       between the lines, as above) into $INODE_DUEL_PREFIX.NAME.lock_stat
 *       and prints the harness's result line
 *       "result phase=NAME ops=OPS elapsed_ns=... procs=$INODE_DUEL_PROCS".
 *
 * INODE_DUEL_PROC_DIR replaces /proc for the host's tests of this program:
 * they must never reset the host kernel's counters.
 *
 * Why lines need care: a program whose stdout is a pipe buffers it, so a
 * start line may reach us only when the program exits. When lines are
 * watched, the command's stdout is a pseudo-terminal (stdio then writes
 * each line as it is printed) and its stderr a pipe; both are copied
 * through and both are watched. The watcher runs SCHED_FIFO (reset for the
 * command on fork) so that it acts on a line before the program, woken on
 * the same CPU, runs on. The command stays in our process group: run_step
 * kills the whole group at the step's limit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#define LINE_MAX_BYTES 4096
/* After the command ends, its output is read to the end (EOF, or EIO from the
 * terminal once the kernel has delivered what was written); only processes
 * it left running, which may hold the terminal open, are not waited for
 * longer than this. */
#define DRAIN_MS 5000

struct stream {
	int fd;       /* what we read: pty master or pipe; -1 once closed */
	int out;      /* where it is copied: our stdout or stderr */
	char line[LINE_MAX_BYTES];
	size_t len;
	long long done; /* bytes of the whole lines read: where the next line starts */
};

enum { OUT, ERR, STREAMS };

struct window {
	const char *start, *end; /* texts of the lines, NULL: command start/end */
	const char *prefix, *name; /* lock_stat goes to PREFIX.NAME.lock_stat */
	int bracket;             /* reset and save lock_stat at the edges */
	int opened, closed;
	long long opened_ns, closed_ns;
	long long from[STREAMS], to[STREAMS]; /* the window in each stream; to -1: the end */
};

static int child_done_pipe[2] = {-1, -1};
static const char *proc_dir = "/proc";

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "stepwatch: %s: %s\n", what, strerror(errno));
	exit(125);
}

static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* the reader went away: keep running the command */
		buf += n;
		len -= (size_t)n;
	}
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY), out;

	if (in < 0)
		return; /* no lock_stat in this kernel (perf flavour) */
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0) {
		close(in);
		return;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		write_all(out, buf, (size_t)n);
	close(in);
	close(out);
}

static void write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0)
		return;
	write_all(fd, text, strlen(text));
	close(fd);
}

static void locks_reset(void)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/lock_stat", proc_dir);
	write_text(path, "0\n");
	snprintf(path, sizeof(path), "%s/icache_retries", proc_dir);
	write_text(path, "0\n");
}

static void locks_save(const struct window *w)
{
	char from[PATH_MAX], to[PATH_MAX];

	snprintf(from, sizeof(from), "%s/lock_stat", proc_dir);
	snprintf(to, sizeof(to), "%s.%s.lock_stat", w->prefix, w->name);
	copy_file(from, to);
	snprintf(from, sizeof(from), "%s/icache_retries", proc_dir);
	snprintf(to, sizeof(to), "%s.%s.retries", w->prefix, w->name);
	copy_file(from, to);
}

static void window_open(struct window *w)
{
	w->opened_ns = now_ns();
	w->opened = 1;
	if (w->bracket)
		locks_reset();
}

static void window_close(struct window *w)
{
	w->closed_ns = now_ns();
	w->closed = 1;
	if (w->bracket)
		locks_save(w);
}

/* A line of streams[which], from offset start to end: does it open or close
 * the window? The start and end lines themselves are inside it; in the other
 * stream, the line it is still reading is not yet. */
static void check_line(struct window *w, struct stream *streams, int which, long long start,
		       long long end)
{
	struct stream *s = &streams[which], *other = &streams[1 - which];

	if (!w->opened) {
		if (w->start && strstr(s->line, w->start)) {
			window_open(w);
			w->from[which] = start;
			w->from[1 - which] = other->done;
		}
	} else if (!w->closed && w->end && strstr(s->line, w->end)) {
		window_close(w);
		w->to[which] = end;
		w->to[1 - which] = other->done;
	}
}

/* The line of s is whole (ends: with its \n or \r): check it, start the next. */
static void line_done(struct window *w, struct stream *streams, int which, int ends)
{
	struct stream *s = &streams[which];
	long long start = s->done;

	s->line[s->len] = '\0';
	s->done += (long long)s->len + ends;
	s->len = 0;
	if (s->line[0])
		check_line(w, streams, which, start, s->done);
}

static void feed(struct window *w, struct stream *streams, int which, const char *buf,
		 size_t len)
{
	struct stream *s = &streams[which];

	write_all(s->out, buf, len);
	for (size_t i = 0; i < len; i++) {
		int ends = buf[i] == '\n' || buf[i] == '\r';

		if (ends || s->len == sizeof(s->line) - 1) {
			line_done(w, streams, which, ends);
			if (ends)
				continue;
		}
		s->line[s->len++] = buf[i];
	}
}

static void on_child(int sig)
{
	int saved = errno;
	char c = 0;

	(void)sig;
	if (write(child_done_pipe[1], &c, 1) < 0) {
		/* the pipe is full: the main loop has been told already */
	}
	errno = saved;
}

/* Raw terminal: no \n -> \r\n, no echo, nothing interpreted. */
static int open_pty(int *slave)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	struct termios tio;

	if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0)
		return -1;
	*slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	if (*slave < 0)
		return -1;
	if (tcgetattr(*slave, &tio) == 0) {
		cfmakeraw(&tio);
		tcsetattr(*slave, TCSANOW, &tio);
	}
	return master;
}

/* Run argv; watch its lines when the window has texts. Returns the exit status
 * in the shell's convention (128 + signal). */
static int run(char **argv, const char *dir, struct window *w)
{
	int watch = w->start || w->end;
	int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, slave = -1, master = -1;
	struct stream streams[STREAMS];
	struct sigaction sa;
	pid_t pid;
	int status = 0, reaped = 0, said = 0;
	long long drain_until = 0;

	if (pipe2(child_done_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		die("pipe");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_child;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	if (watch) {
		master = open_pty(&slave);
		if (master < 0) {
			/* No devpts: a pipe still works for programs that flush. */
			said = fprintf(stderr, "stepwatch: no pseudo-terminal (%s): stdout is a pipe\n",
				       strerror(errno));
			if (pipe2(out_pipe, O_CLOEXEC) < 0)
				die("pipe");
			master = out_pipe[0];
			slave = out_pipe[1];
		}
		if (pipe2(err_pipe, O_CLOEXEC) < 0)
			die("pipe");
		struct sched_param rt = {.sched_priority = 50};

		/* EPERM or no RT class: the window is then late by a wakeup. */
		sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &rt);
	}
	if (!w->start)
		window_open(w);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		signal(SIGCHLD, SIG_DFL);
		if (watch) {
			dup2(slave, STDOUT_FILENO);
			dup2(err_pipe[1], STDERR_FILENO);
		}
		if (dir && chdir(dir) < 0) {
			fprintf(stderr, "stepwatch: cd %s: %s\n", dir, strerror(errno));
			_exit(126);
		}
		execvp(argv[0], argv);
		fprintf(stderr, "stepwatch: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (watch) {
		close(slave);
		close(err_pipe[1]);
		streams[OUT] = (struct stream){.fd = master, .out = STDOUT_FILENO};
		/* what we said ourselves comes first in the step's stderr */
		streams[ERR] = (struct stream){.fd = err_pipe[0], .out = STDERR_FILENO,
					       .done = said > 0 ? said : 0};
	}
	for (;;) {
		struct pollfd fds[3];
		int nfds = 0, timeout = -1;
		char buf[65536];

		if (!reaped) {
			pid_t got = waitpid(pid, &status, WNOHANG);

			if (got == pid) {
				reaped = 1;
				drain_until = now_ns() + DRAIN_MS * 1000000LL;
				/* The window ends with the command, not with its output. */
				if (w->opened && !w->closed && !w->end)
					window_close(w);
			}
		}
		if (reaped && (!watch || (streams[0].fd < 0 && streams[1].fd < 0)))
			break;
		if (reaped) {
			long long left = (drain_until - now_ns()) / 1000000LL;

			if (left <= 0)
				break;
			timeout = (int)left;
		}
		fds[nfds++] = (struct pollfd){.fd = child_done_pipe[0], .events = POLLIN};
		for (int i = 0; watch && i < 2; i++)
			fds[nfds++] = (struct pollfd){.fd = streams[i].fd, .events = POLLIN};
		if (poll(fds, (nfds_t)nfds, timeout) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		if (fds[0].revents & POLLIN)
			while (read(child_done_pipe[0], buf, sizeof(buf)) > 0)
				;
		for (int i = 0; watch && i < 2; i++) {
			struct stream *s = &streams[i];
			ssize_t n;

			if (s->fd < 0 || !(fds[1 + i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(s->fd, buf, sizeof(buf));
			if (n > 0) {
				feed(w, streams, i, buf, (size_t)n);
			} else if (n == 0 || errno != EINTR) {
				/* EOF, or EIO from a master whose terminal closed */
				close(s->fd);
				s->fd = -1;
				fds[1 + i].fd = -1;
			}
		}
	}
	for (int i = 0; watch && i < STREAMS; i++) {
		if (streams[i].len)
			line_done(w, streams, i, 0);
	}
	if (w->opened && !w->closed && !w->end)
		window_close(w);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

static void usage(void)
{
	fprintf(stderr, "usage: stepwatch -p PREFIX [-C DIR] -- COMMAND\n"
			"       phase [-s TEXT] [-e TEXT] NAME OPS COMMAND [ARG...]\n");
	exit(2);
}

static int step_main(int argc, char **argv)
{
	struct window w = {.name = "all", .to = {-1, -1}};
	const char *dir = NULL;
	char *shell[] = {"/bin/sh", "-e", "-c", NULL, NULL};
	long long started, ended;
	char path[PATH_MAX];
	FILE *f;
	int opt, rc;

	while ((opt = getopt(argc, argv, "+p:C:")) != -1) {
		if (opt == 'p')
			w.prefix = optarg;
		else if (opt == 'C')
			dir = optarg;
		else
			usage();
	}
	if (!w.prefix || optind != argc - 1)
		usage();
	shell[3] = argv[optind];
	w.start = getenv("INODE_DUEL_LOCK_START");
	w.end = getenv("INODE_DUEL_LOCK_END");
	if (w.start && !*w.start)
		w.start = NULL;
	if (w.end && !*w.end)
		w.end = NULL;
	w.bracket = w.start || w.end;
	started = now_ns();
	rc = run(shell, dir, &w);
	ended = now_ns();
	snprintf(path, sizeof(path), "%s.window", w.prefix);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "command_ns=%lld window_ns=%lld opened=%d closed=%d "
			"out_from=%lld out_to=%lld err_from=%lld err_to=%lld\n",
			ended - started,
			w.opened && w.closed ? w.closed_ns - w.opened_ns : 0LL,
			w.opened, w.closed, w.from[OUT], w.to[OUT], w.from[ERR], w.to[ERR]);
		fclose(f);
	}
	return rc;
}

static int phase_main(int argc, char **argv)
{
	struct window w = {.bracket = 1, .to = {-1, -1}};
	const char *procs = getenv("INODE_DUEL_PROCS");
	char *end;
	long long ops;
	int opt, rc;

	while ((opt = getopt(argc, argv, "+s:e:")) != -1) {
		if (opt == 's')
			w.start = optarg;
		else if (opt == 'e')
			w.end = optarg;
		else
			usage();
	}
	if (argc - optind < 3)
		usage();
	w.name = argv[optind];
	ops = strtoll(argv[optind + 1], &end, 10);
	if (*end || ops < 0) {
		fprintf(stderr, "phase %s: OPS must be a count, not '%s'\n", w.name, argv[optind + 1]);
		return 2;
	}
	w.prefix = getenv("INODE_DUEL_PREFIX");
	if (!w.prefix) {
		fprintf(stderr, "phase %s: INODE_DUEL_PREFIX is not set (run it from a step)\n",
			w.name);
		return 2;
	}
	rc = run(argv + optind + 2, NULL, &w);
	if (rc != 0)
		return rc;
	if (!w.opened || !w.closed) {
		fprintf(stderr, "phase %s: the %s line ('%s') never appeared\n", w.name,
			w.opened ? "end" : "start", w.opened ? w.end : w.start);
		return 1;
	}
	printf("result phase=%s ops=%lld elapsed_ns=%lld procs=%s\n", w.name, ops,
	       w.closed_ns - w.opened_ns, procs ? procs : "1");
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	const char *slash = strrchr(argv[0], '/');
	const char *me = slash ? slash + 1 : argv[0];

	if (getenv("INODE_DUEL_PROC_DIR"))
		proc_dir = getenv("INODE_DUEL_PROC_DIR");
	if (strcmp(me, "phase") == 0)
		return phase_main(argc, argv);
	return step_main(argc, argv);
}
