import Testing
@testable import HomeroomNode

/// Dials by host name look the name up off the loop thread (`SPResolver`); numeric
/// addresses and ipc paths need no lookup. Names here resolve from /etc/hosts only.
@Suite struct SPResolverTests {
    @Test("only a tcp host given by name needs a lookup")
    func whichAddressesNeedALookup() throws {
        for url in ["tcp://127.0.0.1:7100", "tcp://[::1]:7100", "ipc:///tmp/homeroom.sock", "tcp://*:7100"] {
            #expect(try !SPAddress(url).needsNameLookup, "\(url)")
        }
        for url in ["tcp://localhost:7100", "tls+tcp://node1.example.org:7100"] {
            #expect(try SPAddress(url).needsNameLookup, "\(url)")
        }
    }

    @Test("a dial to localhost is looked up in the background and connects")
    func aDialByNameConnects() async throws {
        let replier = try SPReplier()
        let requester = try SPRequester()
        defer { requester.close(); replier.close() }
        let bound = try replier.listen("tcp://localhost:0")
        try replier.serve(workers: 1) { request in request.reversed() }
        let port = try #require(bound.split(separator: ":").last)
        try requester.dial("tcp://localhost:\(port)")
        let reply = try await requester.request(Array("abc".utf8), timeout: .seconds(10))
        #expect(reply == Array("cba".utf8))
    }
}
