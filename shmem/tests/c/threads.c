/* Several threads of each PE at once (SHMEM_THREAD_MULTIPLE): runs of small puts of 1..400
 * bytes (one aggregation buffer per target on the message path, shared by the threads),
 * quiets among them, non-fetching atomics, each thread to its own region of the right
 * neighbour; then a barrier and a check of every byte and of the counter. */
#include <pthread.h>
#include <shmem.h>
#include <shmemx.h>
#include <string.h>
#include <unistd.h>
#include "check.h"

#define T 4
#define PER (48 * 1024)
static unsigned char *buf; /* symmetric, T * PER */
static long *cnt;          /* symmetric */
static int me, right, left;

static unsigned char pattern(size_t i, int pe) { return (unsigned char)(i * 31 + pe * 7 + 1); }

static void *work(void *arg)
{
    int t = (int)(long)arg;
    unsigned char src[400];
    size_t at = 0, len = (size_t)t + 1;
    int puts = 0;
    while (at < PER) {
        size_t k = at + len > PER ? PER - at : len;
        size_t base = (size_t)t * PER + at;
        for (size_t i = 0; i < k; i++) src[i] = pattern(base + i, me);
        shmem_putmem(buf + base, src, k, right);
        if (++puts % 97 == 0) shmem_quiet();
        if (puts % 13 == 0) shmem_long_atomic_add(cnt, 1, right);
        at += k;
        len = len % 400 + 1;
    }
    return (void *)(long)(puts / 13);
}

/* §9.2: a thread blocked in a call does not prevent the other threads' calls. PE 0's
 * main thread enters a barrier while its helper waits for a flag from PE 1 and then puts
 * what PE 1 waits for before it can enter the same barrier. The helper's wait must not
 * queue behind the barrier (it did: its progress poll took the endpoint's lock). */
static long flag, value;
static void *helper(void *arg)
{
    (void)arg;
    shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
    shmem_long_atomic_set(&value, 42, 1);
    return NULL;
}
static void blocked_thread_scenario(int n)
{
    if (n < 2) return;
    if (me == 0) {
        pthread_t h;
        CHECK(pthread_create(&h, NULL, helper, NULL) == 0);
        shmem_barrier_all();
        CHECK(pthread_join(h, NULL) == 0);
    } else if (me == 1) {
        usleep(100 * 1000); /* PE 0's helper is well into its wait */
        shmem_long_atomic_set(&flag, 1, 0);
        shmem_long_wait_until(&value, SHMEM_CMP_EQ, 42);
        shmem_barrier_all();
    } else {
        shmem_barrier_all();
    }
}

int main(void)
{
    int provided = -1;
    CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0);
    /* the message path serves SERIALIZED (see blocked_thread_scenario); concurrent RMA
     * calls are still safe there, which the rest of the program checks */
    CHECK(provided == (shmemx_direct_access() == 1 ? SHMEM_THREAD_MULTIPLE : SHMEM_THREAD_SERIALIZED));
    me = shmem_my_pe();
    int n = shmem_n_pes();
    right = (me + 1) % n;
    left = (me + n - 1) % n;
    buf = shmem_calloc(T * PER, 1);
    cnt = shmem_calloc(1, sizeof(long));
    CHECK(buf != NULL && cnt != NULL);
    shmem_barrier_all();
    pthread_t th[T];
    for (long t = 0; t < T; t++) CHECK(pthread_create(&th[t], NULL, work, (void *)t) == 0);
    long adds = 0;
    for (int t = 0; t < T; t++) {
        void *r;
        CHECK(pthread_join(th[t], &r) == 0);
        adds += (long)r;
    }
    shmem_barrier_all();
    for (size_t i = 0; i < (size_t)T * PER; i++) CHECK(buf[i] == pattern(i, left));
    /* every PE runs the same threads, so the left neighbour made as many adds */
    CHECK(*cnt == adds);
    shmem_barrier_all();
    if (provided == SHMEM_THREAD_MULTIPLE) blocked_thread_scenario(n);
    shmem_barrier_all();
    shmem_free(cnt);
    shmem_free(buf);
    shmem_finalize();
    return 0;
}
