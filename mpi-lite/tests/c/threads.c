/* Threads under MPI_THREAD_SERIALIZED (issue 16 defect 6): below MPI_THREAD_MULTIPLE one
 * lock per call serializes calls (and a blocking call keeps it while it waits); see mt.c
 * for MPI_THREAD_MULTIPLE.
 *   (no argument)  correct use: two threads take turns (a mutex of the program's around
 *                  each call, as SERIALIZED requires): every call succeeds.
 *   "overlap"      erroneous use: a thread blocks in MPI_Recv from this rank while the main
 *                  thread calls the MPI_Send that would match it. This used to deadlock
 *                  silently (the receive holds the lock, the send waits for it); now the send
 *                  fails at once naming both calls (MPI_ERRORS_ARE_FATAL: the job aborts).
 *   "return"       the same under MPI_ERRORS_RETURN: the send returns MPI_ERR_OTHER.
 *   "funneled"     MPI_THREAD_FUNNELED (the library binds to the main thread: no atomic
 *                  read-modify-write per call): another thread's calls are refused with
 *                  MPI_ERR_OTHER (MPI_ERRORS_RETURN), even when the main thread is outside
 *                  MPI, and the main thread's calls go on working. The one-sided short cuts
 *                  too (put, get, the atomics and flush inside a lock epoch the main thread
 *                  opened on its own window): refused, naming the rule, memory untouched.
 *   "funneled fatal"  the same under MPI_ERRORS_ARE_FATAL: the job ends with a message
 *                  naming the rule ("funneled fatal put": at the first refused MPI_Put). */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int got = -1;

static void *receiver(void *arg) {
    (void)arg;
    MPI_Recv(&got, 1, MPI_INT, rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return NULL;
}

#define NREFUSED 9
static int refused[NREFUSED];
static MPI_Win win = MPI_WIN_NULL;

/* Under FUNNELED, from a thread that is not the main one: every call is refused, the
 * one-sided short cuts on the window the main thread locked (rank's own) included. */
static int put_first; /* "funneled fatal put": the one-sided short cut fails first */

static void *outsider(void *arg) {
    (void)arg;
    int x = 1;
    if (put_first) MPI_Put(&x, 1, MPI_INT, rank, 0, 1, MPI_INT, win);
    refused[0] = MPI_Send(&x, 1, MPI_INT, rank, 9, MPI_COMM_WORLD);
    refused[1] = MPI_Barrier(MPI_COMM_WORLD);
    int r = -1;
    refused[2] = MPI_Comm_rank(MPI_COMM_WORLD, &r);
    long v = 7, old = 0, cmp = 0, got = 0;
    refused[3] = MPI_Put(&v, 1, MPI_LONG, rank, 0, 1, MPI_LONG, win);
    refused[4] = MPI_Get(&got, 1, MPI_LONG, rank, 0, 1, MPI_LONG, win);
    refused[5] = MPI_Fetch_and_op(&v, &old, MPI_LONG, rank, 1, MPI_SUM, win);
    refused[6] = MPI_Compare_and_swap(&v, &cmp, &old, MPI_LONG, rank, 2, win);
    refused[7] = MPI_Accumulate(&v, 1, MPI_LONG, rank, 3, 1, MPI_LONG, MPI_SUM, win);
    refused[8] = MPI_Win_flush(rank, win);
    return NULL;
}

static void *taker(void *arg) {
    int id = *(int *)arg;
    for (int i = 0; i < 2000; i++) {
        pthread_mutex_lock(&mu);
        int x = id * 100000 + i, y = -1;
        MPI_Sendrecv(&x, 1, MPI_INT, rank, id, &y, 1, MPI_INT, rank, id, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        pthread_mutex_unlock(&mu);
        if (y != x) {
            fprintf(stderr, "threads: rank %d thread %d got %d, sent %d\n", rank, id, y, x);
            _exit(3);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided = -1;
    const char *mode = argc > 1 ? argv[1] : "";
    int level = strcmp(mode, "funneled") == 0 ? MPI_THREAD_FUNNELED : MPI_THREAD_SERIALIZED;
    MPI_Init_thread(&argc, &argv, level, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == level);
    if (level == MPI_THREAD_FUNNELED) {
        long *mem = NULL;
        CHECK(MPI_Win_allocate(4 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD,
                               &mem, &win) == MPI_SUCCESS);
        put_first = argc > 3 && strcmp(argv[3], "put") == 0;
        if (argc < 3) {
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
            MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
        }
        for (int i = 0; i < 4; i++) mem[i] = 0;
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win) == MPI_SUCCESS);
        /* the main thread's short cuts work, and cache the window for it */
        long one = 1;
        CHECK(MPI_Put(&one, 1, MPI_LONG, rank, 0, 1, MPI_LONG, win) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(rank, win) == MPI_SUCCESS);
        pthread_t t;
        CHECK(pthread_create(&t, NULL, outsider, NULL) == 0);
        pthread_join(t, NULL);
        for (int i = 0; i < NREFUSED; i++) {
            int cls = -1;
            MPI_Error_class(refused[i], &cls);
            if (cls != MPI_ERR_OTHER)
                fprintf(stderr, "threads: rank %d refused[%d] class %d\n", rank, i, cls);
            CHECK(cls == MPI_ERR_OTHER);
        }
        CHECK(MPI_Win_flush(rank, win) == MPI_SUCCESS);
        CHECK(mem[0] == 1 && mem[1] == 0 && mem[2] == 0 && mem[3] == 0);
        CHECK(MPI_Fetch_and_op(&one, &one, MPI_LONG, rank, 1, MPI_SUM, win) == MPI_SUCCESS);
        CHECK(one == 0);
        CHECK(MPI_Win_unlock(rank, win) == MPI_SUCCESS);
        CHECK(mem[1] == 1);
        CHECK(MPI_Win_free(&win) == MPI_SUCCESS);
        /* The main thread's calls work, and nothing was sent by the refused MPI_Send. */
        int x = rank + 10, y = -1, flag = 1;
        MPI_Iprobe(MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        CHECK(flag == 0);
        CHECK(MPI_Sendrecv(&x, 1, MPI_INT, rank, 3, &y, 1, MPI_INT, rank, 3, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE) == MPI_SUCCESS);
        CHECK(y == x);
        int main_flag = 0;
        MPI_Is_thread_main(&main_flag);
        CHECK(main_flag);
        MPI_Barrier(MPI_COMM_WORLD);
        printf("threads: rank %d funneled ok\n", rank);
        MPI_Finalize();
        return 0;
    }
    if (mode[0] == '\0') {
        pthread_t t[2];
        int ids[2] = {1, 2};
        for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, taker, &ids[i]) == 0);
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        printf("threads: rank %d ok\n", rank);
        MPI_Finalize();
        return 0;
    }
    if (strcmp(mode, "return") == 0) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, receiver, NULL) == 0);
    struct timespec d = {0, 200 * 1000 * 1000};
    nanosleep(&d, NULL); /* the receiver is inside MPI_Recv by now */
    int x = 42;
    int rc = MPI_Send(&x, 1, MPI_INT, rank, 7, MPI_COMM_WORLD);
    printf("threads: rank %d MPI_Send returned %d\n", rank, rc);
    fflush(stdout);
    /* The receiver can never complete: leave without MPI_Finalize. */
    _exit(rc == MPI_ERR_OTHER ? 0 : 4);
}
