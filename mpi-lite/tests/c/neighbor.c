/* Neighbourhood collectives (MPI-3.1 §7.6), blocking and nonblocking, on a Cartesian line
 * (MPI_PROC_NULL ends: their blocks untouched), a periodic ring, distributed graphs (adjacent
 * and MPI_Dist_graph_create) and a graph (MPI_Graph_create and its queries). */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = size, r = rank;
    MPI_Request q;

    /* A non-periodic line: neighbours (r-1, r+1), PROC_NULL past the ends. */
    int dims[1] = {n}, per[1] = {0};
    MPI_Comm line;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, per, 0, &line);
    int me = r, got[2] = {-1, -1};
    CHECK(MPI_Neighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, line) == MPI_SUCCESS);
    CHECK(got[0] == (r > 0 ? r - 1 : -1) && got[1] == (r < n - 1 ? r + 1 : -1));
    int out[2] = {r * 10, r * 10 + 1}, in[2] = {-1, -1};
    CHECK(MPI_Neighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, line) == MPI_SUCCESS);
    CHECK(in[0] == (r > 0 ? (r - 1) * 10 + 1 : -1));     /* what the left one sent right */
    CHECK(in[1] == (r < n - 1 ? (r + 1) * 10 : -1));     /* what the right one sent left */
    in[0] = in[1] = -1;
    CHECK(MPI_Ineighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, line, &q) == MPI_SUCCESS);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    CHECK(in[0] == (r > 0 ? (r - 1) * 10 + 1 : -1) && in[1] == (r < n - 1 ? (r + 1) * 10 : -1));
    int cnt[2] = {1, 1}, dsp[2] = {1, 0};
    got[0] = got[1] = -1;
    CHECK(MPI_Ineighbor_allgatherv(&me, 1, MPI_INT, got, cnt, dsp, MPI_INT, line, &q) == MPI_SUCCESS);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    CHECK(got[1] == (r > 0 ? r - 1 : -1) && got[0] == (r < n - 1 ? r + 1 : -1));
    MPI_Comm_free(&line);

    /* A periodic ring (allgather: both neighbours' ranks). */
    per[0] = 1;
    MPI_Comm ring;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, per, 0, &ring);
    CHECK(MPI_Ineighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, ring, &q) == MPI_SUCCESS);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    CHECK(got[0] == (r + n - 1) % n && got[1] == (r + 1) % n);
    MPI_Comm_free(&ring);

    /* A distributed graph: r receives from r-1 and sends to r+1 (mod n). */
    int src = (r + n - 1) % n, dst = (r + 1) % n;
    MPI_Comm g;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &src, MPI_UNWEIGHTED, 1, &dst, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &g);
    int v[3] = {r, r + 100, r + 200}, w[3] = {-1, -1, -1};
    int sc[1] = {3}, sd[1] = {0}, rc[1] = {3}, rd[1] = {0};
    CHECK(MPI_Neighbor_alltoallv(v, sc, sd, MPI_INT, w, rc, rd, MPI_INT, g) == MPI_SUCCESS);
    CHECK(w[0] == src && w[1] == src + 100 && w[2] == src + 200);
    MPI_Aint bd[1] = {0};
    MPI_Datatype ty[1] = {MPI_INT};
    w[0] = w[1] = w[2] = -1;
    CHECK(MPI_Neighbor_alltoallw(v, sc, bd, ty, w, rc, bd, ty, g) == MPI_SUCCESS);
    CHECK(w[2] == src + 200);
    w[0] = w[1] = w[2] = -1;
    CHECK(MPI_Ineighbor_alltoallw(v, sc, bd, ty, w, rc, bd, ty, g, &q) == MPI_SUCCESS);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    CHECK(w[1] == src + 100);
    w[0] = -1;
    CHECK(MPI_Ineighbor_alltoallv(v, sc, sd, MPI_INT, w, rc, rd, MPI_INT, g, &q) == MPI_SUCCESS);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    CHECK(w[0] == src);
    CHECK(MPI_Neighbor_allgatherv(&me, 1, MPI_INT, w, cnt, rd, MPI_INT, g) == MPI_SUCCESS && w[0] == src);
    /* A graph (MPI_Graph_create): the ring, both neighbours of every node. */
    int index[64], edges[128];
    for (int k = 0; k < n; k++) {
        index[k] = 2 * (k + 1);
        edges[2 * k] = (k + n - 1) % n;
        edges[2 * k + 1] = (k + 1) % n;
    }
    MPI_Comm gr;
    CHECK(MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &gr) == MPI_SUCCESS);
    int t = -1, nn = -1, ne = -1, cnt2 = -1, nb[2], gi[64], ge[128];
    MPI_Topo_test(gr, &t);
    CHECK(t == MPI_GRAPH);
    MPI_Graphdims_get(gr, &nn, &ne);
    CHECK(nn == n && ne == 2 * n);
    MPI_Graph_neighbors_count(gr, r, &cnt2);
    CHECK(cnt2 == 2);
    MPI_Graph_neighbors(gr, r, 2, nb);
    CHECK(nb[0] == (r + n - 1) % n && nb[1] == (r + 1) % n);
    MPI_Graph_get(gr, 64, 128, gi, ge);
    CHECK(gi[n - 1] == 2 * n && ge[1] == 1 % n);
    got[0] = got[1] = -1;
    CHECK(MPI_Neighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, gr) == MPI_SUCCESS);
    CHECK(got[0] == (r + n - 1) % n && got[1] == (r + 1) % n);
    MPI_Comm_free(&gr);

    /* MPI_Dist_graph_create: each rank gives its own out-edge r -> r+1 with weight r. */
    int one = 1, wt1 = r;
    MPI_Comm dg;
    CHECK(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &r, &one, &dst, &wt1, MPI_INFO_NULL, 0, &dg) == MPI_SUCCESS);
    int indeg = -1, outdeg = -1, weighted = -1, s1[1], sw[1], d1[1], dw[1];
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    CHECK(indeg == 1 && outdeg == 1 && weighted == 1);
    MPI_Dist_graph_neighbors(dg, 1, s1, sw, 1, d1, dw);
    CHECK(s1[0] == src && sw[0] == src && d1[0] == dst && dw[0] == r);
    got[0] = -1;
    CHECK(MPI_Neighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, dg) == MPI_SUCCESS && got[0] == src);
    MPI_Comm_free(&dg);

    /* No topology: MPI_ERR_TOPOLOGY. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPI_Neighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, MPI_COMM_WORLD) == MPI_ERR_TOPOLOGY);
    MPI_Comm_free(&g);
    /* A periodic dimension of one process: both neighbours are this process, and the
     * block sent in the + direction lands in the - slot (MPICH's ring_neighbor_alltoall). */
    {
        int d1[1] = {1}, p1[1] = {1}, sb[2] = {-1, 1}, rb[2] = {0, 0};
        MPI_Comm ring;
        MPI_Cart_create(MPI_COMM_SELF, 1, d1, p1, 0, &ring);
        CHECK(MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, ring) == MPI_SUCCESS);
        CHECK(rb[0] == 1 && rb[1] == -1);
        MPI_Comm_free(&ring);
    }
    MPI_Finalize();
    return 0;
}
