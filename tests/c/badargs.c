/*
 * Bad arguments and misuse: every call must fail with -1 (or NULL / SKIFCH_ADDR_INVALID)
 * and the documented errno, and leave the channel usable. Also: Init is counted, the last
 * Finalize refuses while channels are open, a closed port and a finalized rank are
 * unreachable, and a process joins its job only once.
 */
#include "testutil.h"

int main(int argc, char **argv) {
    struct iovec cont[SKIFCH_CONT_SIZE];
    int cnt;
    char byte = 'x';
    struct iovec one = {&byte, 1};

    /* Before Init. */
    CHECK_ERR(SkifCh_Rank(), EINVAL);
    CHECK_ERR(SkifCh_Size(), EINVAL);
    CHECK_ERR(SkifCh_Finalize(), EINVAL);
    errno = 0;
    CHECK(SkifCh_Open(0) == NULL && errno == EINVAL, "Open before Init: errno %d", errno);
    CHECK(SkifCh_Addr(3, 2) == 0x00030002u, "Addr needs no Init");

    /* Init is counted: the second Init and its Finalize change nothing. */
    t_init(&argc, &argv);
    CHECK_OK(SkifCh_Init(NULL, NULL));
    CHECK_OK(SkifCh_Finalize());
    int size = SkifCh_Size();
    CHECK(size >= 1 && SkifCh_Rank() == t_rank && t_rank < size, "rank %d size %d", t_rank, size);

    /* Open. */
    errno = 0;
    CHECK(SkifCh_Open(-1) == NULL && errno == EINVAL, "Open(-1): errno %d", errno);
    errno = 0;
    CHECK(SkifCh_Open(64) == NULL && errno == EINVAL, "Open(64): errno %d", errno);
    struct SkifCh *ch = t_open(0);
    errno = 0;
    CHECK(SkifCh_Open(0) == NULL && errno == EINVAL, "second Open(0): errno %d", errno);
    netaddr_t me = SkifCh_MyAddr(ch);
    CHECK(me == SkifCh_Addr(t_rank, 0), "MyAddr %#x", (unsigned)me);

    /* Addresses. */
    errno = 0;
    CHECK(SkifCh_Addr(-1, 0) == SKIFCH_ADDR_INVALID && errno == EINVAL, "Addr(-1, 0)");
    errno = 0;
    CHECK(SkifCh_Addr(0, 65536) == SKIFCH_ADDR_INVALID && errno == EINVAL, "Addr(0, 65536)");
    errno = 0;
    CHECK(SkifCh_MyAddr(NULL) == SKIFCH_ADDR_INVALID && errno == EINVAL, "MyAddr(NULL)");

    /* Send. */
    CHECK_ERR(SkifCh_Send(NULL, me, &one, 1), EINVAL);
    CHECK_ERR(SkifCh_Send(ch, me, NULL, 1), EINVAL);
    CHECK_ERR(SkifCh_Send(ch, me, &one, -1), EINVAL);
    static struct iovec many[1025];
    for (int i = 0; i < 1025; i++) many[i] = one;
    CHECK_ERR(SkifCh_Send(ch, me, many, 1025), EINVAL);
    struct iovec nullpart = {NULL, 5};
    CHECK_ERR(SkifCh_Send(ch, me, &nullpart, 1), EINVAL);
    CHECK_ERR(SkifCh_Send(ch, SkifCh_Addr(size, 0), &one, 1), EHOSTUNREACH);
    CHECK_ERR(SkifCh_Send(ch, SkifCh_Addr(4000, 0), &one, 1), EHOSTUNREACH);
    CHECK_ERR(SkifCh_Send(ch, SkifCh_Addr(0, 65535), &one, 1), EHOSTUNREACH);
    CHECK_ERR(SkifCh_Send(ch, SKIFCH_ADDR_INVALID, &one, 1), EHOSTUNREACH);
    /* A port that was opened and closed is unreachable; it can be opened again. */
    struct SkifCh *tmp = t_open(2);
    CHECK_OK(SkifCh_Close(tmp));
    CHECK_ERR(SkifCh_Send(ch, SkifCh_Addr(t_rank, 2), &one, 1), EHOSTUNREACH);
    /* A closed handle fails every call with EBADF (it used to send on freed memory). */
    CHECK_ERR(SkifCh_Send(tmp, me, &one, 1), EBADF);
    CHECK_ERR(SkifCh_Recv(tmp, cont, &cnt), EBADF);
    CHECK_ERR(SkifCh_RecvFrom(tmp, cont, &cnt, NULL), EBADF);
    CHECK_ERR(SkifCh_RecvComp(tmp), EBADF);
    CHECK_ERR(SkifCh_Wait(tmp, 0), EBADF);
    CHECK_ERR(SkifCh_Close(tmp), EBADF);
    errno = 0;
    CHECK(SkifCh_MyAddr(tmp) == SKIFCH_ADDR_INVALID && errno == EBADF, "MyAddr of a closed channel");
    struct SkifCh *old = tmp;
    tmp = t_open(2);
    CHECK(tmp == old, "reopening a port returns its handle again");
    CHECK(SkifCh_Send(ch, SkifCh_Addr(t_rank, 2), &one, 1) == 1, "send to the reopened port");
    CHECK_OK(SkifCh_Close(tmp)); /* with its message unread */

    /* Recv / RecvComp / Wait. */
    CHECK_ERR(SkifCh_Recv(ch, cont, &cnt), EAGAIN);
    CHECK_ERR(SkifCh_Recv(NULL, cont, &cnt), EINVAL);
    CHECK_ERR(SkifCh_Recv(ch, NULL, &cnt), EINVAL);
    CHECK_ERR(SkifCh_Recv(ch, cont, NULL), EINVAL);
    CHECK_ERR(SkifCh_RecvFrom(ch, NULL, &cnt, NULL), EINVAL);
    CHECK_ERR(SkifCh_RecvComp(ch), EINVAL);
    CHECK_ERR(SkifCh_RecvComp(NULL), EINVAL);
    CHECK_ERR(SkifCh_Wait(NULL, 0), EINVAL);
    CHECK_ERR(SkifCh_Wait(ch, -2), EINVAL);
    CHECK_ERR(SkifCh_Close(NULL), EINVAL);
    /* Bad arguments consumed nothing: a message sent now is the only one there. */
    CHECK(SkifCh_Send(ch, me, &one, 1) == 1, "self send");
    CHECK(SkifCh_Recv(ch, cont, NULL) == -1 && errno == EINVAL, "Recv with NULL count");
    netaddr_t src = 0;
    CHECK(SkifCh_RecvFrom(ch, cont, &cnt, NULL) == 1 && cnt == 1, "the message");
    CHECK(*(char *)cont[0].iov_base == 'x', "its byte");
    CHECK_OK(SkifCh_RecvComp(ch));
    CHECK_ERR(SkifCh_RecvComp(ch), EINVAL);
    CHECK_ERR(SkifCh_RecvFrom(ch, cont, &cnt, &src), EAGAIN);

    /* Size >= 2: rank 1 says goodbye (to port 1, so that port 0 above saw only our own
     * messages) and finalizes; rank 0 then finds it unreachable. */
    if (size >= 2 && t_rank == 0) {
        netaddr_t peer = SkifCh_Addr(1, 0);
        struct SkifCh *bye = t_open(1);
        CHECK(t_recv_copy(bye, &byte, 1, &src) == 1 && src == peer, "goodbye from rank 1");
        CHECK_OK(SkifCh_Close(bye));
        double t0 = t_now();
        for (;;) {
            ssize_t n = SkifCh_Send(ch, peer, &one, 1);
            if (n == -1 && errno == EHOSTUNREACH) break;
            CHECK(n == 1 || errno == EAGAIN, "Send to a finalizing rank: errno %d (%s)", errno,
                  strerror(errno));
            CHECK(t_now() - t0 < 10, "rank 1 never became unreachable");
            sched_yield();
        }
    } else if (size >= 2 && t_rank == 1) {
        t_send_whole(ch, SkifCh_Addr(0, 1), &byte, 1);
    }

    /* The last Finalize refuses while a channel is open, and changes nothing. */
    CHECK_ERR(SkifCh_Finalize(), EINVAL);
    CHECK(SkifCh_Rank() == t_rank, "still joined");
    CHECK_OK(SkifCh_Close(ch));
    CHECK_OK(SkifCh_Finalize());
    CHECK_ERR(SkifCh_Rank(), EINVAL);
    CHECK_ERR(SkifCh_Finalize(), EINVAL);
    CHECK_ERR(SkifCh_Init(&argc, &argv), EINVAL);
    errno = 0;
    CHECK(SkifCh_Open(0) == NULL && errno == EINVAL, "Open after Finalize");
    if (t_rank == 0) printf("badargs: all errors as documented\n");
    return 0;
}
