/* Communicator breadth (MPI-3.1 §6.3-6.4, ch. 10): Comm_create_group (collective over the
 * group only), Comm_idup, Comm_dup_with_info, Comm_set/get_info, Group_range_incl/excl,
 * Comm_disconnect; dynamic processes fail at once with MPI_ERR_SPAWN, Comm_get_parent
 * gives MPI_COMM_NULL. */
#include "check.h"
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);

    /* Group ranges: the even ranks, and all but rank 0. */
    int even[1][3] = {{0, size - 1, 2}}, first[1][3] = {{0, 0, 1}};
    MPI_Group ge, gx;
    CHECK(MPI_Group_range_incl(world, 1, even, &ge) == MPI_SUCCESS);
    CHECK(MPI_Group_range_excl(world, 1, first, &gx) == MPI_SUCCESS);
    int n = -1, r = -1;
    MPI_Group_size(ge, &n);
    CHECK(n == (size + 1) / 2);
    MPI_Group_size(gx, &n);
    CHECK(n == size - 1);
    MPI_Group_rank(gx, &r);
    CHECK(r == (rank == 0 ? MPI_UNDEFINED : rank - 1));
    int bad[1][3] = {{0, size, 1}}, zero[1][3] = {{0, 0, 0}};
    CHECK(MPI_Group_range_incl(world, 1, bad, &gx) == MPI_ERR_RANK);
    CHECK(MPI_Group_range_incl(world, 1, zero, &gx) == MPI_ERR_ARG);

    /* Comm_create_group: only the even ranks call it. */
    if (rank % 2 == 0) {
        MPI_Comm ce;
        CHECK(MPI_Comm_create_group(MPI_COMM_WORLD, ge, 5, &ce) == MPI_SUCCESS);
        CHECK(ce != MPI_COMM_NULL);
        MPI_Comm_size(ce, &n);
        MPI_Comm_rank(ce, &r);
        CHECK(n == (size + 1) / 2 && r == rank / 2);
        int v = rank, s = 0;
        MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, ce);
        int want = 0;
        for (int j = 0; j < size; j += 2) want += j;
        CHECK(s == want);
        MPI_Comm_free(&ce);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* Successive subsets, each created by its members only, with one tag: a process
     * has a different rank in each, and no agreement takes another's messages (a
     * subset's own numbering did: MPICH's comm_group_rand hung). */
    for (int it = 0; it < 40; it++) {
        int members[64], cnt = 0, in = 0;
        for (int i = 0; i < size; i++)
            if (((it * 7 + i * 3) ^ (it >> 1)) % 3 != 0) {
                in |= i == rank;
                members[cnt++] = i;
            }
        if (!in) continue;
        MPI_Group gs;
        MPI_Comm cs;
        MPI_Group_incl(world, cnt, members, &gs);
        CHECK(MPI_Comm_create_group(MPI_COMM_WORLD, gs, 0, &cs) == MPI_SUCCESS);
        int v = 1, tot = 0;
        MPI_Allreduce(&v, &tot, 1, MPI_INT, MPI_SUM, cs);
        CHECK(tot == cnt);
        MPI_Comm_free(&cs);
        MPI_Group_free(&gs);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* idup, dup_with_info, set/get_info, disconnect. */
    MPI_Comm d;
    MPI_Request q;
    CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &d, &q) == MPI_SUCCESS);
    CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS && q == MPI_REQUEST_NULL);
    int v = 1, s = 0;
    MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, d);
    CHECK(s == size);
    MPI_Info in, out;
    MPI_Info_create(&in);
    MPI_Info_set(in, "mpi_assert_no_any_tag", "true");
    MPI_Comm e;
    CHECK(MPI_Comm_dup_with_info(d, in, &e) == MPI_SUCCESS);
    CHECK(MPI_Comm_get_info(e, &out) == MPI_SUCCESS);
    char val[64];
    int flag = 0;
    MPI_Info_get(out, "mpi_assert_no_any_tag", 63, val, &flag);
    CHECK(flag && strcmp(val, "true") == 0);
    MPI_Info_free(&out);
    MPI_Info_set(in, "mpi_assert_no_any_tag", "false");
    CHECK(MPI_Comm_set_info(d, in) == MPI_SUCCESS);
    MPI_Comm_get_info(d, &out);
    MPI_Info_get(out, "mpi_assert_no_any_tag", 63, val, &flag);
    CHECK(flag && strcmp(val, "false") == 0);
    MPI_Info_free(&out);
    MPI_Info_free(&in);
    CHECK(MPI_Comm_disconnect(&e) == MPI_SUCCESS && e == MPI_COMM_NULL);
    CHECK(MPI_Comm_disconnect(&d) == MPI_SUCCESS && d == MPI_COMM_NULL);

    /* Cart_sub / Cart_map / Graph_map. */
    int dims[2] = {0, 0}, periods[2] = {0, 1}, coords[2];
    MPI_Dims_create(size, 2, dims);
    MPI_Comm cart, row;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Cart_coords(cart, rank, 2, coords);
    int keep[2] = {0, 1};
    CHECK(MPI_Cart_sub(cart, keep, &row) == MPI_SUCCESS);
    MPI_Comm_size(row, &n);
    MPI_Comm_rank(row, &r);
    CHECK(n == dims[1] && r == coords[1]);
    int nd = -1, rd[1], rp[1], rc[1];
    MPI_Cartdim_get(row, &nd);
    CHECK(nd == 1);
    MPI_Cart_get(row, 1, rd, rp, rc);
    CHECK(rd[0] == dims[1] && rp[0] == 1 && rc[0] == coords[1]);
    int rowsum = 0, one = coords[0];
    MPI_Allreduce(&one, &rowsum, 1, MPI_INT, MPI_SUM, row);
    CHECK(rowsum == coords[0] * dims[1]); /* every member of a row shares coords[0] */
    MPI_Comm_free(&row);
    MPI_Comm_free(&cart);
    int nr = -5;
    CHECK(MPI_Cart_map(MPI_COMM_WORLD, 2, dims, periods, &nr) == MPI_SUCCESS && nr == rank);
    int idx[1] = {0}, edges[1] = {0};
    CHECK(MPI_Graph_map(MPI_COMM_WORLD, 1, idx, edges, &nr) == MPI_SUCCESS);
    CHECK(nr == (rank == 0 ? 0 : MPI_UNDEFINED));

    /* An intracommunicator has no remote side (intercommunicators: intercomm.c). */
    int rs;
    MPI_Group rg;
    CHECK(MPI_Comm_remote_size(MPI_COMM_WORLD, &rs) == MPI_ERR_COMM);
    CHECK(MPI_Comm_remote_group(MPI_COMM_WORLD, &rg) == MPI_ERR_COMM);
    MPI_Comm ic;
    int cls = -1;
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Error_class(MPI_Intercomm_create(MPI_COMM_SELF, 1, MPI_COMM_WORLD, 0, 7, &ic), &cls);
    CHECK(cls == MPI_ERR_RANK); /* local_leader 1 of MPI_COMM_SELF */

    /* Dynamic processes. */
    MPI_Comm parent = 123;
    CHECK(MPI_Comm_get_parent(&parent) == MPI_SUCCESS && parent == MPI_COMM_NULL);
    MPI_Comm inter;
    CHECK(MPI_Comm_spawn("./x", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                         MPI_ERRCODES_IGNORE) == MPI_ERR_SPAWN);
    char port[MPI_MAX_PORT_NAME];
    CHECK(MPI_Open_port(MPI_INFO_NULL, port) == MPI_ERR_SPAWN);
    CHECK(MPI_Comm_connect("p", MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter) == MPI_ERR_SPAWN);

    MPI_Group_free(&ge);
    MPI_Group_free(&world);
    MPI_Finalize();
    return 0;
}
