// OpenSSL 3 (Debian's libssl-dev), for TLS on the SP transport's own sockets.
// Function-like macros Swift cannot import are wrapped as static inline functions.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

static inline int homeroom_ssl_ctx_min_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}

static inline void homeroom_ssl_ctx_no_renegotiation(SSL_CTX *ctx) {
    // A TLS 1.2 renegotiation would stall writes until the peer answers: none, either way.
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
}

static inline void homeroom_ssl_modes(SSL *ssl) {
    // The loop may retry a write from a moved buffer, and takes partial writes.
    // Idle sessions give their record buffers back.
    SSL_set_mode(ssl, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_RELEASE_BUFFERS);
}

static inline int homeroom_ssl_server_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}
