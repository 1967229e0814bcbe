/*
 * Back-pressure without loss or duplication. Rank 0 sends numbered 64-byte messages to
 * channel (1, 0) while rank 1 does not consume them, until Send fails with EAGAIN; a
 * failed Send consumes nothing, so it retries the same number. It tells rank 1 how many
 * went through (on port 1, which rank 1 does read), then sends EXTRA more, retrying on
 * EAGAIN. Rank 1 then consumes: exactly 0, 1, 2, ... in order, and nothing after the last.
 * In a 1-rank job, rank 0 plays both parts on itself. Other ranks only join and leave.
 */
#include "testutil.h"

#define MSG 64
#define EXTRA 5000

static void fill(unsigned char *b, unsigned seq) {
    memcpy(b, &seq, sizeof seq);
    for (int i = 4; i < MSG; i++) b[i] = (unsigned char)(seq * 7 + (unsigned)i);
}

static void check_msg(const unsigned char *b, size_t len, unsigned want) {
    unsigned seq;
    CHECK(len == MSG, "message of %zu bytes", len);
    memcpy(&seq, b, sizeof seq);
    CHECK(seq == want, "message %u, want %u (lost, duplicated or reordered)", seq, want);
    for (int i = 4; i < MSG; i++) CHECK(b[i] == (unsigned char)(seq * 7 + (unsigned)i), "byte %d of %u", i, seq);
}

/* Sends message `seq` until it goes through; returns 0 on success, -1 on EAGAIN if
 * `once`. */
static int send_seq(struct SkifCh *ch, netaddr_t dst, unsigned seq, int once) {
    unsigned char b[MSG];
    fill(b, seq);
    struct iovec iov = {b, MSG};
    for (;;) {
        ssize_t n = SkifCh_Send(ch, dst, &iov, 1);
        if (n == MSG) return 0;
        CHECK(n == -1 && errno == EAGAIN, "Send of %u: %zd, errno %d (%s)", seq, n, errno, strerror(errno));
        if (once) return -1;
        sched_yield();
    }
}

/* Fills the lane to `dst`; returns how many messages went through. */
static unsigned fill_lane(struct SkifCh *ch, netaddr_t dst) {
    unsigned seq = 0;
    while (send_seq(ch, dst, seq, 1) == 0) seq++;
    CHECK(seq > 0, "the very first send would block");
    /* Still full: EAGAIN again, and nothing consumed (checked by the receiver). */
    for (int i = 0; i < 100; i++) CHECK(send_seq(ch, dst, seq, 1) == -1, "room appeared with no consumer");
    return seq;
}

static void consume(struct SkifCh *ch, unsigned from, unsigned to) {
    unsigned char b[MSG];
    for (unsigned s = from; s < to; s++) {
        netaddr_t src;
        size_t len = t_recv_copy(ch, b, sizeof b, &src);
        CHECK(src == SkifCh_Addr(0, 0), "sender %#x", (unsigned)src);
        check_msg(b, len, s);
    }
}

int main(int argc, char **argv) {
    t_init(&argc, &argv);
    int size = SkifCh_Size();
    struct SkifCh *ch[2] = {NULL, NULL};
    if (size == 1) {
        ch[0] = t_open(0);
        unsigned n = fill_lane(ch[0], SkifCh_MyAddr(ch[0]));
        consume(ch[0], 0, n);
        struct iovec cont[SKIFCH_CONT_SIZE];
        int cnt;
        CHECK_ERR(SkifCh_Recv(ch[0], cont, &cnt), EAGAIN);
        printf("backpressure: EAGAIN after %u messages to self\n", n);
    } else if (t_rank == 0) {
        ch[0] = t_open(0);
        netaddr_t data = SkifCh_Addr(1, 0), ctl = SkifCh_Addr(1, 1);
        unsigned n = fill_lane(ch[0], data);
        t_send_whole(ch[0], ctl, &n, sizeof n);
        for (unsigned s = n; s < n + EXTRA; s++) send_seq(ch[0], data, s, 0);
        printf("backpressure: EAGAIN after %u messages; %u more after the receiver resumed\n", n, EXTRA);
    } else if (t_rank == 1) {
        ch[0] = t_open(0);
        ch[1] = t_open(1);
        unsigned n;
        netaddr_t src;
        CHECK(t_recv_copy(ch[1], &n, sizeof n, &src) == sizeof n, "control message size");
        CHECK(src == SkifCh_Addr(0, 0), "control from %#x", (unsigned)src);
        consume(ch[0], 0, n + EXTRA);
        /* Anything more would be a duplicate: the sender is done, its lane must be empty. */
        CHECK(SkifCh_Wait(ch[0], 100) == -1 && errno == ETIMEDOUT, "an extra message arrived");
    }
    t_finish(ch, 2);
    return 0;
}
