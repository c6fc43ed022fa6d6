import CNNG
import Synchronization

/// A tiny HTTP server on nng's own HTTP support (nng/supplemental/http): GET routes
/// answered by Swift closures. Used for /healthz and /metrics.
final class HTTPEndpoint: Sendable {
    struct Response: Sendable {
        var status: UInt16
        var contentType: String
        var body: String
    }

    typealias Route = @Sendable () -> Response

    /// The closure a handler calls, kept alive by the handler's data pointer.
    private final class RouteBox: Sendable {
        let route: Route
        init(_ route: @escaping Route) { self.route = route }
    }

    /// The nng_http_server pointer, kept as its bit pattern (0 once stopped).
    private let server: Mutex<UInt>
    let port: UInt16

    init(address: String, routes: [String: Route]) throws(NNGError) {
        var url: UnsafeMutablePointer<nng_url>?
        var status = nng_url_parse(&url, address)
        guard status == 0, let url else { throw NNGError(status, "parse the HTTP address \(address)") }
        defer { nng_url_free(url) }
        var handle: OpaquePointer?
        status = nng_http_server_hold(&handle, url)
        guard status == 0, let handle else { throw NNGError(status, "set up the HTTP server on \(address)") }
        for (path, route) in routes {
            var handler: OpaquePointer?
            status = nng_http_handler_alloc(&handler, path, { aio in HTTPEndpoint.serve(aio) })
            guard status == 0, let handler else {
                nng_http_server_release(handle)
                throw NNGError(status, "add the HTTP route \(path)")
            }
            nng_http_handler_set_method(handler, "GET")
            let box = Unmanaged.passRetained(RouteBox(route)).toOpaque()
            nng_http_handler_set_data(handler, box, { pointer in
                if let pointer { Unmanaged<RouteBox>.fromOpaque(pointer).release() }
            })
            status = nng_http_server_add_handler(handle, handler)
            guard status == 0 else {
                nng_http_handler_free(handler)
                nng_http_server_release(handle)
                throw NNGError(status, "add the HTTP route \(path)")
            }
        }
        status = nng_http_server_start(handle)
        guard status == 0 else {
            nng_http_server_release(handle)
            throw NNGError(status, "listen for HTTP on \(address)")
        }
        var bound = nng_sockaddr()
        var port: UInt16 = 0
        if nng_http_server_get_addr(handle, &bound) == 0 {
            port = UInt16(bigEndian: bound.s_in.sa_port)
        }
        self.port = port
        server = Mutex(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(handle))))
    }

    func stop() {
        let bits = server.withLock { state -> UInt in
            defer { state = 0 }
            return state
        }
        guard bits != 0, let handle = OpaquePointer(bitPattern: bits) else { return }
        nng_http_server_stop(handle)
        nng_http_server_release(handle)
    }

    deinit { stop() }

    /// The C callback: find the route's closure through the handler, answer, finish the aio.
    private static func serve(_ aio: OpaquePointer?) {
        guard let aio else { return }
        let handler = OpaquePointer(nng_aio_get_input(aio, 1))
        guard let handler, let data = nng_http_handler_get_data(handler) else {
            nng_aio_finish(aio, Int32(NNG_EINTERNAL.rawValue))
            return
        }
        let response = Unmanaged<RouteBox>.fromOpaque(data).takeUnretainedValue().route()
        var result: OpaquePointer?
        guard nng_http_res_alloc(&result) == 0, let result else {
            nng_aio_finish(aio, Int32(NNG_ENOMEM.rawValue))
            return
        }
        nng_http_res_set_status(result, response.status)
        nng_http_res_set_header(result, "Content-Type", response.contentType)
        var body = Array(response.body.utf8)
        _ = body.withUnsafeMutableBytes { buffer in nng_http_res_copy_data(result, buffer.baseAddress, buffer.count) }
        nng_aio_set_output(aio, 0, UnsafeMutableRawPointer(result))
        nng_aio_finish(aio, 0)
    }
}
