#include <nng/nng.h>
#include <nng/protocol/pubsub0/pub.h>
#include <nng/protocol/pubsub0/sub.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/supplemental/util/platform.h>
#include <nng/supplemental/http/http.h>

// Thread names for the transport's dedicated threads (seen in gdb, top -H, /proc).
// pthread_setname_np is a GNU extension that Swift's Glibc module does not show
// without _GNU_SOURCE, so it is declared here (glibc 2.12+) behind a wrapper.
#include <pthread.h>
extern int pthread_setname_np(pthread_t thread, const char *name);
static inline int cnng_set_current_thread_name(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}
