/*
 * A lost peer: rank 1 sends a last message to every other rank, sleeps DELAY, and kills
 * itself with SIGKILL. The others, blocked in SkifCh_Wait(-1) after consuming it, must get
 * -1/EPIPE within a second of the death (skifrun marks the dead rank lost), then EPIPE from Recv and from Send
 * to rank 1. Each survivor prints "peerlost: rank R ok"; skifrun itself exits with
 * 128 + SIGKILL because rank 1 failed. Needs at least 2 ranks.
 */
#include "testutil.h"

#include <signal.h>
#include <unistd.h>

#define DELAY 0.2 /* seconds: the survivors are really asleep in Wait when rank 1 dies */

int main(int argc, char **argv) {
    t_init(&argc, &argv);
    int size = SkifCh_Size();
    CHECK(size >= 2, "needs at least 2 ranks, got %d", size);
    struct SkifCh *ch = t_open(0);
    char b = 'k';
    struct iovec one = {&b, 1};
    if (t_rank == 1) {
        for (int r = 0; r < size; r++)
            if (r != 1) t_send_whole(ch, SkifCh_Addr(r, 0), &b, 1);
        struct timespec ts = {0, (long)(DELAY * 1e9)};
        nanosleep(&ts, NULL);
        kill(getpid(), SIGKILL);
        CHECK(0, "still alive after SIGKILL");
    }
    netaddr_t src;
    CHECK(t_recv_copy(ch, &b, 1, &src) == 1 && src == SkifCh_Addr(1, 0), "last message");
    double t0 = t_now();
    CHECK_ERR(SkifCh_Wait(ch, -1), EPIPE);
    double dt = t_now() - t0;
    CHECK(dt < DELAY + 1.0, "EPIPE after %.3f s", dt);
    struct iovec cont[SKIFCH_CONT_SIZE];
    int cnt;
    CHECK_ERR(SkifCh_Recv(ch, cont, &cnt), EPIPE);
    CHECK_ERR(SkifCh_Send(ch, SkifCh_Addr(1, 0), &one, 1), EPIPE);
    printf("peerlost: rank %d ok (EPIPE after %.3f s)\n", t_rank, dt);
    fflush(stdout);
    t_finish(&ch, 1);
    return 0;
}
