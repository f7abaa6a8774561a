/* pool.c — helper threads taking jobs from one queue under one mutex; the
 * submitter waits job by job and runs a job itself when it is still
 * queued. */
#include "base/pool.h"
#include "base/bgprio.h"
#include "base/clock.h"
#include "base/xalloc.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

/* How long pool_wait polls a running job before it sleeps: waking a
 * sleeping thread costs tens of microseconds on a virtual machine, about
 * what the jobs themselves take. */
#define POOL_POLL_NS 200000

enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE };

struct pool {
	pthread_mutex_t mu;
	pthread_cond_t work_cv, done_cv;
	struct pool_job *head, *tail;
	bool stopping;
	size_t n;
	pthread_t *threads;
};

static int job_state(struct pool_job *j)
{
	return atomic_load_explicit(&j->state, memory_order_acquire);
}

static void set_state(struct pool_job *j, int s)
{
	atomic_store_explicit(&j->state, s, memory_order_release);
}

/* Take the first queued job; under mu. */
static struct pool_job *take(struct pool *p)
{
	struct pool_job *j = p->head;
	if (j) {
		p->head = j->next;
		if (!p->head)
			p->tail = NULL;
		j->next = NULL;
		set_state(j, JOB_RUNNING);
	}
	return j;
}

static void *helper_main(void *arg)
{
	bgprio_enter();
	struct pool *p = arg;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct pool_job *j = take(p);
		if (!j) {
			if (p->stopping)
				break;
			pthread_cond_wait(&p->work_cv, &p->mu);
			continue;
		}
		pthread_mutex_unlock(&p->mu);
		j->fn(j->arg);
		pthread_mutex_lock(&p->mu);
		set_state(j, JOB_DONE);
		pthread_cond_broadcast(&p->done_cv);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct pool *pool_new(size_t n, struct cerr *err)
{
	struct pool *p = xcalloc(1, sizeof *p);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work_cv, NULL);
	pthread_cond_init(&p->done_cv, NULL);
	p->threads = xcalloc(n ? n : 1, sizeof *p->threads);
	for (size_t i = 0; i < n; i++) {
		int e = pthread_create(&p->threads[i], NULL, helper_main, p);
		if (e != 0) {
			cerr_set(err, CERR_IO, e, "cannot start a helper thread");
			pool_free(p);
			return NULL;
		}
		p->n++;
	}
	return p;
}

void pool_submit(struct pool *p, struct pool_job *job)
{
	job->next = NULL;
	set_state(job, JOB_QUEUED);
	pthread_mutex_lock(&p->mu);
	if (p->tail)
		p->tail->next = job;
	else
		p->head = job;
	p->tail = job;
	pthread_cond_signal(&p->work_cv);
	pthread_mutex_unlock(&p->mu);
}

void pool_wait(struct pool *p, struct pool_job *job)
{
	pthread_mutex_lock(&p->mu);
	if (job_state(job) == JOB_QUEUED) {
		/* Nobody took it: unlink it and run it here. */
		struct pool_job **pp = &p->head, *prev = NULL;
		while (*pp != job)
			prev = *pp, pp = &(*pp)->next;
		*pp = job->next;
		if (p->tail == job)
			p->tail = prev;
		job->next = NULL;
		set_state(job, JOB_RUNNING);
		pthread_mutex_unlock(&p->mu);
		job->fn(job->arg);
		set_state(job, JOB_DONE);
		return;
	}
	pthread_mutex_unlock(&p->mu);
	uint64_t until = clock_mono_ns() + POOL_POLL_NS;
	while (job_state(job) != JOB_DONE && clock_mono_ns() < until)
		;
	if (job_state(job) == JOB_DONE) {
		/* The helper sets DONE under mu and may still hold it: pass
		 * through mu so it is done with the job struct. */
		pthread_mutex_lock(&p->mu);
		pthread_mutex_unlock(&p->mu);
		return;
	}
	pthread_mutex_lock(&p->mu);
	while (job_state(job) != JOB_DONE)
		pthread_cond_wait(&p->done_cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

void pool_free(struct pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_cond_broadcast(&p->work_cv);
	pthread_mutex_unlock(&p->mu);
	for (size_t i = 0; i < p->n; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->work_cv);
	pthread_cond_destroy(&p->done_cv);
	pthread_mutex_destroy(&p->mu);
	free(p->threads);
	free(p);
}
