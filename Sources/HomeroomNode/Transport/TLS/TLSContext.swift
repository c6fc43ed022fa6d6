@preconcurrency import Glibc
import COpenSSL
import Synchronization

/// Certificate files for TLS on the transport's `tls+tcp://` sockets (PEM).
public struct TLSSettings: Sendable, Hashable {
    /// This process's certificate chain and private key: needed to listen on `tls+tcp://`.
    public var certificateFile: String?
    public var keyFile: String?
    /// The certificate authority that signed the nodes this process dials: needed to dial
    /// `tls+tcp://`. A dialed node must present a certificate it signed, for the host
    /// (name or IP address) in the URL.
    public var authorityFile: String?

    public init(certificateFile: String? = nil, keyFile: String? = nil, authorityFile: String? = nil) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.authorityFile = authorityFile
    }

    public var isEmpty: Bool { certificateFile == nil && keyFile == nil && authorityFile == nil }
}

/// One OpenSSL context: the server side (certificate and key) or the client side (the
/// authority it verifies against). Made once, then shared by every connection; OpenSSL
/// allows that once it is configured, hence `@unchecked Sendable`.
final class TLSContext: @unchecked Sendable {
    enum Side: Sendable { case server, client }

    let side: Side
    private let context: OpaquePointer

    init(side: Side, settings: TLSSettings) throws(TransportError) {
        self.side = side
        ERR_clear_error()
        guard let made = SSL_CTX_new(side == .server ? TLS_server_method() : TLS_client_method()) else {
            throw TransportError(.other, "set up TLS", reason: TLSContext.openSSLErrors() ?? "OpenSSL could not make a context")
        }
        context = made
        // TLS 1.2 is the floor: nng's own tls+tcp (mbedtls 2.28, as in Debian 12 and pynng) speaks no 1.3.
        _ = homeroom_ssl_ctx_min_tls12(context)
        homeroom_ssl_ctx_no_renegotiation(context)
        if let certificate = settings.certificateFile {
            guard let key = settings.keyFile else {
                throw TransportError(.tls, "set up TLS", reason: "a certificate needs its key: give --tls-key with --tls-cert")
            }
            try Self.readable(certificate, what: "certificate (--tls-cert)")
            try Self.readable(key, what: "private key (--tls-key)")
            guard SSL_CTX_use_certificate_chain_file(context, certificate) == 1 else {
                throw TransportError(.tls, "load the TLS certificate \(certificate)", reason: Self.openSSLErrors() ?? "not a PEM certificate")
            }
            guard SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) == 1 else {
                throw TransportError(.tls, "load the TLS key \(key)", reason: Self.openSSLErrors() ?? "not a PEM private key")
            }
            guard SSL_CTX_check_private_key(context) == 1 else {
                throw TransportError(.tls, "load the TLS key \(key)", reason: "it is not the key of the certificate \(certificate)")
            }
        } else if side == .server {
            throw TransportError(.tls, "set up TLS", reason: "listening on tls+tcp:// needs a certificate and key (--tls-cert, --tls-key)")
        }
        if side == .client {
            guard let authority = settings.authorityFile else {
                throw TransportError(.tls, "set up TLS",
                                     reason: "dialing tls+tcp:// needs the authority that signed the node's certificate (--tls-ca, or HOMEROOM_TLS_CA)")
            }
            try Self.readable(authority, what: "certificate authority (--tls-ca)")
            guard SSL_CTX_load_verify_locations(context, authority, nil) == 1 else {
                throw TransportError(.tls, "load the TLS authority \(authority)", reason: Self.openSSLErrors() ?? "not a PEM certificate")
            }
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        }
    }

    deinit { SSL_CTX_free(context) }

    /// A connection's TLS state; `host` (client side) is the name or address the
    /// certificate must be for.
    func channel(host: String?) throws(TransportError) -> TLSChannel {
        ERR_clear_error()
        guard let ssl = SSL_new(context) else {
            throw TransportError(.other, "start TLS", reason: Self.openSSLErrors() ?? "OpenSSL could not make a session")
        }
        return try TLSChannel(ssl: ssl, side: side, host: host)
    }

    private static func readable(_ path: String, what: String) throws(TransportError) {
        guard access(path, R_OK) == 0 else {
            throw TransportError(.tls, "set up TLS", reason: "cannot read the \(what) \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// OpenSSL's queued errors, oldest first, as one line (nil when there are none).
    static func openSSLErrors() -> String? {
        var lines: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &text, text.count)
            let line = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // "error:0A000086:SSL routines::certificate verify failed" -> the reason.
            lines.append(line.split(separator: ":", omittingEmptySubsequences: false).last.map(String.init) ?? line)
        }
        return lines.isEmpty ? nil : lines.joined(separator: "; ")
    }
}

/// The TLS contexts of this process: one identity (certificate and key) to listen with
/// and one authority to verify the nodes it dials, as a process has one trust store.
/// Set once at start by `homeroom node` and the client commands (`configure`); a
/// `tls+tcp://` address without them is refused with what to give.
public enum TransportTLS {
    private struct Contexts: Sendable {
        var server: TLSContext?
        var client: TLSContext?
        var settings = TLSSettings()
    }

    private static let contexts = Mutex(Contexts())

    /// Loads the files now (errors name the file and what is wrong with it) and uses them
    /// for every later `tls+tcp://` listen and dial of this process.
    public static func configure(_ settings: TLSSettings) throws(TransportError) {
        let server = settings.certificateFile == nil ? nil : try TLSContext(side: .server, settings: settings)
        let client = settings.authorityFile == nil ? nil : try TLSContext(side: .client, settings: settings)
        contexts.withLock { $0 = Contexts(server: server, client: client, settings: settings) }
    }

    /// What `configure` was given last.
    public static var settings: TLSSettings { contexts.withLock { $0.settings } }

    static func server(for url: String) throws(TransportError) -> TLSContext {
        guard let server = contexts.withLock({ $0.server }) else {
            throw TransportError(.tls, "listen on \(url)", reason: "tls+tcp:// needs a certificate and key (--tls-cert and --tls-key)")
        }
        return server
    }

    static func client(for url: String) throws(TransportError) -> TLSContext {
        guard let client = contexts.withLock({ $0.client }) else {
            throw TransportError(.tls, "dial \(url)",
                                 reason: "tls+tcp:// needs the authority that signed the node's certificate (--tls-ca, or HOMEROOM_TLS_CA)")
        }
        return client
    }
}
