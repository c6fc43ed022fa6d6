import HomeroomTestSupport
import Foundation
import Testing

/// With a token, the CLI is who the token says: its room, user and role are the
/// defaults, and a flag that disagrees is refused before anything is sent.
@Suite(.serialized) struct TokenIdentityTests {
    @Test func theTokenSaysTheRoomUserAndRoleAndDisagreeingFlagsAreRefused() throws {
        let keys = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-token-cli-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: keys) }
        #expect(try CLI.run(["keys", "generate", "--out", keys]).status == 0)
        let node = try NodeChild(name: "token-cli", extra: ["--token-key", keys + "/token-signing.pub"])
        defer { node.stop() }
        func token(_ user: String, _ role: String, room: String = "math-101") throws -> String {
            let made = try CLI.run(["token", "create", "--key", keys + "/token-signing.key", "--room", room, "--user", user, "--role", role])
            #expect(made.status == 0, "token create failed: \(made.stderr)")
            return made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let tina = try token("tina", "teacher"), bob = try token("bob", "student")
        let at = ["--node", node.listen]

        // No --room, --user or --as: all three come from the token.
        let hand = try CLI.run(["hand", "up", "--token", bob] + at)
        #expect(hand.status == 0, "bob's hand: \(hand.stderr)")
        let reward = try CLI.run(["reward", "bob", "--token", tina] + at)
        #expect(reward.status == 0, "tina's reward: \(reward.stderr)")
        let roster = try CLI.run(["roster", "--json", "--token", tina] + at)
        #expect(roster.status == 0, "roster: \(roster.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(roster.stdout.utf8)) as? [String: Any])
        let students = json["students"] as? [[String: Any]] ?? []
        #expect(students.first { $0["user"] as? String == "bob" }?["rewards"] as? Int == 1)
        #expect(json["hands"] as? [String] == ["bob"])
        #expect(!roster.stdout.contains("\"teacher\":{\"user\":\"teacher\""), "no user named after the role")
        // The same flags as the token's are fine.
        #expect(try CLI.run(["roster", "--json", "--token", tina, "--user", "tina", "--as", "teacher", "--room", "math-101"] + at).status == 0)

        // Flags that disagree are refused with what to do, before anything is sent (exit 64).
        let cases: [([String], String)] = [
            (["--user", "ada"], "the token is for user tina, not ada"),
            (["--as", "student"], "the token is for a teacher, not a student"),
            (["--room", "art-7"], "the token is for room math-101, not art-7"),
        ]
        for (flags, message) in cases {
            let refused = try CLI.run(["roster", "--token", tina] + flags + at)
            #expect(refused.status == 64 && refused.stderr.contains(message), "\(flags): \(refused.status) \(refused.stderr)")
        }
        let malformed = try CLI.run(["roster", "--token", "not-a-token"] + at)
        #expect(malformed.status == 64 && malformed.stderr.contains("not a Homeroom join token"), "\(malformed.stderr)")
        // A token for every room needs --room.
        let everywhere = try token("tina", "teacher", room: "*")
        let noRoom = try CLI.run(["roster", "--token", everywhere] + at)
        #expect(noRoom.status == 64 && noRoom.stderr.contains("the token is for every room"), "\(noRoom.stderr)")
        #expect(try CLI.run(["roster", "--token", everywhere, "--room", "math-101"] + at).status == 0)
    }
}
