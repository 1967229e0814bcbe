/* Matched probe (MPI-3.1 §3.8.2): Mprobe/Improbe take a message out of matching (a later
 * Iprobe no longer sees it), Mrecv/Imrecv receive it, eager and rendezvous, in MPI's order;
 * MPI_PROC_NULL gives MPI_MESSAGE_NO_PROC; MPI_MESSAGE_NULL is an error. */
#include "check.h"
#include <stdlib.h>

#define BIG 100000 /* ints: above the eager limit (rendezvous) */

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int small[8], *big = malloc(BIG * sizeof(int)), *got = malloc(BIG * sizeof(int));
    for (int i = 0; i < 8; i++) small[i] = rank * 100 + i;
    for (int i = 0; i < BIG; i++) big[i] = rank + i;
    MPI_Request s[4];
    int first = 1, second = 2;
    MPI_Isend(small, 8, MPI_INT, to, 1, MPI_COMM_WORLD, &s[0]);
    MPI_Isend(big, BIG, MPI_INT, to, 2, MPI_COMM_WORLD, &s[1]);
    MPI_Isend(&first, 1, MPI_INT, to, 3, MPI_COMM_WORLD, &s[2]);
    MPI_Isend(&second, 1, MPI_INT, to, 3, MPI_COMM_WORLD, &s[3]);

    /* The rendezvous message first, by tag, from any source. */
    MPI_Message m = MPI_MESSAGE_NULL;
    MPI_Status st;
    CHECK(MPI_Mprobe(MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &m, &st) == MPI_SUCCESS);
    CHECK(m != MPI_MESSAGE_NULL && m != MPI_MESSAGE_NO_PROC);
    CHECK(st.MPI_SOURCE == from && st.MPI_TAG == 2);
    int n = -1;
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == BIG);
    CHECK(MPI_Message_f2c(MPI_Message_c2f(m)) == m);
    CHECK(MPI_Mrecv(got, n, MPI_INT, &m, &st) == MPI_SUCCESS);
    CHECK(m == MPI_MESSAGE_NULL && st.MPI_SOURCE == from && st.MPI_TAG == 2);
    for (int i = 0; i < BIG; i++) CHECK(got[i] == from + i);

    /* The small one, with the nonblocking forms. */
    int flag = 0;
    while (!flag) CHECK(MPI_Improbe(from, 1, MPI_COMM_WORLD, &flag, &m, &st) == MPI_SUCCESS);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == 8);
    MPI_Request r;
    CHECK(MPI_Imrecv(got, 8, MPI_INT, &m, &r) == MPI_SUCCESS && m == MPI_MESSAGE_NULL);
    CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS && st.MPI_TAG == 1);
    for (int i = 0; i < 8; i++) CHECK(got[i] == from * 100 + i);

    /* Two messages with one envelope: the probe takes the first, and takes it out of
     * matching — the next Iprobe and receive see the second. */
    /* A call that returns one status leaves its MPI_ERROR field alone (§3.2.5). */
    MPI_Message m3;
    st.MPI_ERROR = MPI_ERR_DIMS;
    CHECK(MPI_Mprobe(from, 3, MPI_COMM_WORLD, &m3, &st) == MPI_SUCCESS);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS);
    flag = 0;
    while (!flag) MPI_Iprobe(from, 3, MPI_COMM_WORLD, &flag, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS);
    int x = 0;
    MPI_Recv(&x, 1, MPI_INT, from, 3, MPI_COMM_WORLD, &st);
    CHECK(x == 2 && st.MPI_ERROR == MPI_ERR_DIMS);
    CHECK(MPI_Mrecv(&x, 1, MPI_INT, &m3, &st) == MPI_SUCCESS && x == 1);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS);
    MPI_Iprobe(from, 3, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag == 0);
    MPI_Waitall(4, s, MPI_STATUSES_IGNORE);

    /* MPI_PROC_NULL and the null message. */
    CHECK(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &m, &st) == MPI_SUCCESS);
    CHECK(m == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL);
    CHECK(MPI_Mrecv(&x, 1, MPI_INT, &m, &st) == MPI_SUCCESS);
    CHECK(m == MPI_MESSAGE_NULL && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
    CHECK(MPI_Improbe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &m, &st) == MPI_SUCCESS);
    CHECK(flag == 1 && m == MPI_MESSAGE_NO_PROC);
    CHECK(MPI_Imrecv(&x, 1, MPI_INT, &m, &r) == MPI_SUCCESS);
    CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS && st.MPI_SOURCE == MPI_PROC_NULL);
    m = MPI_MESSAGE_NULL;
    CHECK(MPI_Mrecv(&x, 1, MPI_INT, &m, &st) == MPI_ERR_REQUEST);
    /* Nothing else pending. */
    CHECK(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m, &st) == MPI_SUCCESS && !flag);

    MPI_Barrier(MPI_COMM_WORLD);
    free(big);
    free(got);
    MPI_Finalize();
    return 0;
}
