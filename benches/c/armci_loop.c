/*
 * armci_loop.c -- a bare loop of one ARMCI call, for instruction counts under callgrind
 * (docs/results-2026-11-28-armci): rank 0 calls OP N times on rank 1's ARMCI_Malloc
 * memory, rank 1 waits in ARMCI_Barrier. No timing, no checks beyond the call's status.
 *
 *   ARMCI_SHIM_LIBDIR=target/release armci-shim/bin/skif-armcicc -O2 benches/c/armci_loop.c -o armci_loop
 *   target/release/skifrun -n 2 -- valgrind --tool=callgrind --callgrind-out-file=cg.%p ./armci_loop put 20000
 *   callgrind_annotate --inclusive=yes cg.<pid> | grep 'capi/mod.rs:ARMCI_Put '   # the larger file: rank 0
 *
 * OP: put, get (8 bytes), rmw (ARMCI_FETCH_AND_ADD_LONG), acc (one double,
 * ARMCI_ACC_DBL), puts, gets (an n x n patch of doubles, rows 2n doubles apart on both
 * sides, as armci_bench.c's strided tests). Inclusive count of the call / N = instructions
 * per call.
 *
 * Usage: skifrun -n 2 ./armci_loop OP N [n (8)]
 */
#include <armci.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NMAX 128

int main(int argc, char **argv)
{
    ARMCI_Init_args(&argc, &argv);
    if (argc < 3) {
        fprintf(stderr, "usage: armci_loop put|get|rmw|acc|puts|gets N [n]\n");
        ARMCI_Error("armci_loop: bad arguments", 1);
    }
    const char *op = argv[1];
    long n = atol(argv[2]);
    int nd = argc > 3 ? atoi(argv[3]) : 8;
    if (nd < 1 || nd > NMAX) ARMCI_Error("armci_loop: n must be 1..128", 1);
    int me = armci_msg_me();
    void *base[2];
    if (armci_msg_nproc() != 2) ARMCI_Error("armci_loop: needs exactly 2 ranks", 1);
    ARMCI_Malloc(base, 2 * NMAX * NMAX * 8);
    static double src[2 * NMAX * NMAX], dst[2 * NMAX * NMAX];
    int stride[1] = {2 * nd * 8}, count[2] = {nd * 8, nd};
    double one = 1;
    long old;
    ARMCI_Barrier();
    if (me == 0) {
        for (long i = 0; i < n; i++) {
            int rc = 0;
            if (!strcmp(op, "put")) rc = ARMCI_Put(src, base[1], 8, 1);
            else if (!strcmp(op, "get")) rc = ARMCI_Get(base[1], dst, 8, 1);
            else if (!strcmp(op, "rmw")) rc = ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &old, base[1], 1, 1);
            else if (!strcmp(op, "acc")) rc = ARMCI_Acc(ARMCI_ACC_DBL, &one, src, base[1], 8, 1);
            else if (!strcmp(op, "puts")) rc = ARMCI_PutS(src, stride, base[1], stride, count, 1, 1);
            else if (!strcmp(op, "gets")) rc = ARMCI_GetS(base[1], stride, dst, stride, count, 1, 1);
            else ARMCI_Error("armci_loop: unknown OP", 1);
            if (rc != 0) ARMCI_Error("armci_loop: the call failed", 2);
        }
    }
    ARMCI_Barrier();
    ARMCI_Free(base[me]);
    ARMCI_Finalize();
    return 0;
}
