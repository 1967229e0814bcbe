/* Groups, communicators and topologies over mpi-lite: Comm_group/Group_* calls,
 * Comm_dup/split/create/compare/free, names, attributes, isolation of contexts,
 * Dims_create, Cart_*, Dist_graph_*. Any rank count >= 2. */
#include "check.h"
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int v, sub, flag, res;
    char nm[MPI_MAX_OBJECT_NAME]; int len;
    int *tag_ub;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    CHECK(flag && *tag_ub >= 32767);
    MPI_Comm_get_name(MPI_COMM_WORLD, nm, &len);
    CHECK(strcmp(nm, "MPI_COMM_WORLD") == 0);
    MPI_Comm_test_inter(MPI_COMM_WORLD, &flag);
    CHECK(!flag);
    MPI_Comm_size(MPI_COMM_SELF, &v);
    CHECK(v == 1);

    /* Groups. */
    MPI_Group world, evens, odds, u, inter;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int n_even = (size + 1) / 2, ev[64];
    for (int i = 0; i < n_even; i++) ev[i] = 2 * i;
    MPI_Group_incl(world, n_even, ev, &evens);
    MPI_Group_excl(world, n_even, ev, &odds);
    MPI_Group_size(evens, &v);
    CHECK(v == n_even);
    MPI_Group_size(odds, &v);
    CHECK(v == size - n_even);
    MPI_Group_rank(evens, &v);
    CHECK(v == (rank % 2 == 0 ? rank / 2 : MPI_UNDEFINED));
    int from[2] = {0, 1}, to[2];
    MPI_Group_translate_ranks(world, 2, from, evens, to);
    CHECK(to[0] == 0 && to[1] == MPI_UNDEFINED);
    /* A group with no member is MPI_GROUP_EMPTY itself (and freeing it is fine). */
    {
        int all[64];
        MPI_Group none;
        for (int i = 0; i < size; i++) all[i] = i;
        CHECK(MPI_Group_excl(world, size, all, &none) == MPI_SUCCESS && none == MPI_GROUP_EMPTY);
        CHECK(MPI_Group_free(&none) == MPI_SUCCESS && none == MPI_GROUP_NULL);
    }
    MPI_Group_union(odds, evens, &u);
    MPI_Group_compare(u, world, &res);
    CHECK(res == MPI_SIMILAR);
    MPI_Group_intersection(odds, evens, &inter);
    MPI_Group_size(inter, &v);
    CHECK(v == 0);
    MPI_Group_compare(world, world, &res);
    CHECK(res == MPI_IDENT);

    /* Comm_create over the evens. */
    MPI_Comm ce;
    MPI_Comm_create(MPI_COMM_WORLD, evens, &ce);
    if (rank % 2 == 0) {
        CHECK(ce != MPI_COMM_NULL);
        MPI_Comm_rank(ce, &v);
        CHECK(v == rank / 2);
        MPI_Comm_size(ce, &v);
        CHECK(v == n_even);
        MPI_Barrier(ce);
        MPI_Comm_free(&ce);
        CHECK(ce == MPI_COMM_NULL);
    } else {
        CHECK(ce == MPI_COMM_NULL);
    }

    /* Split into halves, reversed order by key. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    MPI_Comm_rank(half, &sub);
    MPI_Comm_size(half, &v);
    int nmine = rank % 2 == 0 ? n_even : size - n_even;
    CHECK(v == nmine && sub == nmine - 1 - rank / 2);
    MPI_Comm_compare(half, MPI_COMM_WORLD, &res);
    CHECK(res == (size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL));

    /* A dup is congruent and isolated: the same tag on two communicators never mixes. */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_compare(dup, MPI_COMM_WORLD, &res);
    CHECK(res == MPI_CONGRUENT);
    MPI_Comm_set_name(dup, "dup");
    MPI_Comm_get_name(dup, nm, &len);
    CHECK(strcmp(nm, "dup") == 0 && len == 3);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int a = rank, b = rank + 1000, x, y;
    MPI_Request r[2];
    MPI_Irecv(&x, 1, MPI_INT, left, 9, dup, &r[0]);
    MPI_Irecv(&y, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &r[1]);
    MPI_Send(&b, 1, MPI_INT, right, 9, MPI_COMM_WORLD);
    MPI_Send(&a, 1, MPI_INT, right, 9, dup);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    CHECK(x == left && y == left + 1000);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);

    MPI_Comm none;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, 0, &none);
    CHECK((rank == 0) == (none == MPI_COMM_NULL));
    if (none != MPI_COMM_NULL) MPI_Comm_free(&none);

    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &v);
    CHECK(v == size); /* one host */
    MPI_Comm_free(&node);

    /* Cartesian grid. */
    int dims[2] = {0, 0}, periods[2] = {1, 0}, coords[2];
    /* As close to each other as possible (§7.5.2): the smallest spread, not a greedy one. */
    {
        int d2[2] = {0, 0}, d3[3] = {0, 0, 0}, d4[4] = {0, 3, 0, 0};
        CHECK(MPI_Dims_create(180, 2, d2) == MPI_SUCCESS && d2[0] == 15 && d2[1] == 12);
        CHECK(MPI_Dims_create(240, 3, d3) == MPI_SUCCESS && d3[0] == 8 && d3[1] == 6 && d3[2] == 5);
        CHECK(MPI_Dims_create(3 * 70416 / 163, 4, d4) == MPI_SUCCESS);
        CHECK(d4[0] == 9 && d4[1] == 3 && d4[2] == 8 && d4[3] == 6);
    }
    MPI_Dims_create(size, 2, dims);
    CHECK(dims[0] * dims[1] == size && dims[0] >= dims[1]);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Topo_test(cart, &v);
    CHECK(v == MPI_CART);
    MPI_Cartdim_get(cart, &v);
    CHECK(v == 2);
    MPI_Comm_rank(cart, &sub);
    MPI_Cart_coords(cart, sub, 2, coords);
    CHECK(coords[0] * dims[1] + coords[1] == sub);
    MPI_Cart_rank(cart, coords, &v);
    CHECK(v == sub);
    int src, dst;
    MPI_Cart_shift(cart, 0, 1, &src, &dst);
    CHECK(dst == ((coords[0] + 1) % dims[0]) * dims[1] + coords[1]);
    MPI_Cart_shift(cart, 1, 1, &src, &dst);
    CHECK(coords[1] == dims[1] - 1 ? dst == MPI_PROC_NULL : dst == sub + 1);
    CHECK(coords[1] == 0 ? src == MPI_PROC_NULL : src == sub - 1);
    int gd[2], gp[2], gc[2];
    MPI_Cart_get(cart, 2, gd, gp, gc);
    CHECK(gd[0] == dims[0] && gp[0] == 1 && gp[1] == 0 && gc[1] == coords[1]);
    /* Exchange along the periodic dimension through the topology's neighbours. */
    MPI_Cart_shift(cart, 0, 1, &src, &dst);
    int got = -1;
    MPI_Sendrecv(&sub, 1, MPI_INT, dst, 0, &got, 1, MPI_INT, src, 0, cart, MPI_STATUS_IGNORE);
    CHECK(got == src);
    MPI_Comm_free(&cart);

    /* Distributed graph: a directed ring. */
    MPI_Comm g;
    int w_in = 7, w_out = 8;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, &w_in, 1, &right, &w_out, MPI_INFO_NULL, 0, &g);
    int indeg, outdeg, weighted;
    MPI_Dist_graph_neighbors_count(g, &indeg, &outdeg, &weighted);
    CHECK(indeg == 1 && outdeg == 1 && weighted);
    int s_[1], sw[1], d_[1], dw[1];
    MPI_Dist_graph_neighbors(g, 1, s_, sw, 1, d_, dw);
    CHECK(s_[0] == left && sw[0] == 7 && d_[0] == right && dw[0] == 8);
    MPI_Topo_test(g, &v);
    CHECK(v == MPI_DIST_GRAPH);
    MPI_Comm_free(&g);

    /* Info objects, MPI_Alloc_mem, handle conversion. */
    MPI_Info info, info2;
    char val[64];
    int nk;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_nodes", "4");
    MPI_Info_set(info, "striping", "yes");
    MPI_Info_set(info, "cb_nodes", "8");
    MPI_Info_get_nkeys(info, &nk);
    CHECK(nk == 2);
    MPI_Info_get(info, "cb_nodes", sizeof val - 1, val, &flag);
    CHECK(flag && strcmp(val, "8") == 0);
    MPI_Info_dup(info, &info2);
    MPI_Info_delete(info, "striping");
    MPI_Info_get(info, "striping", sizeof val - 1, val, &flag);
    CHECK(!flag);
    MPI_Info_get_nthkey(info2, 1, val);
    CHECK(strcmp(val, "striping") == 0);
    MPI_Info_get_valuelen(info2, "striping", &v, &flag);
    CHECK(flag && v == 3);
    MPI_Info_free(&info);
    MPI_Info_free(&info2);
    CHECK(info == MPI_INFO_NULL);
    double *mem;
    CHECK(MPI_Alloc_mem(1000 * sizeof(double), MPI_INFO_NULL, &mem) == MPI_SUCCESS);
    mem[999] = 1.0;
    MPI_Free_mem(mem);
    CHECK(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_WORLD)) == MPI_COMM_WORLD);
    CHECK(MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE)) == MPI_DOUBLE);

    MPI_Group_free(&world);
    MPI_Group_free(&evens);
    MPI_Group_free(&odds);
    MPI_Group_free(&u);
    MPI_Group_free(&inter);
    CHECK(inter == MPI_GROUP_NULL);
    MPI_Finalize();
    if (rank == 0) printf("comms: %d ranks ok\n", size);
    return 0;
}
