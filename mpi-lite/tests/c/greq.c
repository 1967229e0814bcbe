/* Generalized requests (MPI-3.1 §12.2): MPI_Grequest_start / Grequest_complete; the
 * query function fills the status (with MPI calls), the free function runs once when the
 * request is released (a cancel after completion still sees extra_state); wait,
 * test and the multiple-completion calls treat them like any request. Any rank count. */
#include "check.h"

static int queries, frees;

static int query(void *extra, MPI_Status *s) {
    queries++;
    int n = *(int *)extra;
    CHECK(MPI_Status_set_elements(s, MPI_INT, n) == MPI_SUCCESS); /* MPI inside: no lock held */
    MPI_Status_set_cancelled(s, 0);
    s->MPI_SOURCE = rank;
    s->MPI_TAG = 42;
    return MPI_SUCCESS;
}

static int release(void *extra) {
    (void)extra;
    frees++;
    return MPI_SUCCESS;
}

static int cancels, last_complete = -1;

static int cancel(void *extra, int complete) {
    (void)extra;
    cancels++;
    last_complete = complete;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    int five = 5, flag = -1;
    MPI_Request g;
    CHECK(MPI_Grequest_start(query, release, cancel, &five, &g) == MPI_SUCCESS);
    CHECK(g != MPI_REQUEST_NULL);
    MPI_Status s;
    CHECK(MPI_Test(&g, &flag, &s) == MPI_SUCCESS && flag == 0); /* pending */
    CHECK(MPI_Cancel(&g) == MPI_SUCCESS && cancels == 1 && last_complete == 0);
    CHECK(MPI_Grequest_complete(g) == MPI_SUCCESS && queries == 1 && frees == 0);
    CHECK(MPI_Cancel(&g) == MPI_SUCCESS && cancels == 2 && last_complete == 1);
    CHECK(MPI_Wait(&g, &s) == MPI_SUCCESS && g == MPI_REQUEST_NULL && frees == 1); /* freed by the wait */
    int n;
    MPI_Get_count(&s, MPI_INT, &n);
    CHECK(n == 5 && s.MPI_SOURCE == rank && s.MPI_TAG == 42);

    /* Mixed with a receive in Waitall. */
    int seven = 7, x = rank, y = -1;
    MPI_Request rs[2];
    MPI_Grequest_start(query, release, cancel, &seven, &rs[0]);
    MPI_Irecv(&y, 1, MPI_INT, (rank + size - 1) % size, 1, MPI_COMM_WORLD, &rs[1]);
    MPI_Send(&x, 1, MPI_INT, (rank + 1) % size, 1, MPI_COMM_WORLD);
    MPI_Grequest_complete(rs[0]);
    MPI_Status ss[2];
    CHECK(MPI_Waitall(2, rs, ss) == MPI_SUCCESS);
    MPI_Get_count(&ss[0], MPI_INT, &n);
    CHECK(n == 7 && y == (rank + size - 1) % size && frees == 2);

    /* Freed before completion: completing it later still runs the functions. */
    MPI_Grequest_start(query, release, cancel, &five, &g);
    MPI_Request keep = g;
    CHECK(MPI_Request_free(&g) == MPI_SUCCESS && g == MPI_REQUEST_NULL);
    CHECK(MPI_Grequest_complete(keep) == MPI_SUCCESS && frees == 3);
    int e;
    MPI_Error_class(MPI_Grequest_complete(keep), &e);
    CHECK(e == MPI_ERR_REQUEST);

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
