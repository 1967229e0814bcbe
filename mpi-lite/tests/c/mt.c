/* MPI_THREAD_MULTIPLE (issue 17): threads of every rank call MPI at once.
 *   pairs     T threads × pairs: thread t exchanges checked messages with the same thread
 *             of the partner rank on its own communicator (a dup of world), eager and
 *             rendezvous sizes, blocking and nonblocking;
 *   shared    the same on MPI_COMM_WORLD itself, each thread's tag its own;
 *   blocked   a thread blocks in MPI_Recv from this rank while another thread exchanges
 *             messages with a neighbour, then sends it what it waits for (the blocked
 *             receive must neither stop the others nor miss its message);
 *   anysource on rank 0 thread t receives from every other rank with MPI_ANY_SOURCE and
 *             tag t while the other ranks' threads send to it;
 *   coll      every thread runs collectives (allreduce, bcast, barrier, allgather) on its
 *             own dup of world, at once;
 *   handoff   a request posted by one thread is waited for (or tested) by another.
 * Every value is checked; any failure aborts the job. Each part ends with a barrier. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define T 3
#define ROUNDS 200
#define BIG 20000 /* ints: above the eager limit (rendezvous) */

static MPI_Comm comms[T];
static int partner;

static void fill(int *b, int n, int seed) {
    for (int i = 0; i < n; i++) b[i] = seed * 7919 + i;
}
static void expect(const int *b, int n, int seed) {
    for (int i = 0; i < n; i++) CHECK(b[i] == seed * 7919 + i);
}

/* Messages of thread t with the partner on `comm` with `tag`: a blocking exchange, a
 * nonblocking window, a rendezvous one. */
static void exchange(MPI_Comm comm, int t, int tag) {
    int *out = malloc(BIG * sizeof(int)), *in = malloc(BIG * sizeof(int));
    CHECK(out && in);
    for (int r = 0; r < ROUNDS; r++) {
        int n = 1 + (r * 13 + t) % 64;
        int seed = (rank * 1000 + t) * 1000 + r;
        fill(out, n, seed);
        if (rank <= partner) {
            CHECK(MPI_Send(out, n, MPI_INT, partner, tag, comm) == MPI_SUCCESS);
            MPI_Status st;
            CHECK(MPI_Recv(in, 64, MPI_INT, partner, tag, comm, &st) == MPI_SUCCESS);
            int got;
            MPI_Get_count(&st, MPI_INT, &got);
            CHECK(got == n && st.MPI_SOURCE == partner && st.MPI_TAG == tag);
        } else {
            MPI_Status st;
            CHECK(MPI_Recv(in, 64, MPI_INT, partner, tag, comm, &st) == MPI_SUCCESS);
            int got;
            MPI_Get_count(&st, MPI_INT, &got);
            CHECK(got == n && st.MPI_TAG == tag);
            CHECK(MPI_Send(out, n, MPI_INT, partner, tag, comm) == MPI_SUCCESS);
        }
        expect(in, n, (partner * 1000 + t) * 1000 + r);
    }
    /* A window of 8 each way. */
    MPI_Request rq[16];
    int win[8], wout[8];
    for (int i = 0; i < 8; i++) {
        wout[i] = rank * 100 + t * 10 + i;
        CHECK(MPI_Irecv(&win[i], 1, MPI_INT, partner, tag, comm, &rq[i]) == MPI_SUCCESS);
    }
    for (int i = 0; i < 8; i++)
        CHECK(MPI_Isend(&wout[i], 1, MPI_INT, partner, tag, comm, &rq[8 + i]) == MPI_SUCCESS);
    CHECK(MPI_Waitall(16, rq, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
    for (int i = 0; i < 8; i++) CHECK(win[i] == partner * 100 + t * 10 + i);
    /* Rendezvous both ways at once. */
    fill(out, BIG, rank * 10 + t);
    memset(in, 0, BIG * sizeof(int));
    CHECK(MPI_Sendrecv(out, BIG, MPI_INT, partner, tag, in, BIG, MPI_INT, partner, tag, comm,
                       MPI_STATUS_IGNORE) == MPI_SUCCESS);
    expect(in, BIG, partner * 10 + t);
    free(out);
    free(in);
}

static void *pairs_thread(void *arg) {
    int t = *(int *)arg;
    exchange(comms[t], t, 5);
    return NULL;
}

static void *shared_thread(void *arg) {
    int t = *(int *)arg;
    exchange(MPI_COMM_WORLD, t, 100 + t);
    return NULL;
}

static int blocked_got = -1;
static void *blocked_receiver(void *arg) {
    (void)arg;
    MPI_Status st;
    CHECK(MPI_Recv(&blocked_got, 1, MPI_INT, rank, 77, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
    CHECK(st.MPI_SOURCE == rank && st.MPI_TAG == 77);
    return NULL;
}

static void *anysource_thread(void *arg) {
    int t = *(int *)arg;
    if (rank == 0) {
        int seen[64] = {0};
        for (int k = 0; k < (size - 1) * 20; k++) {
            int v;
            MPI_Status st;
            CHECK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, t, MPI_COMM_WORLD, &st) ==
                  MPI_SUCCESS);
            CHECK(st.MPI_TAG == t && st.MPI_SOURCE > 0 && st.MPI_SOURCE < size);
            /* Per sender, in order (non-overtaking). */
            CHECK(v == st.MPI_SOURCE * 1000 + seen[st.MPI_SOURCE]);
            seen[st.MPI_SOURCE]++;
        }
        for (int s = 1; s < size; s++) CHECK(seen[s] == 20);
    } else {
        for (int k = 0; k < 20; k++) {
            int v = rank * 1000 + k;
            CHECK(MPI_Send(&v, 1, MPI_INT, 0, t, MPI_COMM_WORLD) == MPI_SUCCESS);
        }
    }
    return NULL;
}

static void *coll_thread(void *arg) {
    int t = *(int *)arg;
    for (int r = 0; r < 50; r++) {
        long v = rank + t * 100 + r, sum = 0;
        CHECK(MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, comms[t]) == MPI_SUCCESS);
        CHECK(sum == (long)size * (size - 1) / 2 + (long)size * (t * 100 + r));
        int b = rank == r % size ? t * 1000 + r : -1;
        CHECK(MPI_Bcast(&b, 1, MPI_INT, r % size, comms[t]) == MPI_SUCCESS);
        CHECK(b == t * 1000 + r);
        CHECK(MPI_Barrier(comms[t]) == MPI_SUCCESS);
        int all[64];
        int mine = rank * 10 + t;
        CHECK(MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, comms[t]) == MPI_SUCCESS);
        for (int s = 0; s < size; s++) CHECK(all[s] == s * 10 + t);
    }
    return NULL;
}

/* Communicators created from every thread at once, each on its own parent (MPICH's
 * threads/comm tests hung: the context agreement held a process-wide lock across its
 * exchange); each new one works and has a context of its own. */
static void *create_thread(void *arg) {
    int t = *(int *)arg;
    for (int r = 0; r < 20; r++) {
        MPI_Comm d, s;
        CHECK(MPI_Comm_dup(comms[t], &d) == MPI_SUCCESS);
        CHECK(MPI_Comm_split(d, rank % 2, rank, &s) == MPI_SUCCESS);
        long v = 1, n = 0;
        CHECK(MPI_Allreduce(&v, &n, 1, MPI_LONG, MPI_SUM, d) == MPI_SUCCESS && n == size);
        CHECK(MPI_Allreduce(&v, &n, 1, MPI_LONG, MPI_SUM, s) == MPI_SUCCESS && n == (rank % 2 ? size / 2 : (size + 1) / 2));
        CHECK(MPI_Comm_free(&s) == MPI_SUCCESS && MPI_Comm_free(&d) == MPI_SUCCESS);
    }
    return NULL;
}

/* Handoff: the main thread posts, a helper waits or tests. */
static MPI_Request handed;
static int handed_val = -1, handoff_test;
static void *handoff_thread(void *arg) {
    (void)arg;
    if (handoff_test) {
        int flag = 0;
        while (!flag) CHECK(MPI_Test(&handed, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    } else {
        CHECK(MPI_Wait(&handed, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    }
    CHECK(handed == MPI_REQUEST_NULL);
    return NULL;
}

static void run_threads(void *(*f)(void *)) {
    pthread_t th[T];
    int ids[T];
    for (int t = 0; t < T; t++) {
        ids[t] = t;
        CHECK(pthread_create(&th[t], NULL, f, &ids[t]) == 0);
    }
    for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
    CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS);
}

int main(int argc, char **argv) {
    int provided = -1;
    CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == MPI_THREAD_MULTIPLE);
    int q = -1;
    MPI_Query_thread(&q);
    CHECK(q == MPI_THREAD_MULTIPLE);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int t = 0; t < T; t++) CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]) == MPI_SUCCESS);
    /* Pairs (0,1), (2,3), …; an odd last rank pairs with itself. */
    partner = (rank ^ 1) < size ? rank ^ 1 : rank;

    run_threads(pairs_thread);
    run_threads(shared_thread);

    /* blocked: thread A waits in MPI_Recv from this rank; meanwhile this thread exchanges
     * with the partner (its progress must go on), then sends A its message. */
    pthread_t a;
    CHECK(pthread_create(&a, NULL, blocked_receiver, NULL) == 0);
    exchange(MPI_COMM_WORLD, T, 300);
    int x = 4242 + rank;
    CHECK(MPI_Send(&x, 1, MPI_INT, rank, 77, MPI_COMM_WORLD) == MPI_SUCCESS);
    pthread_join(a, NULL);
    CHECK(blocked_got == 4242 + rank);
    CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS);

    run_threads(anysource_thread);
    run_threads(coll_thread);
    run_threads(create_thread);

    for (handoff_test = 0; handoff_test < 2; handoff_test++) {
        int v = 9000 + rank + handoff_test;
        CHECK(MPI_Irecv(&handed_val, 1, MPI_INT, partner, 9, MPI_COMM_WORLD, &handed) ==
              MPI_SUCCESS);
        pthread_t h;
        CHECK(pthread_create(&h, NULL, handoff_thread, NULL) == 0);
        CHECK(MPI_Send(&v, 1, MPI_INT, partner, 9, MPI_COMM_WORLD) == MPI_SUCCESS);
        pthread_join(h, NULL);
        CHECK(handed_val == 9000 + partner + handoff_test);
    }

    for (int t = 0; t < T; t++) CHECK(MPI_Comm_free(&comms[t]) == MPI_SUCCESS);
    CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS);
    printf("mt: rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
