@preconcurrency import Glibc
import COpenSSL

/// The TLS state of one connection, over memory buffers: the loop reads ciphertext from
/// the socket into `receive`, takes plaintext from `read`, hands plaintext to `write`
/// and sends what `takeOutput` gives. No descriptor is OpenSSL's, so the loop keeps
/// owning (and closing) every one of them. Loop-confined, like its connection.
final class TLSChannel {
    enum ReadResult { case data(Int), wouldBlock, closed, failed(String) }
    enum WriteResult { case wrote(Int), wouldBlock, failed(String) }

    private let ssl: OpaquePointer
    private let input: OpaquePointer
    private let output: OpaquePointer
    private let side: TLSContext.Side
    private let host: String?
    /// The handshake is done: application bytes flow.
    private(set) var established = false
    /// A write waits for the peer (OpenSSL asked to read first): do not ask for writability.
    private(set) var writeBlocked = false

    /// Ciphertext made but not taken yet.
    var pendingOutput: Int { Int(BIO_ctrl_pending(output)) }

    init(ssl: OpaquePointer, side: TLSContext.Side, host: String?) throws(TransportError) {
        self.ssl = ssl
        self.side = side
        self.host = host
        guard let input = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw TransportError(.other, "start TLS", reason: "out of memory")
        }
        guard let output = BIO_new(BIO_s_mem()) else {
            BIO_free(input)
            SSL_free(ssl)
            throw TransportError(.other, "start TLS", reason: "out of memory")
        }
        self.input = input
        self.output = output
        SSL_set_bio(ssl, input, output) // the session owns both buffers from here
        homeroom_ssl_modes(ssl)
        if side == .client {
            if let host, !host.isEmpty {
                // Without the name check only the CA would be checked: fail rather than dial so.
                if Self.isAddressLiteral(host) {
                    guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 else {
                        throw TransportError(.tls, "start TLS", reason: "cannot check the certificate for \(host)")
                    }
                } else {
                    _ = homeroom_ssl_server_name(ssl, host)
                    guard SSL_set1_host(ssl, host) == 1 else {
                        throw TransportError(.tls, "start TLS", reason: "cannot check the certificate for \(host)")
                    }
                }
            }
            SSL_set_connect_state(ssl)
        } else {
            SSL_set_accept_state(ssl)
        }
    }

    deinit { SSL_free(ssl) }

    /// Ciphertext the socket delivered.
    func receive(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        writeBlocked = false
        // A memory buffer takes everything it is given.
        _ = BIO_write(input, base, Int32(bytes.count))
    }

    /// Moves the handshake on (the client's first flight, or answers to what arrived).
    func handshake() -> ReadResult {
        guard !established else { return .wouldBlock }
        ERR_clear_error()
        let rv = SSL_do_handshake(ssl)
        if rv == 1 { established = true; return .wouldBlock }
        return outcome(rv)
    }

    /// Plaintext that arrived, into `buffer`.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        ERR_clear_error()
        let rv = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
        if SSL_is_init_finished(ssl) == 1 { established = true }
        if rv > 0 { return .data(Int(rv)) }
        return outcome(rv)
    }

    /// Encrypts plaintext (the output is taken by `takeOutput`).
    func write(_ bytes: UnsafeRawBufferPointer) -> WriteResult {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return .wrote(0) }
        ERR_clear_error()
        let rv = SSL_write(ssl, base, Int32(min(bytes.count, 1 << 20)))
        if rv > 0 { return .wrote(Int(rv)) }
        switch outcome(rv) {
        case .failed(let why): return .failed(why)
        default:
            writeBlocked = true
            return .wouldBlock
        }
    }

    /// Ciphertext to send, appended to `sink`.
    func takeOutput(into sink: inout [UInt8]) {
        let pending = Int(BIO_ctrl_pending(output))
        guard pending > 0 else { return }
        let start = sink.count
        sink.append(contentsOf: repeatElement(0, count: pending))
        let taken = sink.withUnsafeMutableBytes { BIO_read(output, $0.baseAddress! + start, Int32(pending)) }
        sink.removeLast(pending - max(0, Int(taken)))
    }

    private func outcome(_ rv: Int32) -> ReadResult {
        switch SSL_get_error(ssl, rv) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wouldBlock
        case SSL_ERROR_ZERO_RETURN: return .closed
        default: return .failed(failureReason())
        }
    }

    /// Why the session failed, in words a user can act on.
    private func failureReason() -> String {
        let errors = TLSContext.openSSLErrors()
        let verify = SSL_get_verify_result(ssl)
        if side == .client && verify != Int(X509_V_OK) {
            let why = String(cString: X509_verify_cert_error_string(verify))
            return "the node's certificate did not verify (\(why)): it must be signed by --tls-ca and name \(host ?? "the host") (DNS or IP subject alternative name)"
        }
        let text = errors ?? "the peer broke the TLS session"
        if !established && (text.contains("wrong version number") || text.contains("packet length too long") || text.contains("http request")) {
            return side == .client ? "the address does not speak TLS (\(text)): is it a tcp:// address?" : "the peer does not speak TLS (\(text))"
        }
        return text
    }

    private static func isAddressLiteral(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
