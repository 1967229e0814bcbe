/*
 * SkifCh_Wait: times out with ETIMEDOUT when nothing arrives (after about the time asked,
 * whatever the waiting policy), returns 0 at once when a message is ready, and wakes up
 * when a message arrives while it sleeps (rank 1 sends to rank 0 after a delay).
 */
#include "testutil.h"

int main(int argc, char **argv) {
    t_init(&argc, &argv);
    int size = SkifCh_Size();
    struct SkifCh *ch = t_open(0);
    netaddr_t me = SkifCh_MyAddr(ch);

    CHECK_ERR(SkifCh_Wait(ch, 0), ETIMEDOUT);
    double t0 = t_now();
    CHECK_ERR(SkifCh_Wait(ch, 100), ETIMEDOUT);
    double dt = t_now() - t0, woken = 0;
    CHECK(dt >= 0.099 && dt < 2.0, "Wait(100) took %.3f s", dt);

    /* A message ready: Wait returns 0 (any timeout) and does not consume it. */
    CHECK(SkifCh_Send(ch, me, NULL, 0) == 0, "self send");
    CHECK_OK(SkifCh_Wait(ch, 0));
    CHECK_OK(SkifCh_Wait(ch, -1));
    struct iovec cont[SKIFCH_CONT_SIZE];
    int cnt;
    CHECK(SkifCh_Recv(ch, cont, &cnt) == 0 && cnt == 0, "the empty message");
    CHECK_OK(SkifCh_RecvComp(ch));

    /* Woken by a message that arrives during the wait. */
    if (size >= 2 && t_rank == 1) {
        struct timespec ts = {0, 150 * 1000 * 1000};
        nanosleep(&ts, NULL);
        char b = 'w';
        t_send_whole(ch, SkifCh_Addr(0, 0), &b, 1);
    } else if (size >= 2 && t_rank == 0) {
        t0 = t_now();
        CHECK_OK(SkifCh_Wait(ch, 10000));
        woken = t_now() - t0;
        CHECK(woken < 2.0, "woken after %.3f s", woken);
        char b;
        netaddr_t src;
        CHECK(t_recv_copy(ch, &b, 1, &src) == 1 && b == 'w' && src == SkifCh_Addr(1, 0), "wake message");
    }
    if (t_rank == 0) printf("wait: ETIMEDOUT after %.3f s; woken by a message after %.3f s\n", dt, woken);
    t_finish(&ch, 1);
    return 0;
}
