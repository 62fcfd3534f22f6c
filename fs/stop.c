#include "stop.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "log.h"
#include "regfile.h"

/*
 * One mutex and condition variable carry every event main() waits for.
 * The open-file count is atomic so that open and release take no lock;
 * only the release that brings it to zero takes the mutex to wake main().
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	int signal;			/* the last SIGTERM/SIGINT received, or 0 */
	unsigned int asked;		/* how many were received */
	unsigned int answered;		/* how many main() was told of */
	bool session_over;
	_Atomic unsigned long open_files;
	pthread_t thread;
} stop = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.changed = PTHREAD_COND_INITIALIZER,
};

/* SIGUSR1 is ours: stop_unwatch_signals() sends it to end the thread. */
static void handled_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR1);
}

void stop_block_signals(void)
{
	sigset_t set;

	handled_signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

static void wake_main(void)
{
	pthread_cond_broadcast(&stop.changed);
}

static void reopen_log(void)
{
	int r = log_reopen();

	if (r == -ENOENT)
		log_info("SIGHUP: logging to stderr, nothing to reopen");
	else if (r)
		log_error("SIGHUP: cannot reopen the log: %s; still writing the old one",
			  regfile_strerror(r));
	else
		log_info("SIGHUP: reopened the log");
}

static void *signal_main(void *arg)
{
	sigset_t set;
	int sig;

	(void)arg;
	handled_signals(&set);
	for (;;) {
		if (sigwait(&set, &sig))
			continue;
		if (sig == SIGUSR1)
			return NULL;
		if (sig == SIGHUP) {
			reopen_log();
			continue;
		}
		pthread_mutex_lock(&stop.lock);
		stop.signal = sig;
		stop.asked++;
		wake_main();
		pthread_mutex_unlock(&stop.lock);
	}
}

int stop_watch_signals(void)
{
	return -pthread_create(&stop.thread, NULL, signal_main, NULL);
}

void stop_unwatch_signals(void)
{
	pthread_kill(stop.thread, SIGUSR1);
	pthread_join(stop.thread, NULL);
}

void stop_file_opened(void)
{
	atomic_fetch_add(&stop.open_files, 1);
}

void stop_file_closed(void)
{
	if (atomic_fetch_sub(&stop.open_files, 1) != 1)
		return;
	pthread_mutex_lock(&stop.lock);
	wake_main();
	pthread_mutex_unlock(&stop.lock);
}

void stop_session_over(void)
{
	pthread_mutex_lock(&stop.lock);
	stop.session_over = true;
	wake_main();
	pthread_mutex_unlock(&stop.lock);
}

int stop_wait_request(void)
{
	int sig;

	pthread_mutex_lock(&stop.lock);
	while (!stop.asked && !stop.session_over)
		pthread_cond_wait(&stop.changed, &stop.lock);
	sig = stop.session_over ? 0 : stop.signal;
	stop.answered = stop.asked;
	pthread_mutex_unlock(&stop.lock);
	return sig;
}

enum stop_drain stop_wait_closed(int *sig)
{
	enum stop_drain why;

	pthread_mutex_lock(&stop.lock);
	while (atomic_load(&stop.open_files) && !stop.session_over &&
	       stop.answered == stop.asked)
		pthread_cond_wait(&stop.changed, &stop.lock);
	if (stop.session_over) {
		why = STOP_SESSION_OVER;
	} else if (stop.answered != stop.asked) {
		why = STOP_ASKED_AGAIN;
		*sig = stop.signal;
		stop.answered = stop.asked;
	} else {
		why = STOP_NOTHING_OPEN;
	}
	pthread_mutex_unlock(&stop.lock);
	return why;
}
