import HomeroomContext

/// What the page asks for, one JSON message each: `{"type":"action","id":7,"do":"stage","user":"bob","on":true}`.
/// Every action goes through the contexts as the logged-in user: the node decides who may
/// do what, and a refusal comes back with its code (`not-allowed`, `stage-full`, ...).
struct PageAction: Decodable {
    var id: Int
    var `do`: String
    var user: String?
    var on: Bool?
    /// camera or mic.
    var device: String?
    var amount: Int?
    var text: String?
    /// A breakout group's id (group actions; "main" or none: the main room, for a move).
    var group: String?
    /// A group's display name.
    var name: String?
    /// How many groups (random groups).
    var count: Int?
    /// The carousel's interval, or how long an invitation to the stage lasts.
    var seconds: Int?
    /// The carousel's range (all, camera-on) and order (join-order, random).
    var range: String?
    var order: String?
    /// Hand raising: a raise puts the student on stage while seats remain.
    var autoStage: Bool?

    /// Carries the action out on the pool; a `ContextError` says why not.
    func perform(on pool: ContextPool) throws(ContextError) {
        let users = pool.user, streams = pool.stream
        switch self.do {
        case "hand": try (on ?? true) ? users.handsWave() : users.handsDown()
        case "lower-hand": try users.lowerHand(of: try target())
        case "stage": try (on ?? true) ? users.addCoHost(try target()) : users.removeCoHost(try target())
        case "allow": try streams.updatePublishPrivilege(of: try target(), device: try deviceChosen(), allowed: on ?? true)
        case "device": try (on ?? true) ? streams.openLocalDevice(try deviceChosen()) : streams.closeLocalDevice(try deviceChosen())
        case "reward": try users.reward(try target(), amount: amount ?? 1)
        case "kick": try users.kickOut(try target())
        case "mute": try pool.message.muteChat(of: try target(), muted: on ?? true)
        case "mute-all-mics": try streams.muteAllMicrophones()
        case "room-mute": try streams.muteRoom(try deviceChosen(), muted: on ?? true)
        case "hand-raising": try users.allowHandsUp(on ?? true, autoStage: autoStage ?? false)
        case "board": try users.setBoard(try target(), granted: on ?? true)
        case "invite":
            if let seconds {
                guard let duration = UInt32(exactly: seconds) else { throw .invalidArgument("an invitation lasts 5 to 600 seconds") }
                try users.inviteToStage(try target(), seconds: duration)
            } else {
                try users.inviteToStage(try target())
            }
        case "invitation-accept": try users.acceptInvitation()
        case "invitation-decline": try users.declineInvitation()
        case "chat": try pool.message.sendRoomMessage(try typedText())
        case "whisper": try pool.message.sendPeerMessage(to: try target(), try typedText())
        case "class-start": try pool.room.startClass()
        case "class-end": try pool.room.endClass()
        case "carousel-start", "carousel-stop": try performCarousel(on: streams)
        case let name where name.hasPrefix("group-"):
            // Before any group room is visited: a student's broadcast would join each one to be refused.
            guard pool.config.role == .teacher || pool.config.role == .assistant else {
                throw ContextError(code: ContextError.notAllowed, message: "breakout groups are the teacher's and the assistant's to run")
            }
            try performGroup(on: pool.group)
        default:
            throw ContextError(code: ContextError.invalidArgument, message: "unknown action '\(self.do)'")
        }
    }

    func target() throws(ContextError) -> UserID {
        guard let user, !user.isEmpty, user.utf8.count <= 128 else { throw .invalidArgument("this action needs a user") }
        return user
    }

    private func typedText() throws(ContextError) -> String {
        guard let text, !text.isEmpty else { throw .invalidArgument("type a message first") }
        return text
    }

    private func deviceChosen() throws(ContextError) -> Device {
        switch device {
        case "camera": return .camera
        case "mic", "microphone": return .microphone
        default: throw .invalidArgument("device is camera or mic")
        }
    }
}

extension ContextError {
    static func invalidArgument(_ message: String) -> ContextError { ContextError(code: ContextError.invalidArgument, message: message) }
}
