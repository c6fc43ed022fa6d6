import HomeroomContext
import HomeroomNode

/// Whose properties a `prop` action reads or writes.
enum PropertyOwner: Equatable {
    case room
    case user(UserID)
}

/// Everything the contexts offer, as one grammar shared by `homeroom join` (a line)
/// and the one-shot subcommands (`homeroom stage add bob --room ...`).
enum Action: Equatable {
    case stage(on: Bool, users: [UserID])
    case stageClear
    case board(UserID, granted: Bool)
    case device(Device, on: Bool)
    case privilege(Device, UserID, allowed: Bool)
    case muteAll
    case reward([UserID], amount: Int)
    case kick(UserID)
    case ban(UserID)
    case hand(up: Bool)
    case lowerHand(UserID)
    case classStart
    case classEnd
    case schedule(minutes: Int, startInMinutes: Int?)
    case roomName(String)
    case roomType(RoomType)
    case stageLimit(Int)
    case handLimit(Int)
    case propertySet(PropertyOwner, key: String, value: String)
    case propertyUnset(PropertyOwner, key: String)
    case propertyList(PropertyOwner)
    case rename(String)

    /// The verbs, as subcommands and as the first word of a line.
    static let verbs = ["stage", "board", "camera", "mic", "mute-all", "reward", "kick", "ban", "hand", "class", "schedule",
                        "room", "prop", "name"]

    /// The theme section whose component an action belongs to (a disabled component refuses it).
    var component: String? {
        switch self {
        case .stage, .stageClear: return "stage"
        case .hand, .lowerHand: return "hands"
        default: return nil
        }
    }

    /// Verbs acting on the local user only: their one-shot default role is student.
    static func actsOnSelf(_ words: [String]) -> Bool {
        guard let verb = words.first else { return false }
        switch verb {
        case "hand": return words.count == 2
        case "camera", "mic": return words.count == 2 && (words[1] == "on" || words[1] == "off")
        case "name": return true
        default: return false
        }
    }

    static let grammar = """
          stage add|remove <user>...     Put users on stage, or take them off (teacher, assistant).
          stage clear                    Take everyone off the stage and out of its waiting list.
          board grant|revoke <user>      Whiteboard authorization.
          camera on|off                  Your own camera (mic on|off: your microphone).
          camera allow|deny <user>       Let a user publish the camera, or stop it (mic allow|deny: the microphone).
          mute-all                       Turn off every microphone privilege granted so far.
          reward <user>... [<n>]         Add n rewards (1-1000, default 1; or --amount <n>) to each user.
          kick <user>                    Kick a user out once (they may join again).
          ban <user>                     Kick a user out for good.
          hand up|down                   Raise or lower your own hand.
          hand down <user>               Lower someone's hand (teacher, assistant).
          class start|end                Start or end the class (it only moves forward).
          schedule <minutes> [in <minutes>]   The class length, and its start from now.
          room name <text>               Rename the room.
          room type <type>               one-to-one, small-classroom or lecture-hall.
          room stage-limit|hand-limit <n>
          prop room|me|<user>            List properties of the room, of you, or of a user;
          prop <owner> set <key> <value>   set one (value: the rest of the line),
          prop <owner> unset <key>         or delete one.
          name <text>                    Your display name.
        """

    /// Parses the words of one action; `local` is who "me" is.
    static func parse(_ input: [String], local: UserID) throws(ActionError) -> Action {
        var words = input
        var amount: Int?
        if let index = words.firstIndex(of: "--amount") {
            guard index + 1 < words.count, let value = Int(words[index + 1]) else {
                throw ActionError("--amount needs a whole number, as in: reward bob --amount 3")
            }
            amount = value
            words.removeSubrange(index...(index + 1))
        }
        guard let verb = words.first else { throw ActionError("no action given") }
        let rest = Array(words.dropFirst())
        func users(_ from: ArraySlice<String>, _ example: String) throws(ActionError) -> [UserID] {
            guard !from.isEmpty else { throw ActionError("name a user, as in: \(example)") }
            return from.map { $0 == "me" ? local : $0 }
        }
        func one(_ from: ArraySlice<String>, _ example: String) throws(ActionError) -> UserID {
            let list = try users(from, example)
            guard list.count == 1 else { throw ActionError("name one user, as in: \(example)") }
            return list[0]
        }
        func number(_ text: String, _ range: ClosedRange<Int>, _ what: String) throws(ActionError) -> Int {
            guard let value = Int(text), range.contains(value) else {
                throw ActionError("\(what) is a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
            }
            return value
        }

        switch verb {
        case "stage":
            switch rest.first {
            case "add", "on": return .stage(on: true, users: try users(rest.dropFirst(), "stage add bob"))
            case "remove", "off": return .stage(on: false, users: try users(rest.dropFirst(), "stage remove bob"))
            case "clear" where rest.count == 1: return .stageClear
            default: throw ActionError("use: stage add <user>..., stage remove <user>... or stage clear")
            }
        case "board":
            switch rest.first {
            case "grant": return .board(try one(rest.dropFirst(), "board grant bob"), granted: true)
            case "revoke": return .board(try one(rest.dropFirst(), "board revoke bob"), granted: false)
            default: throw ActionError("use: board grant <user> or board revoke <user>")
            }
        case "camera", "mic":
            let device: Device = verb == "camera" ? .camera : .microphone
            switch rest.first {
            case "on" where rest.count == 1: return .device(device, on: true)
            case "off" where rest.count == 1: return .device(device, on: false)
            case "allow": return .privilege(device, try one(rest.dropFirst(), "\(verb) allow bob"), allowed: true)
            case "deny": return .privilege(device, try one(rest.dropFirst(), "\(verb) deny bob"), allowed: false)
            default: throw ActionError("use: \(verb) on, \(verb) off (yours), \(verb) allow <user> or \(verb) deny <user>")
            }
        case "mute-all":
            guard rest.isEmpty else { throw ActionError("mute-all takes nothing more") }
            return .muteAll
        case "reward":
            var names = rest[...]
            if amount == nil, names.count > 1, let last = names.last, let value = Int(last) {
                amount = value
                names = names.dropLast()
            }
            let value = amount ?? 1
            guard (1...1_000).contains(value) else { throw ActionError("a reward is 1 to 1000, not \(value)") }
            return .reward(try users(names, "reward bob 2"), amount: value)
        case "kick": return .kick(try one(rest[...], "kick bob"))
        case "ban": return .ban(try one(rest[...], "ban bob"))
        case "hand":
            switch (rest.first, rest.count) {
            case ("up", 1): return .hand(up: true)
            case ("down", 1): return .hand(up: false)
            case ("down", 2): return rest[1] == "me" || rest[1] == local ? .hand(up: false) : .lowerHand(rest[1])
            default: throw ActionError("use: hand up, hand down (yours) or hand down <user>")
            }
        case "class":
            switch (rest.first, rest.count) {
            case ("start", 1): return .classStart
            case ("end", 1): return .classEnd
            default: throw ActionError("use: class start or class end")
            }
        case "schedule":
            guard let first = rest.first else { throw ActionError("use: schedule <minutes> [in <minutes>], as in: schedule 45 in 5") }
            let minutes = try number(first, 1...1_440, "the class length in minutes")
            if rest.count == 1 { return .schedule(minutes: minutes, startInMinutes: nil) }
            guard rest.count == 3, rest[1] == "in" else { throw ActionError("use: schedule <minutes> [in <minutes>], as in: schedule 45 in 5") }
            return .schedule(minutes: minutes, startInMinutes: try number(rest[2], 0...100_000, "the start, in minutes from now,"))
        case "room":
            guard let field = rest.first, rest.count >= 2 else {
                throw ActionError("use: room name <text>, room type <type>, room stage-limit <n> or room hand-limit <n>")
            }
            let value = rest.dropFirst().joined(separator: " ")
            switch field {
            case "name": return .roomName(value)
            case "type":
                guard let type = RoomType(name: value) else { throw ActionError("unknown room type '\(value)': use one-to-one, small-classroom or lecture-hall") }
                return .roomType(type)
            case "stage-limit": return .stageLimit(try number(value, 0...100_000, "a stage limit"))
            case "hand-limit": return .handLimit(try number(value, 0...100_000, "a hand limit"))
            default: throw ActionError("unknown room field '\(field)': use name, type, stage-limit or hand-limit")
            }
        case "prop", "props":
            guard let ownerWord = rest.first else { throw ActionError("use: prop room|me|<user> [set <key> <value> | unset <key>]") }
            let owner: PropertyOwner = ownerWord == "room" ? .room : .user(ownerWord == "me" ? local : ownerWord)
            switch (rest.count > 1 ? rest[1] : nil, rest.count) {
            case (nil, _), ("list", 2): return .propertyList(owner)
            case ("set", let count) where count >= 4:
                return .propertySet(owner, key: rest[2], value: rest.dropFirst(3).joined(separator: " "))
            case ("unset", 3): return .propertyUnset(owner, key: rest[2])
            default: throw ActionError("use: prop \(ownerWord) set <key> <value>, prop \(ownerWord) unset <key> or prop \(ownerWord)")
            }
        case "name":
            guard !rest.isEmpty else { throw ActionError("use: name <text>") }
            return .rename(rest.joined(separator: " "))
        default:
            throw ActionError("unknown action '\(verb)'")
        }
    }
}

struct ActionError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// What an action did: a sentence for people, fields for `--json`.
struct ActionOutcome {
    var text: String
    var fields: [(String, JSONText)] = []
}

extension Action {
    /// Performs the action through the contexts; refusals come back as coded `ContextError`s.
    func perform(on pool: ContextPool) throws(ContextError) -> ActionOutcome {
        let local = pool.user.localUser.id
        func name(_ user: UserID) -> String { pool.user.userInfo(user)?.displayName ?? user }
        switch self {
        case let .stage(on, users):
            for user in users { try on ? pool.user.addCoHost(user) : pool.user.removeCoHost(user) }
            let waiting = on ? users.filter { pool.user.row($0)?.waitingForStage == true } : []
            var text = users.map(name).joined(separator: ", ") + (on ? " on stage" : " off stage")
            if !waiting.isEmpty { text += " (waiting for a seat: " + waiting.map(name).joined(separator: ", ") + ")" }
            return ActionOutcome(text: text, fields: [("users", .array(users.map { .string($0) }))])
        case .stageClear:
            let count = try pool.user.removeAllCoHosts()
            return ActionOutcome(text: "stage cleared (\(count) taken off)", fields: [("removed", .int(Int64(count)))])
        case let .board(user, granted):
            try pool.user.setBoard(user, granted: granted)
            return ActionOutcome(text: "whiteboard \(granted ? "granted to" : "revoked from") \(name(user))")
        case let .device(device, on):
            try on ? pool.stream.openLocalDevice(device) : pool.stream.closeLocalDevice(device)
            let state = pool.stream.streamState(of: local, device: device)
            return ActionOutcome(text: "your \(device) is \(on ? "on" : "off") (\(Self.describe(state)))",
                                 fields: [("state", .string(state.description))])
        case let .privilege(device, user, allowed):
            try pool.stream.updatePublishPrivilege(of: user, device: device, allowed: allowed)
            let state = pool.stream.streamState(of: user, device: device)
            return ActionOutcome(text: "\(name(user)) may \(allowed ? "" : "no longer ")publish the \(device) (\(Self.describe(state)))",
                                 fields: [("state", .string(state.description))])
        case .muteAll:
            try pool.stream.muteAllMicrophones()
            return ActionOutcome(text: "every microphone privilege is off")
        case let .reward(users, amount):
            try pool.user.reward(users, amount: amount)
            let totals = users.map { (user: $0, total: pool.user.row($0)?.rewards ?? 0) }
            return ActionOutcome(text: totals.map { "\(name($0.user)) +\(amount) (now \($0.total))" }.joined(separator: ", "),
                                 fields: [("rewards", .object(totals.map { ($0.user, .int($0.total)) }))])
        case let .kick(user):
            try pool.user.kickOut(user, forever: false)
            return ActionOutcome(text: "\(name(user)) was kicked out (may join again)")
        case let .ban(user):
            try pool.user.kickOut(user, forever: true)
            return ActionOutcome(text: "\(name(user)) is banned from the room")
        case let .hand(up):
            try up ? pool.user.handsWave() : pool.user.handsDown()
            return ActionOutcome(text: "your hand is \(up ? "up" : "down")")
        case let .lowerHand(user):
            try pool.user.lowerHand(of: user)
            return ActionOutcome(text: "\(name(user))'s hand is down")
        case .classStart:
            try pool.room.startClass()
            return ActionOutcome(text: "class started")
        case .classEnd:
            try pool.room.endClass()
            return ActionOutcome(text: "class ended")
        case let .schedule(minutes, startIn):
            var schedule = pool.room.classInfo.schedule
            schedule.durationSeconds = UInt32(minutes * 60)
            if let startIn { schedule.startMillis = WallClock.nowMillis() + UInt64(startIn) * 60_000 }
            try pool.room.setSchedule(schedule)
            return ActionOutcome(text: "the class lasts \(minutes) minutes" + (startIn.map { ", starting in \($0) minutes" } ?? ""))
        case let .roomName(text):
            try pool.room.setName(text)
            return ActionOutcome(text: "the room is now called \(text)")
        case let .roomType(type):
            try pool.room.setType(type)
            return ActionOutcome(text: "the room is now a \(type)")
        case let .stageLimit(limit):
            try pool.room.setStageLimit(limit)
            return ActionOutcome(text: "the stage now has \(limit) seats")
        case let .handLimit(limit):
            try pool.room.setHandLimit(limit)
            return ActionOutcome(text: "up to \(limit) hands may be raised")
        case let .propertySet(owner, key, value):
            switch owner {
            case .room: try pool.room.updateProperties([key: value])
            case let .user(user): try pool.user.updateProperties(of: user, [key: value])
            }
            return ActionOutcome(text: "\(Self.describe(owner, name)) \(key) = \(value)")
        case let .propertyUnset(owner, key):
            switch owner {
            case .room: try pool.room.deleteProperties([key])
            case let .user(user): try pool.user.deleteProperties(of: user, keys: [key])
            }
            return ActionOutcome(text: "\(Self.describe(owner, name)) \(key) deleted")
        case let .propertyList(owner):
            let properties: [String: String]
            switch owner {
            case .room: properties = pool.room.properties
            case let .user(user): properties = pool.user.properties(of: user)
            }
            let keys = properties.keys.sorted()
            let text = keys.isEmpty ? "\(Self.describe(owner, name)): no properties"
                : keys.map { "\(Self.describe(owner, name)) \($0) = \(properties[$0]!)" }.joined(separator: "\n")
            return ActionOutcome(text: text, fields: [("properties", .object(keys.map { ($0, .string(properties[$0]!)) }))])
        case let .rename(text):
            try pool.user.updateName(text)
            return ActionOutcome(text: "you are now called \(text)")
        }
    }

    static func describe(_ owner: PropertyOwner, _ name: (UserID) -> String) -> String {
        switch owner {
        case .room: return "room"
        case let .user(user): return name(user)
        }
    }

    /// The four states in words.
    static func describe(_ state: StreamState) -> String {
        switch state {
        case .inoperable: return "not on stage"
        case .deviceOff: return "on stage, device off"
        case .privilegeOff: return "on stage, device on, not allowed to publish"
        case .live: return "live"
        }
    }
}
