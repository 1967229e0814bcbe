/*
 * All-to-all on two ports: channel (s, p) sends M messages to every channel (d, p), itself
 * included, round-robin over destinations, while draining what arrives (a sender that gets
 * EAGAIN must keep receiving, or two ranks that fill each other's lanes would deadlock).
 * Each (source, destination) pair carries one deterministic byte stream with some
 * zero-length messages in it; every byte is checked, and partial sends are continued.
 */
#include "testutil.h"

#define M 2000
#define PORTS 2
#define MAXRANKS 64

/* Zero-length messages at multiples of 97; the last one (M - 1) is not empty. */
static size_t msg_len(int k) { return k % 97 == 0 ? 0 : 1 + (size_t)k * 13 % 300; }

struct out { int k; size_t off; unsigned long long pos; };

int main(int argc, char **argv) {
    t_init(&argc, &argv);
    int size = SkifCh_Size();
    CHECK(size >= 1 && size <= MAXRANKS, "size %d", size);
    struct SkifCh *ch[PORTS];
    for (int p = 0; p < PORTS; p++) ch[p] = t_open(p);

    unsigned long long total = 0;
    for (int k = 0; k < M; k++) total += msg_len(k);
    static struct out out[PORTS][MAXRANKS];
    static unsigned long long in_pos[PORTS][MAXRANKS];
    static long in_msgs[PORTS][MAXRANKS];
    static unsigned char buf[300];
    int sending = PORTS * size, receiving = PORTS * size, next = 0;

    while (sending > 0 || receiving > 0) {
        /* One send attempt to the next destination that still has messages. */
        for (int tries = 0; sending > 0 && tries < PORTS * size; tries++) {
            int p = next % PORTS, d = next / PORTS;
            next = (next + 1) % (PORTS * size);
            struct out *o = &out[p][d];
            if (o->k == M) continue;
            netaddr_t me = SkifCh_MyAddr(ch[p]), dst = SkifCh_Addr(d, p);
            size_t len = msg_len(o->k);
            for (size_t j = o->off; j < len; j++) buf[j] = t_byte(me, dst, o->pos + (j - o->off));
            struct iovec iov = {buf + o->off, len - o->off};
            ssize_t n = SkifCh_Send(ch[p], dst, &iov, 1);
            if (n < 0) {
                CHECK(errno == EAGAIN, "Send to %d:%d: errno %d (%s)", d, p, errno, strerror(errno));
                break;
            }
            CHECK((size_t)n <= len - o->off, "Send returned %zd of %zu", n, len - o->off);
            CHECK(n > 0 || len == 0, "Send returned 0 for %zu bytes", len - o->off);
            o->off += (size_t)n;
            o->pos += (size_t)n;
            if (o->off == len) {
                o->off = 0;
                if (++o->k == M) sending--;
            }
            break;
        }
        /* Drain both channels. */
        int got = 0;
        for (int p = 0; p < PORTS; p++) {
            netaddr_t me = SkifCh_MyAddr(ch[p]);
            for (;;) {
                struct iovec cont[SKIFCH_CONT_SIZE];
                int cnt;
                netaddr_t src;
                ssize_t len = SkifCh_RecvFrom(ch[p], cont, &cnt, &src);
                if (len < 0) {
                    CHECK(errno == EAGAIN, "RecvFrom: errno %d (%s)", errno, strerror(errno));
                    break;
                }
                got = 1;
                int s = (int)(src >> 16);
                CHECK(s < size && (int)(src & 0xffff) == p, "on port %d from %#x", p, (unsigned)src);
                CHECK(cnt >= 0 && cnt <= SKIFCH_CONT_SIZE && (cnt == 0) == (len == 0),
                      "cont_count %d for %zd bytes", cnt, len);
                unsigned long long pos = in_pos[p][s];
                for (int i = 0; i < cnt; i++) {
                    const unsigned char *b = cont[i].iov_base;
                    for (size_t j = 0; j < cont[i].iov_len; j++, pos++)
                        CHECK(b[j] == t_byte(src, me, pos), "port %d from rank %d: byte %llu", p, s, pos);
                }
                CHECK(pos - in_pos[p][s] == (unsigned long long)len, "segments vs length %zd", len);
                CHECK_OK(SkifCh_RecvComp(ch[p]));
                CHECK(pos <= total, "port %d: rank %d sent too much", p, s);
                in_pos[p][s] = pos;
                in_msgs[p][s]++;
                /* The last message is not empty, so all bytes in means all messages in;
                 * partial sends can only add messages. */
                if (pos == total) {
                    CHECK(in_msgs[p][s] >= M, "port %d from rank %d: %ld messages", p, s, in_msgs[p][s]);
                    receiving--;
                }
            }
        }
        if (!got) sched_yield();
    }
    for (int p = 0; p < PORTS; p++) {
        struct iovec cont[SKIFCH_CONT_SIZE];
        int cnt;
        CHECK_ERR(SkifCh_Recv(ch[p], cont, &cnt), EAGAIN);
    }
    if (t_rank == 0) printf("alltoall: %d ranks x %d ports x %d messages\n", size, PORTS, M);
    t_finish(ch, PORTS);
    return 0;
}
