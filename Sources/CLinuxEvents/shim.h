// epoll and eventfd for the SP transport's event loop: Swift's Glibc module does not
// show these Linux headers.
#include <sys/epoll.h>
#include <sys/eventfd.h>

// epoll_event is packed on x86_64; reading its union through Swift is awkward, so the
// loop gets and sets the 64-bit token through these.
static inline void clinux_event_set(struct epoll_event *event, uint32_t events, uint64_t token) {
    event->events = events;
    event->data.u64 = token;
}
static inline uint64_t clinux_event_token(const struct epoll_event *event) { return event->data.u64; }
static inline uint32_t clinux_event_flags(const struct epoll_event *event) { return event->events; }

// accept4 is a GNU extension the Glibc module hides: accept a connection already
// nonblocking and close-on-exec, in one call.
#include <sys/socket.h>
extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);
static inline int clinux_accept_nonblocking(int listener) {
    return accept4(listener, 0, 0, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

// Thread names for Homeroom's own threads (seen in gdb, top -H, /proc): pthread_setname_np
// is a GNU extension the Glibc module hides without _GNU_SOURCE (glibc 2.12+).
#include <pthread.h>
extern int pthread_setname_np(pthread_t thread, const char *name);
static inline int clinux_set_current_thread_name(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}
