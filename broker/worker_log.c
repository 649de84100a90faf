// SPDX-License-Identifier: MIT
/*
 * Each worker's own log stream, never the broker's stderr: under journald
 * (the broker's stderr is a journal stream) a journal stream of its own
 * with the identifier rdmagate-worker/<vm>; otherwise a FIFO in the
 * broker's state directory (<vm>.log, root's) that the broker reads
 * non-blocking and re-emits line by line with its fixed "worker/<vm>: "
 * prefix, escaped, bounded and rate-bounded (broker/wlog.c).  The worker
 * holds its FIFO open for reading too, so its writes never meet a FIFO
 * without a reader while no broker runs: they wait in the FIFO (or, once
 * it is full, are dropped: the worker's end is non-blocking) for the next
 * broker, which opens it again when it re-adopts the worker.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <syslog.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include "broker/broker.h"
#include "common/cleanup.h"
#include "common/log.h"

/* Is the broker's stderr the journal (systemd says so in JOURNAL_STREAM)? */
static bool under_journald(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	return e && sscanf(e, "%llu:%llu", &dev, &ino) == 2 &&
	       fstat(2, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

static int fifo_path(const struct broker *b, const struct worker *w, char *buf,
		     size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/workers/%s.log", b->state_dir,
			     w->vm) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* The broker's reading end, watched by the loop. */
static int open_reader(struct broker *b, struct worker *w, const char *path)
{
	struct epoll_event ev = { .events = EPOLLIN };
	_cleanup_close_ int fd =
		open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode) || st.st_uid != 0)
		return -EINVAL;
	ev.data.u64 = ((uint64_t)TAG_WLOG << 32) | (uint32_t)(w - b->workers);
	if (epoll_ctl(b->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	snprintf(w->log_tag, sizeof(w->log_tag), "worker/%s: ", w->vm);
	wlog_init(&w->wlog, w->log_tag);
	w->log_fd = TAKE_FD(fd);
	return 0;
}

int worker_log_open(struct broker *b, struct worker *w, int *ret_child_fd,
		    struct reason *why)
{
	char path[BP_PATH_SIZE + 16], ident[BP_VM_SIZE + 24];
	_cleanup_close_ int child = -1;
	int ret;

	if (under_journald()) {
		snprintf(ident, sizeof(ident), "rdmagate-worker/%s", w->vm);
		/* no level prefix: the worker does not choose priorities */
		child = sd_journal_stream_fd(ident, LOG_INFO, 0);
		if (child < 0) {
			reason_set(why, "its journal stream: %s",
				   strerror(-child));
			return child;
		}
		/* a slow journal drops the worker's lines, never stalls it */
		if (fcntl(child, F_SETFL, O_NONBLOCK) < 0) {
			return reason_fail(why, -errno,
					   "its journal stream: %s",
					   strerror(errno));
		}
		*ret_child_fd = TAKE_FD(child);
		return 0;
	}
	ret = fifo_path(b, w, path, sizeof(path));
	if (ret == 0 && unlink(path) < 0 && errno != ENOENT)
		ret = -errno;
	if (ret == 0 && mkfifo(path, 0600) < 0)
		ret = -errno;
	if (ret == 0) {
		child = open(path,
			     O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
		ret = child < 0 ? -errno : open_reader(b, w, path);
	}
	if (ret < 0) {
		reason_set(why, "its log FIFO %s: %s", path, strerror(-ret));
		unlink(path);
		return ret;
	}
	*ret_child_fd = TAKE_FD(child);
	return 0;
}

void worker_log_adopt(struct broker *b, struct worker *w)
{
	char path[BP_PATH_SIZE + 16];
	int ret;

	if (fifo_path(b, w, path, sizeof(path)) < 0 || access(path, F_OK) < 0)
		return; /* its stream is the journal's */
	ret = open_reader(b, w, path);
	if (ret < 0)
		log_warnx("worker/%s: its log FIFO %s: %s", w->vm, path,
			  strerror(-ret));
}

static void emit(void *arg, const char *line)
{
	const struct worker *w = arg;
	char buf[WLOG_OUT_MAX + BP_VM_SIZE + 16];
	int n;

	/* the broker's own prefix, never "broker: ": one write per line */
	n = snprintf(buf, sizeof(buf), "worker/%s: %s\n", w->vm, line);
	if (n > 0 && write(2, buf, (size_t)n) < 0)
		return;
}

/* Reads what is there (bounded per call: one worker cannot hold the loop);
 * false at the end of the stream. */
static bool drain(struct worker *w, unsigned int rounds)
{
	char buf[4096];
	ssize_t n;

	while (rounds--) {
		n = read(w->log_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN;
		if (n == 0)
			return false;
		wlog_feed(&w->wlog, buf, (size_t)n, mono_ms(), emit, w);
	}
	return true;
}

void worker_log_read(struct broker *b, unsigned int i)
{
	struct worker *w;

	if (i >= BROKER_MAX_WORKERS || !b->workers[i].used ||
	    b->workers[i].log_fd < 0)
		return;
	w = &b->workers[i];
	if (!drain(w, 16))
		worker_log_close(b, w, false);
}

void worker_log_close(struct broker *b, struct worker *w, bool remove)
{
	char path[BP_PATH_SIZE + 16];

	if (w->log_fd >= 0) {
		drain(w, 64);
		wlog_end(&w->wlog, mono_ms(), emit, w);
		epoll_ctl(b->ep, EPOLL_CTL_DEL, w->log_fd, NULL);
		w->log_fd = safe_close(w->log_fd);
	}
	if (remove && fifo_path(b, w, path, sizeof(path)) == 0 &&
	    unlink(path) < 0 && errno != ENOENT)
		log_warn("worker/%s: removing %s", w->vm, path);
}
