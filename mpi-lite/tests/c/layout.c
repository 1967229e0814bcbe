/* Any layout of ranks on nodes (issue 21: uneven layouts such as 2+1 or 1+2 ranks on two
 * nodes): every rank names its node by its network namespace (/proc/self/ns/net: the test's
 * "nodes" are namespaces; on a real cluster use the host name), rank 0 prints the layout
 * as node indices in order of first appearance ("layout: 3 ranks, nodes 0,0,1"), then
 * every ordered pair of ranks exchanges a small and a 256 KiB message (both orders, in
 * rounds of Sendrecv: rank r sends to r+k and receives from r-k), every rank sends a burst
 * to every other with nonblocking calls (order kept per pair, any-source receives), and the
 * collectives run with every root; MPI_COMM_TYPE_SHARED must give each rank's node. Exits
 * non-zero on any wrong value; prints "layout: N ranks ok". */
#define _DEFAULT_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"

#define BIG (256 * 1024)
#define BURST 8

/* The value every byte of pair (from, to)'s big message at index i holds. */
static unsigned char pat(int from, int to, int i) { return (unsigned char)(from * 31 + to * 7 + i); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* The layout, from each rank's namespace. */
    char ns[64] = {0};
    ssize_t n = readlink("/proc/self/ns/net", ns, sizeof ns - 1);
    CHECK(n > 0);
    char *all = malloc((size_t)size * sizeof ns);
    CHECK(all);
    CHECK(MPI_Allgather(ns, sizeof ns, MPI_CHAR, all, sizeof ns, MPI_CHAR, MPI_COMM_WORLD) == MPI_SUCCESS);
    if (rank == 0) {
        printf("layout: %d ranks, nodes ", size);
        int seen = 0;
        int *label = malloc((size_t)size * sizeof(int));
        CHECK(label);
        for (int r = 0; r < size; r++) {
            label[r] = -1;
            for (int q = 0; q < r && label[r] < 0; q++)
                if (strcmp(all + q * sizeof ns, all + r * sizeof ns) == 0) label[r] = label[q];
            if (label[r] < 0) label[r] = seen++;
            printf("%s%d", r ? "," : "", label[r]);
        }
        printf("\n");
        fflush(stdout);
        free(label);
    }
    /* MPI_COMM_TYPE_SHARED: exactly the ranks of this rank's node (the launcher's node map;
     * the namespaces share the host name), in world order for equal keys. */
    MPI_Comm node;
    CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS);
    int nsize, nrank, same = 0, before = 0;
    MPI_Comm_size(node, &nsize);
    MPI_Comm_rank(node, &nrank);
    for (int r = 0; r < size; r++)
        if (strcmp(all + r * sizeof ns, ns) == 0) {
            same++;
            before += r < rank;
        }
    char *mates = malloc((size_t)nsize * sizeof ns);
    CHECK(mates);
    CHECK(MPI_Allgather(ns, sizeof ns, MPI_CHAR, mates, sizeof ns, MPI_CHAR, node) == MPI_SUCCESS);
    for (int r = 0; r < nsize; r++) CHECK(strcmp(mates + r * sizeof ns, ns) == 0);
    if (nsize != same || nrank != before) {
        fprintf(stderr, "layout: rank %d: MPI_COMM_TYPE_SHARED has %d ranks (rank %d), its node %d (rank %d)\n",
                rank, nsize, nrank, same, before);
        CHECK(0);
    }
    free(mates);
    CHECK(MPI_Comm_free(&node) == MPI_SUCCESS);
    free(all);

    /* Every ordered pair, small then big, in rounds. */
    unsigned char *out = malloc(BIG), *in = malloc(BIG);
    CHECK(out && in);
    for (int k = 1; k < size; k++) {
        int to = (rank + k) % size, from = (rank + size - k) % size;
        long s = rank * 1000L + to, r = -1;
        MPI_Status st;
        CHECK(MPI_Sendrecv(&s, 1, MPI_LONG, to, k, &r, 1, MPI_LONG, from, k, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
        CHECK(r == from * 1000L + rank && st.MPI_SOURCE == from && st.MPI_TAG == k);
        for (int i = 0; i < BIG; i++) out[i] = pat(rank, to, i);
        memset(in, 0, BIG);
        CHECK(MPI_Sendrecv(out, BIG, MPI_BYTE, to, 100 + k, in, BIG, MPI_BYTE, from, 100 + k, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
        int cnt;
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        CHECK(cnt == BIG && st.MPI_SOURCE == from);
        for (int i = 0; i < BIG; i++)
            if (in[i] != pat(from, rank, i)) {
                fprintf(stderr, "layout: rank %d: byte %d from %d is %d, expected %d\n", rank, i, from, in[i], pat(from, rank, i));
                CHECK(0);
            }
    }

    /* A burst to every other rank at once; any-source receives keep each pair's order. */
    int others = size - 1;
    MPI_Request *reqs = malloc((size_t)(others * BURST + 1) * sizeof(MPI_Request));
    int *vals = malloc((size_t)(others * BURST + 1) * sizeof(int));
    CHECK(reqs && vals);
    int nr = 0;
    for (int d = 0; d < size; d++)
        for (int i = 0; d != rank && i < BURST; i++) {
            vals[nr] = rank * BURST + i;
            CHECK(MPI_Isend(&vals[nr], 1, MPI_INT, d, 7, MPI_COMM_WORLD, &reqs[nr]) == MPI_SUCCESS);
            nr++;
        }
    int *next = calloc((size_t)size, sizeof(int));
    CHECK(next);
    for (int i = 0; i < others * BURST; i++) {
        int v;
        MPI_Status st;
        CHECK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
        CHECK(st.MPI_SOURCE != rank && v == st.MPI_SOURCE * BURST + next[st.MPI_SOURCE]);
        next[st.MPI_SOURCE]++;
    }
    CHECK(MPI_Waitall(nr, reqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
    free(next);
    free(vals);
    free(reqs);

    /* Collectives, every root. */
    long sum = 0, mine = rank + 1;
    CHECK(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(sum == (long)size * (size + 1) / 2);
    for (int root = 0; root < size; root++) {
        long b = rank == root ? 77 + root : -1;
        CHECK(MPI_Bcast(&b, 1, MPI_LONG, root, MPI_COMM_WORLD) == MPI_SUCCESS);
        CHECK(b == 77 + root);
        long mx = -1;
        CHECK(MPI_Reduce(&mine, &mx, 1, MPI_LONG, MPI_MAX, root, MPI_COMM_WORLD) == MPI_SUCCESS);
        CHECK(rank != root || mx == size);
    }
    int *a2a_out = malloc((size_t)size * sizeof(int)), *a2a_in = malloc((size_t)size * sizeof(int));
    CHECK(a2a_out && a2a_in);
    for (int d = 0; d < size; d++) a2a_out[d] = rank * 100 + d;
    CHECK(MPI_Alltoall(a2a_out, 1, MPI_INT, a2a_in, 1, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS);
    for (int s = 0; s < size; s++) CHECK(a2a_in[s] == s * 100 + rank);
    free(a2a_out);
    free(a2a_in);
    CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS);

    free(out);
    free(in);
    if (rank == 0) printf("layout: %d ranks ok\n", size);
    MPI_Finalize();
    return 0;
}
