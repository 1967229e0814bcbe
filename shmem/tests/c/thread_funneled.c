/* shmem_init_thread(SHMEM_THREAD_FUNNELED): the level requested is the level provided
 * (programs compare the two and give up otherwise), shmem_query_thread says the same, and
 * a multithreaded program whose main thread alone calls the library works: worker
 * threads fill private buffers, the main thread puts them and reduces. */
#include <pthread.h>
#include <shmem.h>
#include "check.h"

#define T 3
#define N 1000
static long part[T][N];
static long sums[T], total[T];

static void *fill(void *arg)
{
    long t = (long)arg;
    for (int i = 0; i < N; i++) part[t][i] = t * N + i;
    return NULL;
}

int main(void)
{
    int provided = -1;
    CHECK(shmem_init_thread(SHMEM_THREAD_FUNNELED, &provided) == 0);
    CHECK(provided == SHMEM_THREAD_FUNNELED);
    provided = -1;
    shmem_query_thread(&provided);
    CHECK(provided == SHMEM_THREAD_FUNNELED);
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *dst = shmem_calloc(T * N, sizeof(long));
    CHECK(dst != NULL);
    pthread_t th[T];
    for (long t = 0; t < T; t++) CHECK(pthread_create(&th[t], NULL, fill, (void *)t) == 0);
    for (int t = 0; t < T; t++) CHECK(pthread_join(th[t], NULL) == 0);
    for (int t = 0; t < T; t++) shmem_long_put(dst + t * N, part[t], N, (me + 1) % n);
    shmem_barrier_all();
    for (int i = 0; i < T * N; i++) CHECK(dst[i] == i);
    for (int t = 0; t < T; t++) sums[t] = dst[t * N + N - 1];
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, total, sums, T) == 0);
    for (int t = 0; t < T; t++) CHECK(total[t] == (long)n * (t * N + N - 1));
    shmem_free(dst);
    shmem_finalize();
    return 0;
}
