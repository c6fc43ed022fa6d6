import Testing
import HomeroomContext
import HomeroomNode

/// `ClassroomConfig(token:)`: a browser's login says who it is with a join token alone.
@Suite struct TokenLoginTests {
    static let keys = SigningKeys.generate()

    static func token(room: String, user: String = "ann", role: Role = .student) -> String {
        JoinToken.create(TokenClaims(app: "homeroom", room: room, user: user, role: role, issuedAt: 0, expiresAt: 3_600), keys: keys)
    }

    @Test func theTokenSaysWhoAndWhere() throws {
        let token = Self.token(room: "maths", user: "ada", role: .teacher)
        let config = try ClassroomConfig(token: token, nodes: ["tcp://127.0.0.1:7100"])
        #expect(config.room == "maths" && config.user == "ada" && config.role == .teacher && config.token == token)
        // Naming the token's own room is fine; another room is refused.
        #expect(try ClassroomConfig(token: token, room: "maths", nodes: ["tcp://127.0.0.1:7100"]).room == "maths")
        #expect(throws: ContextError.self) { try ClassroomConfig(token: token, room: "history", nodes: ["tcp://127.0.0.1:7100"]) }
    }

    @Test func aTokenOfEveryRoomNeedsTheRoom() throws {
        let token = Self.token(room: "*")
        #expect(throws: ContextError.self) { try ClassroomConfig(token: token, nodes: ["tcp://127.0.0.1:7100"]) }
        #expect(try ClassroomConfig(token: token, room: "maths", nodes: ["tcp://127.0.0.1:7100"]).room == "maths")
    }

    @Test func notATokenSaysWhatToPaste() {
        do {
            _ = try ClassroomConfig(token: "hello", nodes: ["tcp://127.0.0.1:7100"])
            Issue.record("a string that is not a token was taken")
        } catch {
            #expect(error.code == ContextError.invalidArgument && error.message.contains("homeroom token create"))
        }
    }
}
