/* Spinning calls must make progress on the message path (issue 16: SKIFSHMEM_RMA=off and
 * --driver fpga-model), where a PE's data changes only when that PE serves requests:
 * every spinning or polling call (test_lock, atomic fetch and compare-swap on its own
 * memory, g, signal_fetch, test_any) must serve them, or a PE holding or releasing a
 * lock never lets the others see it. Also passes on the direct path. Each scenario ends
 * with checked values; a regression hangs and the launcher's time limit fails it.
 * argv[1] selects scenarios ("13": 1 and 3). */
#include <pthread.h>
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

#define ITERS 50
#define THREADS 3

static long lock1, lock2, lock3;       /* locks (home: PE 0) */
static long counter;                   /* PE 0's copy, changed inside critical sections */
static long token;                     /* the ring's token */
static uint64_t sig;                   /* a signal word */
static long flags[4];                  /* test_any targets */
static long payload;

/* a critical section: read-modify-write of PE 0's counter by get and put, which only
 * stays exact if the lock excludes every other holder */
static void bump(void) {
    long v = shmem_long_g(&counter, 0);
    shmem_long_p(&counter, v + 1, 0);
    shmem_quiet();
}

static void expect_counter(long want) {
    shmem_barrier_all();
    CHECK(shmem_long_g(&counter, 0) == want);
    shmem_barrier_all();
    if (shmem_my_pe() == 0) counter = 0;
    shmem_barrier_all();
}

static void *thread_main(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        shmem_set_lock(&lock3);
        bump();
        shmem_clear_lock(&lock3);
    }
    return NULL;
}

/* 1. shmem_test_lock spins (PE 0, the lock's home, too), first while the last PE holds
 * the lock and needs PE 0 to serve its critical section and its release */
static void test_lock_spins(int me, int n) {
    if (me == n - 1) shmem_set_lock(&lock1);
    shmem_barrier_all();
    if (me == n - 1) {
        bump();
        shmem_clear_lock(&lock1);
    }
    for (int i = 0; i < ITERS; i++) {
        while (shmem_test_lock(&lock1)) {
        }
        bump();
        shmem_clear_lock(&lock1);
    }
    expect_counter((long)ITERS * n + 1);
}

/* 2. a lock built on compare-and-swap, released by an atomic swap; first held by the
 * last PE while PE 0 spins */
static void cswap_lock(int me, int n) {
    if (me == n - 1) CHECK(shmem_long_atomic_compare_swap(&lock2, 0, me + 1, 0) == 0);
    shmem_barrier_all();
    if (me == n - 1) {
        bump();
        CHECK(shmem_long_atomic_swap(&lock2, 0, 0) == me + 1);
    }
    for (int i = 0; i < ITERS; i++) {
        while (shmem_long_atomic_compare_swap(&lock2, 0, me + 1, 0) != 0) {
        }
        bump();
        CHECK(shmem_long_atomic_swap(&lock2, 0, 0) == me + 1);
    }
    expect_counter((long)ITERS * n + 1);
}

/* 3. a token ring of atomic set + fetch loops on one's own word */
static void set_fetch_ring(int me, int n) {
    for (long round = 1; round <= ITERS; round++) {
        if (me == 0) shmem_long_atomic_set(&token, round, n > 1 ? 1 : 0);
        while (shmem_long_atomic_fetch(&token, me) != round) {
        }
        if (me != 0) shmem_long_atomic_set(&token, round, (me + 1) % n);
    }
    shmem_barrier_all();
}

/* 4. polling one's own variables with signal_fetch, test_any and g */
static void own_polls(int me, int n) {
    if (me == 0) {
        for (int pe = 1; pe < n; pe++) {
            long v = 42;
            shmem_putmem_signal(&payload, &v, sizeof v, &sig, 1, SHMEM_SIGNAL_SET, pe);
            shmem_long_p(&flags[2], 1, pe);
        }
        shmem_quiet();
        if (n > 1)
            while (shmem_long_g(&flags[0], 0) != 7) {
            }
    } else {
        while (shmem_signal_fetch(&sig) != 1) {
        }
        CHECK(payload == 42);
        while (shmem_long_test_any(flags, 4, NULL, SHMEM_CMP_EQ, 1) != 2) {
        }
        shmem_long_p(&flags[0], 7, 0);
    }
    shmem_barrier_all();
}

/* 5. the same lock taken by several threads of each PE (they call nothing else
 * concurrently, so this also holds where the PE provides only SERIALIZED) */
static void thread_locks(int me, int n) {
    (void)me;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, thread_main, NULL) == 0);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    expect_counter((long)ITERS * THREADS * n);
}

int main(int argc, char **argv) {
    /* argv[1]: the scenarios to run (default all: "12345") */
    const char *run = argc > 1 ? argv[1] : "12345";
    void (*scenario[])(int, int) = {test_lock_spins, cswap_lock, set_fetch_ring, own_polls,
                                    thread_locks};
    int provided;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    int me = shmem_my_pe(), n = shmem_n_pes();
    for (int k = 0; k < 5; k++)
        if (strchr(run, '1' + k)) scenario[k](me, n);
    shmem_finalize();
    return 0;
}
