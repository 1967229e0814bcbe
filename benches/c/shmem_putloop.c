/*
 * shmem_putloop.c -- a fixed number of puts, for instruction counts (callgrind) of the put
 * path on both PEs; not part of the combined run (it measures no time).
 *
 *   PE 0: N x shmem_putmem(len bytes to PE 1's symmetric buffer), then shmem_quiet; PE 1
 *   waits in the barrier (serving the puts on the message path) and checks the data.
 *
 * Usage (instructions per put = (count with N) - (count with 0), divided by N):
 *   shmem/bin/skif-oshcc -O2 benches/c/shmem_putloop.c -o putloop
 *   SKIFSHMEM_RMA=off target/release/skifrun -n 2 -- \
 *       valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p ./putloop 200000 8
 *   callgrind_annotate --inclusive=yes /tmp/cg.<pid> | grep -E 'shmem_putmem|apply_putv'
 * Exit status: 0, or 1 on wrong data or bad arguments.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    int len = argc > 2 ? atoi(argv[2]) : 8;
    if (n < 0 || len < 1 || len > 65536) {
        fprintf(stderr, "usage: putloop [N [LEN (1..65536)]]\n");
        return 1;
    }
    shmem_init();
    unsigned char *dst = shmem_calloc(65536, 1);
    static unsigned char src[65536];
    for (int i = 0; i < len; i++) src[i] = (unsigned char)(i * 7 + 1);
    shmem_barrier_all();
    if (shmem_my_pe() == 0) {
        for (long i = 0; i < n; i++) shmem_putmem(dst, src, (size_t)len, 1);
        shmem_quiet();
    }
    shmem_barrier_all();
    int bad = 0;
    if (shmem_my_pe() == 1 && n > 0)
        for (int i = 0; i < len; i++) bad |= dst[i] != src[i];
    if (bad) fprintf(stderr, "putloop: PE 1 holds wrong data\n");
    shmem_free(dst);
    shmem_finalize();
    return bad;
}
