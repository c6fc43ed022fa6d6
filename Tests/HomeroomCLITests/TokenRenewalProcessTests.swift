import Foundation
import HomeroomCore
import HomeroomTestSupport
import Testing
@testable import HomeroomNode

/// Token renewal through `homeroom join` against a real node (docs/PROTOCOL.md, "Token
/// renewal"): warned before its short token expires, a student renews it in the session
/// (`renew <token-or-file>`) and keeps writing past the first token's expiry; a renewal
/// for another user or role is refused.
@Suite(.serialized) struct TokenRenewalProcessTests {
    /// Keys and one node that requires tokens, with no clock leeway (an expired token is
    /// refused at once, so the test need not wait the default 30 s).
    final class TokenNode {
        let directory: String
        let node: NodeChild

        init(label: String, extra: [String] = []) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-\(label)-\(UInt32.random(in: 0...UInt32.max))").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let generated = try CLI.run(["keys", "generate", "--out", directory])
            guard generated.status == 0 else { throw NodeProcessError("keys generate: \(generated.stderr)") }
            node = try NodeChild(name: label, extra: ["--token-key", directory + "/token-signing.pub", "--token-leeway", "0"] + extra)
        }

        func token(_ user: String, _ role: String, room: String, ttl: Int = 3600) throws -> String {
            let made = try CLI.run(["token", "create", "--key", directory + "/token-signing.key", "--room", room, "--user", user,
                                    "--role", role, "--ttl", String(ttl)])
            guard made.status == 0 else { throw NodeProcessError("token create: \(made.stderr)") }
            return made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        func stop() {
            node.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    @Test func aWarnedStudentRenewsInTheSessionAndWritesPastTheFirstTokensExpiry() throws {
        let setup = try TokenNode(label: "renew-cli")
        defer { setup.stop() }
        let room = "renew-1"
        let short = try setup.token("ada", "student", room: room, ttl: 6)
        let expiry = Date().addingTimeInterval(6)
        let session = try TerminalSession(["join", "--token", short, "--node", setup.node.listen])
        #expect(session.waitFor("\(room) ada (student)> "), "\(session.plainTail)")
        // Shorter than the 30 s lead: the warning comes at once.
        #expect(session.waitFor("your join token expires in"), "no warning: \(session.plainTail)")

        // Another user's token, and a file holding a teacher's token for ada: refused.
        var mark = session.mark
        session.send("renew \(try setup.token("bob", "student", room: room))\n")
        #expect(session.waitFor("refused [token-renewal-mismatch]", since: mark), "\(session.plainTail)")
        let file = setup.directory + "/teacher.token"
        try (try setup.token("ada", "teacher", room: room) + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        mark = session.mark
        session.send("renew \(file)\n")
        #expect(session.waitFor("refused [token-renewal-mismatch]", since: mark), "\(session.plainTail)")

        // Ada's own fresh token, from a file: renewed.
        let fresh = setup.directory + "/fresh.token"
        try (try setup.token("ada", "student", room: room) + "\n").write(toFile: fresh, atomically: true, encoding: .utf8)
        mark = session.mark
        session.send("renew \(fresh)\n")
        #expect(session.waitFor("ok: token renewed", since: mark), "\(session.plainTail)")

        // Past the first token's expiry (no leeway), the same session writes on.
        Thread.sleep(until: expiry.addingTimeInterval(1.5))
        mark = session.mark
        session.send("hand up\n")
        #expect(session.waitFor("ok: your hand is up", since: mark), "\(session.plainTail)")
        #expect(!session.shown.contains("token-expired"), "\(session.plainTail)")
        session.send("quit\n")
        #expect(session.waitForExit() == 0, "\(session.plainTail)")
    }

    /// The control: the same short token, never renewed, is refused once it expires.
    @Test func anUnrenewedShortTokenEndsTheSession() throws {
        let setup = try TokenNode(label: "renew-none")
        defer { setup.stop() }
        let session = try TerminalSession(["join", "--token", try setup.token("cal", "student", room: "renew-2", ttl: 3),
                                           "--node", setup.node.listen])
        let expiry = Date().addingTimeInterval(3)
        #expect(session.waitFor("renew-2 cal (student)> "), "\(session.plainTail)")
        Thread.sleep(until: expiry.addingTimeInterval(1.5))
        let mark = session.mark
        session.send("hand up\n")
        // Refused by the node, or not sent because the link was given up: never written.
        let answered = session.waitFor("refused [token-expired]", since: mark, timeout: 5) || session.waitFor("not sent [", since: mark, timeout: 5)
        #expect(answered, "\(session.plainTail)")
        #expect(!session.waitFor("ok: your hand is up", since: mark, timeout: 0.5), "an expired token still wrote: \(session.plainTail)")
    }
}
