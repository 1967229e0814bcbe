/*
 * Per-pair ordering with many messages, and memory stability of held messages.
 * Every rank (rank 0 included, to itself) sends N messages of varying sizes, as two-part
 * iovecs, to channel (0, 0). Each sender's bytes are one deterministic stream, so a lost,
 * duplicated or reordered message gives a wrong byte. Rank 0 holds up to HOLD messages
 * before completing the oldest (RecvComp is FIFO) and re-checks each held message just
 * before completing it: its memory must not change while held, although the senders keep
 * sending.
 */
#include "testutil.h"

#define N 30000
#define HOLD 3
#define MAXRANKS 64

static size_t msg_len(int k) { return 1 + (size_t)k * 37 % 251; }

struct held {
    struct iovec cont[SKIFCH_CONT_SIZE];
    int cnt;
    netaddr_t src;
    unsigned long long start;
};

static void verify(const struct held *h, netaddr_t me) {
    unsigned long long k = h->start;
    for (int i = 0; i < h->cnt; i++) {
        const unsigned char *p = h->cont[i].iov_base;
        for (size_t j = 0; j < h->cont[i].iov_len; j++, k++)
            CHECK(p[j] == t_byte(h->src, me, k), "from %#x: byte %llu is %u, want %u",
                  (unsigned)h->src, k, p[j], t_byte(h->src, me, k));
    }
}

int main(int argc, char **argv) {
    t_init(&argc, &argv);
    int size = SkifCh_Size();
    CHECK(size >= 1 && size <= MAXRANKS, "size %d", size);
    struct SkifCh *ch = t_open(0);
    netaddr_t me = SkifCh_MyAddr(ch), dst = SkifCh_Addr(0, 0);
    CHECK(me == SkifCh_Addr(t_rank, 0), "MyAddr %#x", (unsigned)me);

    /* Sender state: message k, offset inside it, stream position. */
    int k = 0;
    size_t off = 0;
    unsigned long long spos = 0, total = 0;
    for (int i = 0; i < N; i++) total += msg_len(i);
    static unsigned char buf[256];

    /* Receiver state (rank 0). */
    unsigned long long rpos[MAXRANKS] = {0}, done = 0;
    struct held q[HOLD];
    int qn = 0, qhead = 0;

    while (k < N || (t_rank == 0 && done < total * (unsigned long long)size)) {
        if (k < N) {
            size_t len = msg_len(k);
            for (size_t j = off; j < len; j++) buf[j] = t_byte(me, dst, spos + (j - off));
            size_t cut = off + (len - off) / 3;
            struct iovec iov[2] = {{buf + off, cut - off}, {buf + cut, len - cut}};
            ssize_t n = SkifCh_Send(ch, dst, iov, 2);
            if (n < 0) {
                CHECK(errno == EAGAIN, "Send: errno %d (%s)", errno, strerror(errno));
                if (t_rank != 0) sched_yield();
            } else {
                CHECK(n > 0 && (size_t)n <= len - off, "Send returned %zd of %zu", n, len - off);
                spos += (size_t)n;
                off += (size_t)n;
                if (off == len) {
                    k++;
                    off = 0;
                }
            }
        }
        if (t_rank != 0) continue;
        for (int burst = 0; burst < 64; burst++) {
            struct held *h = &q[(qhead + qn) % HOLD];
            ssize_t len = SkifCh_RecvFrom(ch, h->cont, &h->cnt, &h->src);
            if (len < 0) {
                CHECK(errno == EAGAIN, "RecvFrom: errno %d (%s)", errno, strerror(errno));
                break;
            }
            int r = (int)(h->src >> 16);
            CHECK(r < size && (h->src & 0xffff) == 0, "sender %#x", (unsigned)h->src);
            CHECK(h->cnt >= 1 && h->cnt <= SKIFCH_CONT_SIZE, "cont_count %d for %zd bytes",
                  h->cnt, len);
            size_t sum = 0;
            for (int i = 0; i < h->cnt; i++) sum += h->cont[i].iov_len;
            CHECK(sum == (size_t)len, "segments %zu, length %zd", sum, len);
            h->start = rpos[r];
            verify(h, me);
            rpos[r] += (size_t)len;
            CHECK(rpos[r] <= total, "rank %d sent more than it should: %llu", r, rpos[r]);
            done += (size_t)len;
            if (++qn == HOLD) {
                verify(&q[qhead], me); /* unchanged while held */
                CHECK_OK(SkifCh_RecvComp(ch));
                qhead = (qhead + 1) % HOLD;
                qn--;
            }
        }
    }
    while (qn > 0) {
        verify(&q[qhead], me);
        CHECK_OK(SkifCh_RecvComp(ch));
        qhead = (qhead + 1) % HOLD;
        qn--;
    }
    if (t_rank == 0) {
        CHECK_ERR(SkifCh_RecvComp(ch), EINVAL);
        for (int r = 0; r < size; r++) CHECK(rpos[r] == total, "from rank %d: %llu", r, rpos[r]);
        printf("order: %d ranks x %d messages in order\n", size, N);
    }
    t_finish(&ch, 1);
    return 0;
}
